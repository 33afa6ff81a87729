package portable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

// SchemaVersion is the version of the export document this package writes
// and the only one Import accepts.
const SchemaVersion = 1

// Document is the portable form of a session's context, as Export makes
// it and Import reads it. Its JSON members are
// snake_case except inside Tail, whose lines are the host's own entries.
type Document struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Source names the session the export was taken from.
	Source Source `json:"source"`
	// CreatedAt is when the export was made.
	CreatedAt time.Time `json:"created_at"`
	// Summary is the latest compaction summary on the active path, or nil
	// when the session was never compacted.
	Summary *Summary `json:"summary"`
	// Facts is the structured extraction of the active path (entities,
	// files read and modified, tool operations, findings, decisions, user
	// requests, next steps) made by ExportOptions.Facts, or nil.
	Facts json.RawMessage `json:"facts,omitempty"`
	// Tail is the kept tail: the raw lines of the active path from the
	// latest compaction's first kept entry (or the start) to the leaf,
	// which is what the host loads after the summary.
	Tail []json.RawMessage `json:"tail"`
}

// Source names the session an export comes from.
type Source struct {
	// Agent, SessionID and Backend identify the session; Path is where it
	// was stored (a transcript file or a database).
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Backend   string `json:"backend"`
	Path      string `json:"path"`
	// Version is the transcript format version of the tail's lines (2 or
	// 3); Cwd the session's working directory; LeafID its active leaf.
	Version int    `json:"version"`
	Cwd     string `json:"cwd"`
	LeafID  string `json:"leaf_id"`
}

// Summary is a compaction summary.
type Summary struct {
	// EntryID is the compaction entry's id in the source session.
	EntryID string `json:"entry_id"`
	// Text is the summary.
	Text string `json:"text"`
	// FirstKeptEntryID is the first entry the host loads after the
	// summary: the first line of the tail.
	FirstKeptEntryID string `json:"first_kept_entry_id"`
	// TokensBefore is the context size recorded before the compaction.
	TokensBefore int64 `json:"tokens_before"`
	// Time is the compaction's time.
	Time time.Time `json:"time,omitzero"`
	// ReadFiles and ModifiedFiles are the compaction's details.readFiles
	// and details.modifiedFiles.
	ReadFiles     []string `json:"read_files"`
	ModifiedFiles []string `json:"modified_files"`
}

// ExportOptions tunes Export.
type ExportOptions struct {
	// Facts, when not nil, makes the export's facts from the raw lines of
	// the whole active path (summarize.Facts fits); its result is encoded
	// as JSON.
	Facts func(lines [][]byte) any
	// Resolve replaces the placeholders in the tail by the original values
	// from the side store, so the export carries the values themselves
	// (the side store does not travel with it).
	Resolve bool
	// Clock times the export; nil means the system clock.
	Clock bs.Clock
	// Logger receives a warning for each placeholder Resolve could not
	// resolve (it stays); nil discards.
	Logger bs.Logger
}

// Export takes the portable form of tr's context. side is read only with
// Resolve and may be nil otherwise. A v1 transcript, whose entries have no
// ids, gives an error wrapping brainsurgeon.ErrUnsupported.
func Export(ctx context.Context, tr bs.Transcript, side bs.SideStore, o ExportOptions) (*Document, error) {
	ref, h := tr.Ref(), tr.Header()
	if h.Version < 2 {
		return nil, fmt.Errorf("export %s: a v1 transcript has no entry ids (let the host migrate it first): %w", ref, bs.ErrUnsupported)
	}
	if o.Resolve && side == nil {
		return nil, fmt.Errorf("export %s: Resolve needs a side store: %w", ref, bs.ErrInvalid)
	}
	nodes, path, c := tr.Nodes(), tr.ActivePath(), tr.Context()
	if len(path) == 0 {
		return nil, fmt.Errorf("export %s: the session has no entries: %w", ref, bs.ErrInvalid)
	}
	x := &Document{SchemaVersion: SchemaVersion, CreatedAt: bs.Now(o.Clock).UTC(),
		Source: Source{Agent: ref.Agent, SessionID: ref.ID, Backend: ref.Backend, Path: tr.Location(), Version: h.Version, Cwd: h.Cwd,
			LeafID: nodes[path[len(path)-1]].ID}}
	if x.Source.Backend == "" {
		x.Source.Backend = bs.BackendJSONL
	}
	start := 0
	if c.Compaction >= 0 {
		from := c.FirstKept
		if from < 0 {
			from = c.Compaction
		}
		for k, i := range path {
			if i == from {
				start = k
			}
		}
		d, err := recall.Describe(ctx, tr, nodes[c.Compaction].ID)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", ref, err)
		}
		s := &Summary{EntryID: d.EntryID, Text: d.Compaction.Summary, FirstKeptEntryID: nodes[path[start]].ID,
			TokensBefore: d.Compaction.TokensBefore, Time: d.Time, ReadFiles: []string{}, ModifiedFiles: []string{}}
		var det struct {
			ReadFiles     []string `json:"readFiles"`
			ModifiedFiles []string `json:"modifiedFiles"`
		}
		if len(d.Compaction.Details) > 0 && json.Unmarshal(d.Compaction.Details, &det) == nil {
			s.ReadFiles = append(s.ReadFiles, det.ReadFiles...)
			s.ModifiedFiles = append(s.ModifiedFiles, det.ModifiedFiles...)
		}
		x.Summary = s
	}
	want := path[start:]
	if o.Facts != nil {
		want = path
	}
	lines := make([]int, len(want))
	for k, i := range want {
		lines[k] = i + 1
	}
	sort.Ints(lines)
	raws := make(map[int][]byte, len(lines))
	for e, err := range tr.Lines(ctx, lines) {
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", ref, err)
		}
		raws[e.Line] = e.Raw
	}
	log := bs.LoggerOrDiscard(o.Logger)
	for _, i := range path[start:] {
		raw := bytes.TrimRight(raws[i+1], "\r")
		if o.Resolve {
			raw, _ = recall.ResolveLine(ctx, ref, side, raw, log)
		}
		x.Tail = append(x.Tail, raw)
	}
	if o.Facts != nil {
		all := make([][]byte, 0, len(path))
		for _, i := range path {
			all = append(all, raws[i+1])
		}
		f, err := json.Marshal(o.Facts(all))
		if err != nil {
			return nil, fmt.Errorf("export %s: facts: %w", ref, err)
		}
		x.Facts = f
	}
	return x, nil
}

// Encode writes x as JSON to w with every tail line byte for byte as it
// is held, one per line (json.Marshal would escape <, > and & inside
// them).
func (x *Document) Encode(w io.Writer) error {
	head := *x
	head.Tail = nil
	b, err := entry.Marshal(struct {
		*Document
		Tail *struct{} `json:"tail,omitempty"`
	}{Document: &head})
	if err != nil {
		return fmt.Errorf("encode export: %w", err)
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return fmt.Errorf("encode export: unexpected encoding %q", b)
	}
	var out bytes.Buffer
	out.Write(b[:len(b)-1])
	out.WriteString(`,"tail":[`)
	for k, l := range x.Tail {
		if k > 0 {
			out.WriteByte(',')
		}
		out.WriteString("\n")
		out.Write(l)
	}
	out.WriteString("\n]}\n")
	_, err = w.Write(out.Bytes())
	return err
}

// errExport wraps every validation error of Decode.
var errExport = errors.New("not a valid export")
