package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// snapshot is what a scan of a transcript kept: the parsed lines of
// interest (with their own copy of the raw bytes), the transcript read
// and its version.
type snapshot struct {
	ref     bs.SessionRef
	tr      bs.Transcript
	version bs.Version
	// lines are the kept entry lines in order.
	lines []*bs.Entry
	// byID maps an entry id to the index in lines of the last line
	// carrying it.
	byID map[string]int
}

// entry returns the last kept line whose entry id is id.
func (s *snapshot) entry(id string) (*bs.Entry, bool) {
	i, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	return s.lines[i], true
}

// scanFilter decides which lines a scan keeps. ids are entry ids whose
// lines (and the lines of calls naming them) are wanted; callIDs are tool
// call ids whose calls and results are wanted. all keeps every entry line.
type scanFilter struct {
	ids     map[string]bool
	callIDs map[string]bool
	all     bool
}

// manyIDs is the number of wanted ids above which a scan parses every line
// instead of searching each line for each id.
const manyIDs = 16

var (
	restoreWord  = []byte("restore")
	toolCallIDKw = []byte(`"toolCallId"`)
)

// scan reads the session's transcript through the store and keeps the
// entry lines f wants. A missing session is an error wrapping ErrNotFound
// that names the sessions there are.
func (r *Restorer) scan(ctx context.Context, ref bs.SessionRef, f scanFilter) (*snapshot, error) {
	s := &snapshot{byID: map[string]int{}}
	if f.callIDs == nil {
		f.callIDs = map[string]bool{}
	}
	quoted := map[string][]byte{}
	for id := range f.ids {
		quoted[id] = []byte(id)
	}
	// With many ids a line is parsed to look its id up; with a few, the
	// bytes are searched for them first.
	many := len(f.ids) > manyIDs
	want := func(raw []byte) bool { return f.all || many || wanted(raw, f, quoted) }
	v := &bs.Visitor{Want: want, Visit: func(e *bs.Entry) error {
		if e.Kind != bs.KindEntry || !want(e.Raw) {
			return nil
		}
		if !f.all {
			if many && !f.ids[e.ID] && !(e.Role == "assistant" && bytes.Contains(e.Raw, restoreWord)) && !callsWanted(e.Raw, f) {
				return nil
			}
			if !f.ids[e.ID] && !isCallOrResult(e) {
				return nil
			}
		}
		// The entry's views index Raw, which belongs to the read: keep a
		// copy of both.
		c := *e
		c.Raw = bytes.Clone(e.Raw)
		c.Extractable = bytes.Clone(e.Extractable) // a slice of the read's buffer too
		if c.ID != "" {
			s.byID[c.ID] = len(s.lines)
		}
		s.lines = append(s.lines, &c)
		// Calls naming a wanted entry make their results wanted.
		if c.Role == "assistant" || c.Type == "tool_call" {
			for _, tc := range toolCalls(&c) {
				if tc.id != "" && (f.callIDs[tc.id] || f.ids[restoreTarget(tc)]) {
					f.callIDs[tc.id] = true
				}
			}
		}
		return nil
	}}
	tr, err := r.Store.Open(ctx, ref, v)
	if err != nil {
		if errors.Is(err, bs.ErrNotFound) {
			return nil, r.missingSession(ctx, ref, err)
		}
		return nil, fmt.Errorf("session %s: %w", ref, err)
	}
	s.tr, s.ref, s.version = tr, tr.Ref(), tr.Version()
	return s, nil
}

// wanted is the cheap byte-level prefilter of scan.
func wanted(raw []byte, f scanFilter, quoted map[string][]byte) bool {
	for _, q := range quoted {
		if bytes.Contains(raw, q) {
			return true
		}
	}
	return callsWanted(raw, f)
}

// callsWanted reports whether raw may name a wanted tool call.
func callsWanted(raw []byte, f scanFilter) bool {
	if len(f.callIDs) > 0 && (bytes.Contains(raw, toolCallIDKw) || bytes.Contains(raw, []byte(`"toolCall"`))) {
		for id := range f.callIDs {
			if bytes.Contains(raw, []byte(id)) {
				return true
			}
		}
	}
	return false
}

func isCallOrResult(e *bs.Entry) bool {
	return e.Role == "assistant" || e.Role == "toolResult" || e.Type == "tool_call"
}

// missingSession describes a session the store does not have and lists
// the sessions of the same agent.
func (r *Restorer) missingSession(ctx context.Context, ref bs.SessionRef, cause error) error {
	var ids []string
	if refs, _, err := r.Store.Sessions(ctx); err == nil {
		for _, o := range refs {
			if o.Agent == ref.Agent {
				ids = append(ids, o.ID)
			}
		}
	}
	sort.Strings(ids)
	have := "no sessions there"
	if len(ids) > 0 {
		if len(ids) > 8 {
			ids = append(ids[:8], fmt.Sprintf("… (%d in all)", len(ids)))
		}
		have = "sessions there: " + strings.Join(ids, ", ")
	}
	return fmt.Errorf("session %s: %v (%s): %w", ref, cause, have, bs.ErrNotFound)
}

// missingEntry describes an entry id that the transcript does not hold.
func (r *Restorer) missingEntry(ctx context.Context, ref bs.SessionRef, id string) error {
	n, sample := 0, []string{}
	if tr, err := r.Store.Open(ctx, ref, nil); err == nil {
		nodes := tr.Nodes()
		for i := range nodes {
			if nodes[i].Kind != bs.KindEntry || nodes[i].ID == "" {
				continue
			}
			n++
			if len(sample) < 3 {
				sample = append(sample, nodes[i].ID)
			}
		}
	}
	like := ""
	if len(sample) > 0 {
		like = "; ids look like " + strings.Join(sample, ", ")
	}
	return fmt.Errorf("entry %q not found in session %s (%d entries%s; get_context lists the extracted ones): %w",
		id, r.refName(ref), n, like, bs.ErrNotFound)
}

// refName names ref in a message: "agent/id", or where the store keeps
// it when the ref has no id.
func (r *Restorer) refName(ref bs.SessionRef) string {
	if ref.ID == "" {
		return r.Store.Location(ref)
	}
	return ref.String()
}
