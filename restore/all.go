package restore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// AllResult reports a RestoreAll.
type AllResult struct {
	Session string `json:"session"`
	// PristineMode is the pristine argument: bookkeeping and redactions
	// were undone too.
	PristineMode bool `json:"pristine_mode"`
	// Pristine is true when nothing of BrainSurgeon's remains in the
	// transcript after the call: no placeholder, no journaled bookkeeping
	// member ("_restored", "_redacted", "_extractable" set by
	// SetExtractable) and no redaction stub (Remaining is all zero). A
	// session that was never pruned is pristine whatever the mode.
	Pristine bool `json:"pristine"`
	// Remaining counts what of BrainSurgeon's is left in the transcript.
	Remaining Remaining `json:"remaining"`
	// Entries counts the entries changed; Values the extracted values put
	// back and Bytes their size.
	Entries int   `json:"entries"`
	Values  int   `json:"values"`
	Bytes   int64 `json:"bytes"`
	// Redactions counts the redacted values put back, Bookkeeping the
	// bookkeeping members removed or reset (pristine only).
	Redactions  int `json:"redactions_undone"`
	Bookkeeping int `json:"bookkeeping_undone"`
	// ParentsUndone counts the entries a repair re-parented whose
	// previous "parentId" a pristine restore put back.
	ParentsUndone int `json:"parents_undone"`
	// LinesRemoved counts the lines a repair inserted that a pristine
	// restore removed.
	LinesRemoved int `json:"lines_removed"`
	// Lost lists the placeholders that could not be restored, one per
	// placeholder, in file order: the same list, with the same kinds, as
	// Verify's Problems; a pristine restore adds the lines a repair
	// inserted that it kept (ProblemInsertedChanged or
	// ProblemInsertedHasChildren, Path ""), and a value the store does not
	// accept back is listed as ProblemRefused (see Refused). Never nil.
	Lost []Problem `json:"lost"`
	// Refused lists the values the store does not accept back in the
	// transcript (restore.EditChecker: OpenClaw's SQLite store refuses
	// edits its search index or projections would notice), each with the
	// store's reason and how to get the value without writing it back.
	// Their placeholders are in Lost too (ProblemRefused); a redaction
	// the store refuses to undo keeps its stub. Everything else was
	// restored. A pristine restore lists here too the journaled changes
	// the store does not accept undone (a repair's "parentId", a line a
	// repair inserted, Key ""): they stay, and Remaining.RefusedUndos
	// counts them. Never nil.
	Refused []Refusal `json:"refused"`
	// Warnings are what else went wrong on the way (a journal that could
	// not be undone, a member that could not be set).
	Warnings []string `json:"warnings,omitempty"`
	// Applied is true when the transcript was rewritten.
	Applied bool `json:"applied"`
}

// Remaining counts what of BrainSurgeon's is left in a transcript after a
// RestoreAll.
type Remaining struct {
	// Placeholders still in the transcript (len(AllResult.Lost)).
	Placeholders int `json:"placeholders"`
	// Refused counts the placeholders (among Placeholders) whose value is
	// intact but the store does not accept back (AllResult.Refused).
	Refused int `json:"refused"`
	// Bookkeeping members recorded in a journal that still differ from
	// their state before BrainSurgeon ("_restored" marks, "_redacted",
	// "_extractable"): a restore without pristine leaves its "_restored"
	// marks.
	Bookkeeping int `json:"bookkeeping"`
	// Redactions counts redaction stubs still in place.
	Redactions int `json:"redactions"`
	// UnreadableRecords counts entries whose side record cannot be read
	// (what it records is unknown).
	UnreadableRecords int `json:"unreadable_records"`
	// Reparented counts the entries a repair (ApplyRepair) gave a new
	// "parentId" that still have it: a restore without pristine leaves
	// repairs alone, and a pristine one keeps it when the store refuses
	// the change (listed in AllResult.Refused, counted in RefusedUndos).
	Reparented int `json:"reparented"`
	// Inserted counts the lines a repair inserted (ApplyRepair) that
	// are still in the transcript: a restore without pristine leaves
	// repairs alone, and a pristine one keeps an inserted line that
	// changed since or that an entry which stays has as its parent
	// (listed in AllResult.Lost as ProblemInsertedChanged or
	// ProblemInsertedHasChildren, not counted in Placeholders), or whose
	// removal the store refuses (listed in AllResult.Refused, counted in
	// RefusedUndos).
	Inserted int `json:"inserted_lines"`
	// RefusedUndos counts, among Bookkeeping, Reparented and Inserted,
	// the journaled changes a pristine restore did not undo because the
	// store refuses them (OpenClaw's SQLite store takes no changed
	// "parentId" and removes no row): each is listed in AllResult.Refused
	// with Key the member's pointer ("" for a whole inserted line).
	RefusedUndos int `json:"refused_undos"`
	// SourceValues counts the placeholders (among Placeholders) of tool
	// results stored at the source ("[[extracted-tc-<toolCallId>]]"):
	// the host wrote those placeholders, there is no original line to put
	// back, so RestoreAll leaves them (ProblemSourceKept).
	SourceValues int `json:"source_values"`
}

// ProblemSourceKept: the placeholder of a tool result stored at the
// source; RestoreAll does not write such a value back (the host wrote the
// placeholder itself), purge_control restore tc-<toolCallId> returns it.
const ProblemSourceKept = "source_not_written_back"

// None reports whether nothing remains.
func (r Remaining) None() bool { return r == Remaining{} }

// maxUndoPasses bounds the passes of a pristine restore over one line: a
// value can hide another (a redaction stub that was itself extracted).
const maxUndoPasses = 8

// RestoreAll restores every extracted value of every entry of the session
// in one rewrite. Without pristine it sets "_restored" on each entry it
// changes, like Restore (without redaction). With pristine it also puts
// back what redactions replaced and undoes every bookkeeping member
// recorded in the side records' journals ("_restored", "_redacted",
// "_extractable" set by SetExtractable) and every repair (ApplyRepair:
// a re-parented entry gets its "parentId" back, an inserted line is
// removed while its bytes are still the journaled ones and no entry that
// stays names it as its parent, else it is kept and reported in Lost as
// ProblemInsertedChanged or ProblemInsertedHasChildren), so that the transcript
// is byte-identical to what it was before BrainSurgeon touched it; the
// journals and redactions are then cleared (but for the journal of an
// inserted line that was kept) and the session's queued write-backs
// dropped. Side files are kept. Without pristine, repairs are left as
// they are: they are not extractions.
//
// A value the store does not accept back (restore.EditChecker: OpenClaw's
// SQLite store refuses an edit its search index or projections would
// notice, such as the text of a user message extracted before the session
// was imported) stays a placeholder and is listed in Refused with the
// reason and how to get it; every other value is still restored, in the
// same rewrite, and the counts say exactly what was written. So with a
// repair the store does not accept undone (a changed "parentId", a line to
// remove): it stays, is listed in Refused, and the rest is undone.
//
// RestoreAll is not queued: a busy session gives an error wrapping
// ErrBusy (or ErrChanged), and nothing is written.
func (r *Restorer) RestoreAll(ctx context.Context, ref bs.SessionRef, pristine bool) (*AllResult, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	res := &AllResult{Session: ref.String(), PristineMode: pristine, Lost: []Problem{}, Refused: []Refusal{}}
	if err := r.Store.CheckIdle(ctx, ref); err != nil {
		return nil, fmt.Errorf("restore all of %s: %w", ref, err)
	}
	mu := r.lock(ref)
	mu.Lock()
	defer mu.Unlock()
	snap, err := r.scan(ctx, ref, scanFilter{all: true})
	if err != nil {
		return nil, err
	}
	ref = snap.ref
	p := r.newPlanner(ctx, ref, snap, true)
	infos, err := r.Side.List(ctx, ref)
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(infos))
	where := make(map[string]string, len(infos))
	for _, in := range infos {
		have[in.EntryID] = true
		where[in.EntryID] = in.Location
	}
	name := ref.String()
	var touched []string
	kept := 0 // inserted lines kept, among Lost
	for _, e := range snap.lines {
		if key := heldSourceKey(e); key != "" {
			file := where[key]
			if file == "" {
				file = "side record " + key
			}
			res.Lost = append(res.Lost, Problem{Session: name, EntryID: e.ID, Line: e.Line, Path: extract.SourceContentPath,
				Kind: ProblemSourceKept, File: file,
				Detail: fmt.Sprintf("source value not written back: the host wrote the placeholder [[extracted-%s]]; purge_control restore %s returns it", key, key)})
			res.Remaining.SourceValues++
		}
		if e.ID == "" {
			continue
		}
		file := where[e.ID]
		if file == "" {
			file = "side record " + e.ID
		}
		if !have[e.ID] {
			res.Lost = append(res.Lost, problems(checkPlaceholders(name, e, sideRecord{err: fmt.Errorf("entry %s: %w", e.ID, bs.ErrNotFound)}))...)
			continue
		}
		b, err := p.recs.get(e.ID)
		if err != nil {
			res.Lost = append(res.Lost, problems(checkPlaceholders(name, e, sideRecord{err: err, file: file}))...)
			res.Remaining.UnreadableRecords++
			if errors.Is(err, bs.ErrCorrupt) {
				r.audit(ref, "restore_corrupt", e.ID, "side record "+e.ID, err)
			}
			continue
		}
		le := &lineEdit{line: e.Line, id: e.ID, orig: e.Raw, cur: e.Raw, parsed: e}
		p.lines[e.Line] = le
		if pristine {
			nRefused := len(p.refused)
			r.undoLine(p, le, b, res)
			prob := undoInsert(name, le, b, file)
			if le.drop && !p.acceptsRemoval(le) {
				le.drop = false // kept, listed in Refused
			}
			if prob != nil {
				// Kept: its journal stays, so that it is still known
				// as inserted.
				res.Lost = append(res.Lost, *prob)
				kept++
			} else if len(p.refused) == nRefused {
				// An entry with a refused value keeps its journal and
				// redactions: what stays in place is still described.
				touched = append(touched, e.ID)
			}
			if le.drop {
				res.LinesRemoved++
				res.Entries++
				continue
			}
		} else {
			out := outcome{sizes: map[string]int{}}
			p.restoreValues(le, b.rec, nil, &out)
			res.Values += len(out.restored)
			for _, n := range out.sizes {
				res.Bytes += int64(n)
			}
		}
		// What the line still holds after the edits.
		for _, c := range checkPlaceholders(name, le.entry(), sideRecord{rec: b.rec, file: file}) {
			if f, ok := p.refusal(e.Line, c.ptr); ok && c.problem == nil {
				c.problem = &Problem{Session: name, EntryID: e.ID, Line: e.Line, Path: c.ptr, Kind: ProblemRefused,
					Detail: "the value is stored and intact, but the store does not accept it back: " + f.Reason + "; " + f.How, File: file}
				res.Remaining.Refused++
			}
			if c.problem == nil {
				c.problem = &Problem{Session: name, EntryID: e.ID, Line: e.Line, Path: c.ptr, Kind: ProblemNotRestored,
					Detail: "the value is stored and intact but was not put back (see the warnings)", File: file}
			}
			res.Lost = append(res.Lost, *c.problem)
		}
		remains(p, le, b, &res.Remaining)
		if le.changed() {
			res.Entries++
		}
	}
	if pristine {
		for _, le := range keepParents(snap.lines, p.lines) {
			id := le.id
			res.LinesRemoved--
			res.Entries--
			if le.changed() {
				res.Entries++
			}
			file := where[id]
			if file == "" {
				file = "side record " + id
			}
			res.Lost = append(res.Lost, Problem{Session: name, EntryID: id, Line: le.line, Path: "", Kind: ProblemInsertedHasChildren, File: file,
				Detail: "a repair inserted this line, but an entry that stays has it as its parent (the host appended to the session since the repair); the line is kept, so that the entry's parent exists"})
			kept++
			touched = slices.DeleteFunc(touched, func(t string) bool { return t == id })
			if b, err := p.recs.get(id); err == nil {
				remains(p, le, b, &res.Remaining)
			}
		}
		slices.SortStableFunc(res.Lost, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	}
	res.Warnings = append(res.Warnings, p.warnings...)
	res.Refused = append(res.Refused, p.refused...)
	slices.SortStableFunc(res.Refused, func(a, b Refusal) int { return cmp.Compare(a.Line, b.Line) })
	res.Remaining.Placeholders = len(res.Lost) - kept
	res.Pristine = res.Remaining.None()
	edits := p.edits()
	if len(edits) > 0 {
		if err := p.recs.flush(); err != nil {
			return nil, fmt.Errorf("restore all of %s: %w", ref, err)
		}
		if err := r.Store.Rewrite(ctx, ref, snap.version, edits, nil); err != nil {
			return nil, fmt.Errorf("restore all of %s: %w", ref, err)
		}
		res.Applied = true
	}
	if pristine {
		// Everything is undone: the journals start afresh and queued
		// write-backs are moot.
		for _, id := range touched {
			st := p.recs.recs[id]
			if st == nil || st.err != nil || (len(st.b.journal) == 0 && len(st.b.redactions) == 0) {
				continue
			}
			st.b.journal, st.b.redactions, st.dirty = nil, nil, true
		}
		if err := p.recs.flush(); err != nil {
			return res, fmt.Errorf("restore all of %s: clear journals: %w", ref, err)
		}
		r.dropPending(ref)
	}
	r.log().Info("restore all", "session", ref.String(), "pristine", pristine, "entries", res.Entries,
		"values", res.Values, "bytes", res.Bytes, "redactions", res.Redactions, "bookkeeping", res.Bookkeeping, "lost", len(res.Lost), "refused", len(res.Refused), "pristine_now", res.Pristine)
	return res, nil
}

// undoLine undoes on one line everything the record knows: extracted
// values and redactions (repeatedly, since one can hide another), then the
// journal in reverse order.
func (r *Restorer) undoLine(p *planner, le *lineEdit, b *book, res *AllResult) {
	for pass := 0; pass < maxUndoPasses; pass++ {
		changed := false
		for _, set := range [][]extract.StoredValue{b.rec.Values, b.redactions} {
			for _, v := range set {
				cur, ok := le.value(v.Path)
				if !ok || !holdsPlaceholder(v, cur) {
					continue
				}
				orig, err := v.Bytes()
				if err != nil {
					p.warn("entry %s: %v; the placeholder stays", le.id, err)
					r.audit(p.ref, "restore_corrupt", le.id, "side record "+le.id, err)
					continue
				}
				if string(orig) == string(cur) {
					continue
				}
				if err := p.accepts(le, v.Path, orig); err != nil {
					p.refuse(le, v, err)
					continue
				}
				le.replace(v.Path, orig)
				changed = true
				if v.Trigger == TriggerRedaction {
					res.Redactions++
				} else {
					res.Values++
					res.Bytes += int64(len(orig))
				}
			}
		}
		if !changed {
			break
		}
	}
	for i := len(b.journal) - 1; i >= 0; i-- {
		j := b.journal[i]
		if j.Path == "" {
			continue // the whole line: undoInsert
		}
		obj, name, err := splitMember(j.Path)
		if err != nil {
			p.warn("entry %s: journal: %v", le.id, err)
			continue
		}
		_, vs, ve, present := jsonedit.Member(le.cur, obj, name)
		before := le.cur
		count := &res.Bookkeeping
		if obj == "" && name == "parentId" {
			count = &res.ParentsUndone // a repair's, not bookkeeping
		}
		if j.Absent {
			if present && le.remove(obj, name) == nil && p.acceptsUndo(le, before, j.Path) {
				*count++
			}
			continue
		}
		prev, err := journalRaw(j)
		if err != nil {
			p.warn("entry %s: %v", le.id, err)
			continue
		}
		if present && string(le.cur[vs:ve]) == string(prev) {
			continue
		}
		if le.set(obj, name, prev) == nil && p.acceptsUndo(le, before, j.Path) {
			*count++
		}
	}
}

// acceptsUndo reports whether the store takes le as it is now, after a
// journaled member at ptr was put back (a repair's "parentId" in a session
// imported into OpenClaw's SQLite store is refused): when it does not,
// le goes back to before and the member is listed as refused, so that the
// rest of the session is still restored and its journal is kept.
func (p *planner) acceptsUndo(le *lineEdit, before []byte, ptr string) bool {
	ck, ok := p.r.Store.(EditChecker)
	if !ok {
		return true
	}
	err := ck.CheckEdit(p.ref, le.orig, le.cur)
	if err == nil {
		return true
	}
	le.cur, le.parsed = before, nil
	k := fmt.Sprintf("%d %s", le.line, ptr)
	if p.refusedAt == nil {
		p.refusedAt = map[string]bool{}
	}
	if !p.refusedAt[k] {
		p.refusedAt[k] = true
		p.refused = append(p.refused, Refusal{EntryID: le.id, Key: ptr, Line: le.line, Reason: refusedReason(err),
			How: fmt.Sprintf("the member's previous value stays in the journal of the side record of entry %s; the transcript keeps the current one", le.id)})
	}
	return false
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// remains adds to rem what of BrainSurgeon's the line still holds
// according to the entry's record: journaled members not back to their
// previous state (a repair's "parentId" counted apart from bookkeeping),
// the line itself when a repair inserted it, and redaction stubs; what the
// store refused to undo (p.refusedAt) is counted in RefusedUndos too.
func remains(p *planner, le *lineEdit, b *book, rem *Remaining) {
	refused := func(ptr string) {
		if p.refusedAt[fmt.Sprintf("%d %s", le.line, ptr)] {
			rem.RefusedUndos++
		}
	}
	for _, j := range b.journal {
		if j.Path == "" {
			if j.Absent {
				rem.Inserted++ // a repair's line, still there
				refused("")
			} else {
				rem.Bookkeeping++
			}
			continue
		}
		obj, name, err := splitMember(j.Path)
		if err != nil {
			rem.Bookkeeping++
			continue
		}
		count := &rem.Bookkeeping
		if obj == "" && name == "parentId" {
			count = &rem.Reparented
		}
		_, vs, ve, present := jsonedit.Member(le.cur, obj, name)
		if j.Absent {
			if present {
				*count++
				refused(j.Path)
			}
			continue
		}
		prev, err := journalRaw(j)
		if err != nil || !present || string(le.cur[vs:ve]) != string(prev) {
			*count++
			refused(j.Path)
		}
	}
	for _, v := range b.redactions {
		if cur, ok := le.value(v.Path); ok && holdsPlaceholder(v, cur) {
			rem.Redactions++
		}
	}
}

// acceptsRemoval reports whether the store takes the removal of le, a line
// a repair inserted (EditChecker, asked with a nil new line). When it does
// not, the refusal is recorded with the store's reason: the line stays,
// and its journal with it.
func (p *planner) acceptsRemoval(le *lineEdit) bool {
	ck, ok := p.r.Store.(EditChecker)
	if !ok {
		return true
	}
	err := ck.CheckEdit(p.ref, le.orig, nil)
	if err == nil {
		return true
	}
	k := fmt.Sprintf("%d %s", le.line, "")
	if p.refusedAt == nil {
		p.refusedAt = map[string]bool{}
	}
	if !p.refusedAt[k] {
		p.refusedAt[k] = true
		p.refused = append(p.refused, Refusal{EntryID: le.id, Key: "", Line: le.line, Reason: refusedReason(err),
			How: fmt.Sprintf("nothing is lost: the line is an entry a repair (doctor --fix) added, which stays in the transcript; the side record of entry %s keeps it journaled as inserted", le.id)})
	}
	return false
}

// undoInsert decides, after undoLine, what becomes of a line whose record
// says a repair inserted it: when its bytes are the journaled ones it is
// marked for removal; otherwise it is kept and the Problem returned says
// why. A line no repair inserted gives nil and stays.
func undoInsert(session string, le *lineEdit, b *book, file string) *Problem {
	raw, ok, err := insertedLine(b)
	if !ok {
		return nil
	}
	prob := &Problem{Session: session, EntryID: le.id, Line: le.line, Path: "", Kind: ProblemInsertedChanged, File: file}
	switch {
	case err != nil:
		prob.Detail = fmt.Sprintf("a repair inserted this line, but its journal cannot be read (%v); the line is kept", err)
	case !bytes.Equal(le.cur, raw):
		prob.Detail = fmt.Sprintf("a repair inserted this line (%d bytes), but it has changed since (%d bytes now); the line is kept", len(raw), len(le.cur))
	default:
		le.drop = true
		return nil
	}
	return prob
}

// keepParents finds the lines marked for removal (inserted by a repair)
// that must stay because an entry that stays names one of them as its
// parent, once its journaled parentId is put back; it clears their mark
// and returns them in file order. It repeats until nothing changes: a kept
// inserted line keeps its own parent (an earlier line of the same chain)
// too.
func keepParents(lines []*bs.Entry, edits map[int]*lineEdit) []*lineEdit {
	parentOf := func(e *bs.Entry) string {
		le := edits[e.Line]
		if le == nil {
			return e.ParentID
		}
		_, vs, ve, ok := jsonedit.Member(le.cur, "", "parentId")
		if !ok {
			return ""
		}
		var parent string
		if json.Unmarshal(le.cur[vs:ve], &parent) != nil {
			return "" // null: a root
		}
		return parent
	}
	var kept []*lineEdit
	for {
		dropped := map[string]*lineEdit{}
		for _, e := range lines {
			if le := edits[e.Line]; le != nil && le.drop && le.id != "" {
				dropped[le.id] = le
			}
		}
		var now []*lineEdit
		for _, e := range lines {
			if le := edits[e.Line]; le != nil && le.drop {
				continue
			}
			if le := dropped[parentOf(e)]; le != nil {
				now = append(now, le)
				delete(dropped, le.id)
			}
		}
		if len(now) == 0 {
			break
		}
		for _, le := range now {
			le.drop = false
		}
		kept = append(kept, now...)
	}
	slices.SortFunc(kept, func(a, b *lineEdit) int { return cmp.Compare(a.line, b.line) })
	return kept
}
