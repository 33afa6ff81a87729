package compact

import (
	"context"
	"errors"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// TranscriptReport summarises what a transcript holds. It is what
// `brainsurgeon inspect` prints.
type TranscriptReport struct {
	// Session is the session inspected; Path its transcript.
	Session bs.SessionRef `json:"session"`
	// Header is the session header.
	Header TranscriptHeader `json:"header"`
	// Bytes and Lines measure the file.
	Bytes int64 `json:"bytes"`
	Lines int   `json:"lines"`
	// Entries counts entry lines; Blank blank lines.
	Entries int `json:"entries"`
	Blank   int `json:"blank"`
	// IDLessEntries counts the entries without an id (a v1 transcript) that
	// hold extractable values, and IDLessBytes those values' size (Triggers
	// includes them): they can never be extracted, since a placeholder names
	// its entry's id.
	IDLessEntries int   `json:"id_less_entries"`
	IDLessBytes   int64 `json:"id_less_bytes"`
	// MalformedTotal counts the malformed lines; Malformed lists only the
	// first MaxMalformed of them.
	MalformedTotal int `json:"malformed_total"`
	// EntryTypes, Roles and BlockTypes count entries by type, messages by
	// role and content blocks by "role:type".
	EntryTypes map[string]int `json:"entry_types"`
	Roles      map[string]int `json:"roles"`
	BlockTypes map[string]int `json:"block_types"`
	// Leaf is the active leaf's id; ActivePath the number of entries on the
	// active path; ContextMessages the number of messages the host builds
	// from it (a compaction summary included); BranchPoints the number of
	// entries with more than one child.
	Leaf            string `json:"leaf"`
	ActivePath      int    `json:"active_path"`
	ContextMessages int    `json:"context_messages"`
	BranchPoints    int    `json:"branch_points"`
	// Compactions lists every compaction entry.
	Compactions []TranscriptCompaction `json:"compactions"`
	// Malformed lists the first MaxMalformed malformed lines.
	Malformed []TranscriptMalformed `json:"malformed"`
	// Triggers counts extractable values and their bytes by trigger type,
	// over the whole file and over the active path's context.
	Triggers map[bs.TriggerType]TriggerStat `json:"triggers"`
	// FirstTime and LastTime bound the entries' timestamps.
	FirstTime time.Time `json:"first_time,omitzero"`
	LastTime  time.Time `json:"last_time,omitzero"`
}

// TranscriptHeader is the header part of a TranscriptReport.
type TranscriptHeader struct {
	Line    int    `json:"line"`
	Version int    `json:"version"`
	ID      string `json:"id"`
	Cwd     string `json:"cwd,omitempty"`
}

// TranscriptCompaction describes one compaction entry.
type TranscriptCompaction struct {
	Line      int    `json:"line"`
	ID        string `json:"id"`
	FirstKept string `json:"first_kept_entry_id,omitempty"`
	// Active is true for the compaction the host applies (the latest one on
	// the active path).
	Active bool `json:"active"`
}

// TranscriptMalformed describes one malformed line.
type TranscriptMalformed struct {
	Line  int    `json:"line"`
	Bytes int    `json:"bytes"`
	Error string `json:"error"`
}

// TriggerStat counts the values of one trigger type.
type TriggerStat struct {
	Values int   `json:"values"`
	Bytes  int64 `json:"bytes"`
	// IDLessValues and IDLessBytes count the values (among Values and
	// Bytes) of entries without an id, which can never be extracted.
	IDLessValues int   `json:"id_less_values"`
	IDLessBytes  int64 `json:"id_less_bytes"`
	// ContextValues and ContextBytes count only values of entries that
	// reach the model (the context built from the active path).
	ContextValues int   `json:"context_values"`
	ContextBytes  int64 `json:"context_bytes"`
}

// MaxMalformed is the number of malformed lines a TranscriptReport lists.
const MaxMalformed = 10

// InspectTranscript reads the transcript once more, streaming, and builds
// its TranscriptReport. It works on a transcript of any backend. A
// transcript in which no line is a header or an entry gives an error
// wrapping brainsurgeon.ErrNotTranscript (and no report).
func InspectTranscript(ctx context.Context, t bs.Transcript) (*TranscriptReport, error) {
	h := t.Header()
	nodes := t.Nodes()
	path := t.ActivePath()
	r := &TranscriptReport{
		Session:     t.Ref(),
		Header:      TranscriptHeader{Line: h.Line, Version: h.Version, ID: h.ID, Cwd: h.Cwd},
		Bytes:       t.Version().Size(),
		Lines:       len(nodes),
		EntryTypes:  map[string]int{},
		Roles:       map[string]int{},
		BlockTypes:  map[string]int{},
		Triggers:    map[bs.TriggerType]TriggerStat{},
		Compactions: []TranscriptCompaction{},
		Malformed:   []TranscriptMalformed{},
	}
	if len(path) > 0 {
		r.Leaf = nodes[path[len(path)-1]].ID
	}
	r.ActivePath = len(path)
	c := t.Context()
	r.ContextMessages = c.Count()
	r.BranchPoints = bs.BranchPoints(nodes)
	inContext := make(map[int]bool, len(c.Messages))
	for _, i := range c.Messages {
		inContext[nodes[i].Line] = true
	}
	for _, i := range bs.Compactions(nodes) {
		n := &nodes[i]
		r.Compactions = append(r.Compactions, TranscriptCompaction{Line: n.Line, ID: n.ID, FirstKept: n.FirstKept(), Active: i == c.Compaction})
	}
	for i := range nodes {
		n := &nodes[i]
		switch n.Kind {
		case bs.KindBlank:
			r.Blank++
		case bs.KindMalformed:
			msg := ""
			if n.Err() != nil {
				msg = n.Err().Error()
				var le *bs.LineError
				if errors.As(n.Err(), &le) {
					msg = le.Err.Error()
				}
			}
			r.MalformedTotal++
			if len(r.Malformed) < MaxMalformed {
				r.Malformed = append(r.Malformed, TranscriptMalformed{Line: n.Line, Bytes: n.Len, Error: msg})
			}
		case bs.KindEntry:
			r.Entries++
			r.EntryTypes[n.Type]++
			if n.Type == "message" && n.Role != "" {
				r.Roles[n.Role]++
			}
			role := n.Role
			if n.Type == "custom_message" {
				role = "custom_message"
			}
			for _, b := range n.BlockTypes {
				r.BlockTypes[fmt.Sprintf("%s:%s", role, b)]++
			}
			if !n.Timestamp.IsZero() {
				if r.FirstTime.IsZero() || n.Timestamp.Before(r.FirstTime) {
					r.FirstTime = n.Timestamp
				}
				if n.Timestamp.After(r.LastTime) {
					r.LastTime = n.Timestamp
				}
			}
		}
	}
	if r.Entries == 0 && h.Line == 0 {
		what := "it is empty"
		if len(r.Malformed) > 0 {
			m := r.Malformed[0]
			what = fmt.Sprintf("%d of its %s %s malformed (line %d: %s)", r.MalformedTotal, plural.Count(r.Lines, "line", "lines"), isAre(r.MalformedTotal), m.Line, m.Error)
		} else if r.Blank > 0 {
			what = fmt.Sprintf("its %s %s blank", plural.Count(r.Blank, "line", "lines"), isAre(r.Blank))
		}
		name := t.Location()
		if name == "" {
			name = t.Ref().String()
		}
		return nil, fmt.Errorf("%s: no line is a session header or an entry, %s: %w", name, what, bs.ErrNotTranscript)
	}
	for e, err := range t.Entries(ctx) {
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", t.Ref(), err)
		}
		idless := false
		for _, cand := range entry.Classify(e) {
			s := r.Triggers[cand.Trigger]
			s.Values++
			s.Bytes += int64(cand.Len())
			if e.ID == "" {
				s.IDLessValues++
				s.IDLessBytes += int64(cand.Len())
				r.IDLessBytes += int64(cand.Len())
				idless = true
			}
			if inContext[e.Line] {
				s.ContextValues++
				s.ContextBytes += int64(cand.Len())
			}
			r.Triggers[cand.Trigger] = s
		}
		if idless {
			r.IDLessEntries++
		}
	}
	return r, nil
}

// isAre returns the verb that agrees with a count of n.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
