package recall

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// Description is what Describe tells about one entry.
type Description struct {
	// EntryID, Line, Type, Role and ParentID identify the entry.
	EntryID  string `json:"entry_id"`
	Line     int    `json:"line"`
	Type     string `json:"type"`
	Role     string `json:"role,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	// Time is the entry's time (zero when it has none).
	Time time.Time `json:"time,omitzero"`
	// Bytes is the size of the stored line.
	Bytes int `json:"bytes"`
	// Where is where the entry is, as seen from the context the host
	// builds (active, compacted or off_path).
	Where Where `json:"where"`
	// Extracted is true when the line holds a placeholder of its own
	// values: some were moved to the side store.
	Extracted bool `json:"extracted"`
	// Compaction is set for a compaction entry.
	Compaction *Compaction `json:"compaction,omitempty"`
}

// Compaction describes a compaction entry: the summary, the host's fields
// and ours (details.brainsurgeon), and the entries it stands for.
type Compaction struct {
	// Summary is the summary text.
	Summary string `json:"summary"`
	// FirstKeptEntryID is the first entry the host still loads after the
	// summary.
	FirstKeptEntryID string `json:"first_kept_entry_id"`
	// TokensBefore is the context size the host recorded before the
	// compaction.
	TokensBefore int64 `json:"tokens_before"`
	// FromHook is the entry's fromHook member.
	FromHook bool `json:"from_hook"`
	// Details is the entry's details object as stored (readFiles,
	// modifiedFiles, brainsurgeon, …), or nil.
	Details json.RawMessage `json:"details,omitempty"`
	// Layer, Trigger, Level, Degraded and Covers are read from
	// details.brainsurgeon when a BrainSurgeon compaction wrote them.
	// Covers lists the ids of the summaries a condensed summary stands
	// for; Level is 0 for a summary of entries, n+1 for one condensing
	// level-n summaries.
	Layer    string   `json:"layer,omitempty"`
	Trigger  string   `json:"trigger,omitempty"`
	Level    int      `json:"level"`
	Degraded bool     `json:"degraded"`
	Covers   []string `json:"covers,omitempty"`
	// Previous is the id of the compaction before this one on its path,
	// or "".
	Previous string `json:"previous_compaction_id,omitempty"`
	// Span is the stretch of entries the summary stands for (see Expand).
	Span Span `json:"span"`
}

// Span is a stretch of entries along one path.
type Span struct {
	// Count is the number of entries; Messages how many of them reach the
	// model as messages.
	Count    int `json:"count"`
	Messages int `json:"messages"`
	// FirstID/FirstLine and LastID/LastLine are the first and last entry
	// (empty when Count is 0).
	FirstID   string `json:"first_id,omitempty"`
	FirstLine int    `json:"first_line,omitempty"`
	LastID    string `json:"last_id,omitempty"`
	LastLine  int    `json:"last_line,omitempty"`
}

// compactionLine is the part of a compaction entry Describe reads.
type compactionLine struct {
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int64           `json:"tokensBefore"`
	FromHook         bool            `json:"fromHook"`
	Details          json.RawMessage `json:"details"`
}

type ourDetails struct {
	BrainSurgeon *struct {
		Layer    string   `json:"layer"`
		Trigger  string   `json:"trigger"`
		Level    int      `json:"level"`
		Degraded bool     `json:"degraded"`
		Covers   []string `json:"covers"`
	} `json:"brainsurgeon"`
}

// Describe tells what entry id is: its type, role, time, size, where it is
// and whether values were extracted from it; for a compaction entry also
// the summary, its fields and the span of entries it stands for. An id the
// transcript does not hold gives an error wrapping brainsurgeon.ErrNotFound
// that lists nearby ids.
func Describe(ctx context.Context, tr bs.Transcript, id string) (*Description, error) {
	n, ok := tr.Node(id)
	if !ok || id == "" {
		return nil, NotFound(tr, "describe", id)
	}
	e, err := tr.Entry(ctx, n.Line)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	p := locate(tr)
	d := &Description{EntryID: id, Line: n.Line, Type: n.Type, Role: n.Role, ParentID: n.ParentID, Time: n.Timestamp,
		Bytes: len(e.Raw), Where: p.where[n.Line-1],
		Extracted: holdsOwn(e, n)}
	if n.Type == "compaction" {
		c, err := describeCompaction(tr, n.Line-1, e.Raw)
		if err != nil {
			return nil, fmt.Errorf("describe %s: %w", id, err)
		}
		d.Compaction = c
	}
	return d, nil
}

// holdsOwn reports whether entry e (of node n) holds a placeholder of its
// own: of its id, or of its tool call's result stored at the source.
func holdsOwn(e *bs.Entry, n *bs.Node) bool {
	c := *e
	if c.ID == "" {
		c.ID = n.ID
	}
	if c.Role == "" {
		c.Role = n.Role
	}
	return extract.HoldsOwnPlaceholder(c.Raw, &c)
}

// describeCompaction reads a compaction line and finds its span.
func describeCompaction(tr bs.Transcript, ci int, raw []byte) (*Compaction, error) {
	var cl compactionLine
	if err := json.Unmarshal(raw, &cl); err != nil {
		return nil, fmt.Errorf("line %d: compaction entry: expected summary, firstKeptEntryId, tokensBefore and details of the host's types: %v: %w", ci+1, err, bs.ErrMalformed)
	}
	c := &Compaction{Summary: cl.Summary, FirstKeptEntryID: cl.FirstKeptEntryID, TokensBefore: cl.TokensBefore, FromHook: cl.FromHook}
	if len(cl.Details) > 0 && !bytes.Equal(cl.Details, []byte("null")) {
		c.Details = cl.Details
		var od ourDetails
		if json.Unmarshal(cl.Details, &od) == nil && od.BrainSurgeon != nil {
			b := od.BrainSurgeon
			c.Layer, c.Trigger, c.Level, c.Degraded, c.Covers = b.Layer, b.Trigger, b.Level, b.Degraded, b.Covers
		}
	}
	sp := span(tr, ci)
	nodes := tr.Nodes()
	if sp.prev >= 0 {
		c.Previous = nodes[sp.prev].ID
	}
	c.Span.Count = len(sp.entries)
	for _, i := range sp.entries {
		if nodes[i].IsMessage() {
			c.Span.Messages++
		}
	}
	if len(sp.entries) > 0 {
		f, l := &nodes[sp.entries[0]], &nodes[sp.entries[len(sp.entries)-1]]
		c.Span.FirstID, c.Span.FirstLine, c.Span.LastID, c.Span.LastLine = f.ID, f.Line, l.ID, l.Line
	}
	return c, nil
}

// compactionSpan is the stretch a compaction stands for.
type compactionSpan struct {
	entries []int // node indexes, in path order
	prev    int   // node index of the previous compaction on the path, or -1
}

// span returns the entries compaction ci stands for: along its own path,
// from the previous compaction's first kept entry (or the start) up to,
// not including, its own first kept entry (or itself when that entry is
// not on the path).
func span(tr bs.Transcript, ci int) compactionSpan {
	nodes := tr.Nodes()
	ch := Chain(tr, ci)
	last := len(ch) - 1
	v1 := v1Indexes(tr)
	out := compactionSpan{prev: -1}
	prevPos := -1
	for k := last - 1; k >= 0; k-- {
		if nodes[ch[k]].Type == "compaction" {
			prevPos = k
			break
		}
	}
	start := 0
	if prevPos >= 0 {
		out.prev = ch[prevPos]
		start = prevPos + 1
		if k := keptPos(nodes, ch[:prevPos], ch[prevPos], v1); k >= 0 {
			start = k
		}
	}
	end := last
	if k := keptPos(nodes, ch[:last], ci, v1); k >= 0 {
		end = k
	}
	if end < start {
		end = start
	}
	out.entries = ch[start:end]
	return out
}

// keptPos returns the position in before of compaction ci's first kept
// entry, or -1.
func keptPos(nodes []bs.Node, before []int, ci int, v1 []int) int {
	c := &nodes[ci]
	for k, i := range before {
		if v1 != nil {
			if c.FirstKeptIndex() >= 0 && v1[i] >= c.FirstKeptIndex() {
				return k
			}
			continue
		}
		if c.FirstKept() != "" && nodes[i].ID == c.FirstKept() {
			return k
		}
	}
	return -1
}

// v1Indexes maps each node of a v1 transcript to its index in pi's entries
// array (header at 0), which a v1 compaction's firstKeptEntryIndex uses;
// nil for later versions.
func v1Indexes(tr bs.Transcript) []int {
	if tr.Header().Version >= 2 {
		return nil
	}
	nodes := tr.Nodes()
	out := make([]int, len(nodes))
	k := 0
	for j := range nodes {
		out[j] = k
		if nodes[j].Kind == bs.KindEntry || nodes[j].Kind == bs.KindHeader {
			k++
		}
	}
	return out
}
