package restore

import (
	"errors"
	"fmt"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// EditChecker is implemented by a store that accepts only some edits of a
// line (OpenClaw's SQLite store: its host derives a search index and
// projections from the rows, see docs/ARCHITECTURE.md, "Host safety").
// CheckEdit returns nil when Rewrite would accept the line old becoming
// new, else an error that says which difference it refuses and why; a nil
// new asks whether Rewrite would remove the line (an edit with Remove). A
// store that does not implement it accepts every edit (the JSONL store).
//
// A restore asks it value by value before it puts a value back, so that
// it writes every value the store accepts and reports the others
// (Refusal) instead of failing the whole rewrite.
type EditChecker interface {
	CheckEdit(ref bs.SessionRef, old, new []byte) error
}

// ProblemRefused: the placeholder's value is stored and intact, but the
// store does not accept it back in the transcript (EditChecker); the
// value stays in the side store, and AllResult.Refused says how to get it.
const ProblemRefused = "refused_by_store"

// Refusal is a value a restore did not put back because the store does
// not accept it in the transcript. The value is intact in the side store.
type Refusal struct {
	// EntryID is the entry and Key the value's JSON Pointer in it.
	EntryID string `json:"entry_id"`
	Key     string `json:"key"`
	// Line is the transcript line holding the entry.
	Line int `json:"line"`
	// Reason is the store's reason.
	Reason string `json:"reason"`
	// How says how to get the value without writing it back.
	How string `json:"how"`
}

// String returns "<entry> <key> (line N): <reason>; <how>".
func (f Refusal) String() string {
	return fmt.Sprintf("%s %s (line %d): %s; %s", f.EntryID, f.Key, f.Line, f.Reason, f.How)
}

// refusedHow says how to get a value the store does not accept back.
func refusedHow(session, entryID, key string, v extract.StoredValue) string {
	if v.Trigger == TriggerRedaction {
		return fmt.Sprintf("the redacted value stays in the side record of entry %s; the transcript keeps its stub", entryID)
	}
	return fmt.Sprintf("brainsurgeon restore %s %s --keys %s prints it without writing it back (the agent: purge_control restore %s); the value stays in the side store",
		session, entryID, key, entryID)
}

// refusedReason shortens the store's error for a report: the sentinel's
// own text is left off.
func refusedReason(err error) string {
	s := err.Error()
	for _, sentinel := range []error{bs.ErrUnsupported, bs.ErrInvalid} {
		if errors.Is(err, sentinel) {
			s = strings.TrimSuffix(s, ": "+sentinel.Error())
		}
	}
	return s
}

// accepts reports whether the store takes the line le with the value at
// ptr replaced by with: nil when it does (or cannot tell), else its
// reason. The line's edits so far are part of what is asked, so the
// values accepted one by one are accepted together.
func (p *planner) accepts(le *lineEdit, ptr string, with []byte) error {
	ck, ok := p.r.Store.(EditChecker)
	if !ok {
		return nil
	}
	sp, err := jsonedit.Replace(le.cur, ptr, with)
	if err != nil {
		return nil // the replace fails the same way and says so
	}
	return ck.CheckEdit(p.ref, le.orig, jsonedit.Apply(le.cur, sp))
}

// refuse records that the store does not accept v back in le (once per
// line and pointer).
func (p *planner) refuse(le *lineEdit, v extract.StoredValue, err error) {
	k := fmt.Sprintf("%d %s", le.line, v.Path)
	if p.refusedAt == nil {
		p.refusedAt = map[string]bool{}
	}
	if p.refusedAt[k] {
		return
	}
	p.refusedAt[k] = true
	p.refused = append(p.refused, Refusal{EntryID: le.id, Key: v.Path, Line: le.line,
		Reason: refusedReason(err), How: refusedHow(p.r.refName(p.ref), le.id, v.Path, v)})
}

// refusal returns the refusal of the value at ptr of line, if any.
func (p *planner) refusal(line int, ptr string) (Refusal, bool) {
	for _, f := range p.refused {
		if f.Line == line && f.Key == ptr {
			return f, true
		}
	}
	return Refusal{}, false
}
