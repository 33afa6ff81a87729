package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// Node is the index record of one transcript line: what the tree, the
// context and the extraction policy need, without the line's bytes.
type Node struct {
	// Line is the 1-based line number; Offset the line's byte offset; Len
	// the length of its raw bytes without the "\n".
	Line   int
	Offset int64
	Len    int
	// Kind tells what the line holds; Err why it is malformed.
	Kind bs.LineKind
	Err  error
	// Type, ID, ParentID, Role, CustomType and Timestamp are copied from the
	// parsed entry.
	Type       string
	ID         string
	ParentID   string
	Role       string
	CustomType string
	Timestamp  time.Time
	// BlockTypes are the types of the message's content blocks, in order.
	BlockTypes []string
	// FirstKept is a compaction's firstKeptEntryId; FirstKeptIndex a v1
	// compaction's firstKeptEntryIndex (-1 when absent).
	FirstKept      string
	FirstKeptIndex int
	// Target is a leaf control line's targetId; Side is true for entries
	// appended with appendMode "side", which do not move the active leaf.
	Target string
	Side   bool
}

// IsMessage reports whether the node's entry reaches the model as a message
// (a message, a custom_message or a branch_summary entry).
func (n *Node) IsMessage() bool {
	return n.Kind == bs.KindEntry && (n.Type == "message" || n.Type == "custom_message" || n.Type == "branch_summary")
}

// Header is the parsed session header (the first line of type "session").
type Header struct {
	// Line is the header's line number, or 0 when there is none.
	Line int
	// Version is the format version: 1 when the header has none.
	Version int
	// ID is the session id; Cwd the working directory; ParentSession the
	// path of the session this one was forked from.
	ID, Cwd, ParentSession string
	// Timestamp is the header's time.
	Timestamp time.Time
}

// Transcript is a JSONL transcript that has been read and indexed. It
// holds an index of every line (Node), not the lines' bytes; Entries reads
// them again from disk, streaming.
//
// A Transcript is immutable after Open and safe for concurrent use.
type Transcript struct {
	ref     bs.SessionRef
	version bs.Version
	size    int64
	header  Header
	nodes   []Node
	byID    map[string]int
	leaf    int // node index of the active leaf, -1 when there is none
	path    []int
	// terminated is false when the file's last byte is not "\n".
	terminated bool
}

var _ bs.Transcript = (*Transcript)(nil)

// Open reads and indexes the transcript at path. ref describes the session
// when known; its Path is set to path. Open streams the file and keeps only
// the index in memory. It never writes anything.
func Open(ctx context.Context, path string, ref bs.SessionRef) (*Transcript, error) {
	f, err := openTranscriptFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v, err := hostfile.FingerprintFile(f)
	if err != nil {
		return nil, fmt.Errorf("open transcript %s: %w", path, err)
	}
	ref.Path = path
	if ref.ID == "" {
		ref.ID = sessionIDFromPath(path)
	}
	t, err := read(ctx, io.NewSectionReader(f, 0, v.Size), path)
	if err != nil {
		return nil, err
	}
	t.ref, t.version, t.size = ref, v, v.Size
	return t, nil
}

// ReadTranscript indexes a transcript read from r. It is Open without a
// file: Version is zero and Entries is not available.
func ReadTranscript(ctx context.Context, r io.Reader) (*Transcript, error) {
	return read(ctx, r, "")
}

func openTranscriptFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open transcript: %s does not exist (expected a .jsonl transcript file): %w", path, bs.ErrNotFound)
		}
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open transcript: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open transcript: %s is a %s, expected a .jsonl transcript file: %w", path, describeMode(st.Mode()), bs.ErrInvalid)
	}
	return f, nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

func sessionIDFromPath(path string) string {
	base := filepath.Base(path)
	if ext := filepath.Ext(base); ext == ".jsonl" {
		base = base[:len(base)-len(ext)]
	}
	return base
}

// extras are the few members the index needs beyond the parsed view. They
// are decoded only from the rare lines that carry them.
type extras struct {
	Version             *int    `json:"version"`
	ID                  *string `json:"id"`
	Cwd                 string  `json:"cwd"`
	ParentSession       string  `json:"parentSession"`
	FirstKeptEntryID    *string `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *int    `json:"firstKeptEntryIndex"`
	TargetID            *string `json:"targetId"`
	AppendMode          string  `json:"appendMode"`
}

func read(ctx context.Context, r io.Reader, path string) (*Transcript, error) {
	ix := NewIndexer(path)
	rd := NewReader(r)
	for rd.Next() {
		if rd.Line()%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ix.Add(rd.LiteEntry(), rd.Terminated())
	}
	if err := rd.Err(); err != nil {
		if path != "" {
			return nil, fmt.Errorf("read transcript %s: %w", path, err)
		}
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return ix.Transcript(bs.SessionRef{Path: path}, bs.Version{}), nil
}

// Indexer builds a Transcript from entries fed in file order. It lets a
// caller that streams a transcript for its own purpose (an extraction pass)
// get the index from the same read.
type Indexer struct {
	t        *Transcript
	path     string
	sawEntry bool
}

// NewIndexer returns an Indexer; path is used in malformed-line errors.
func NewIndexer(path string) *Indexer {
	return &Indexer{t: &Transcript{byID: make(map[string]int), leaf: -1, terminated: true}, path: path}
}

// Add records the next line. e may be a full or a lite entry (its Strings
// are not used); terminated tells whether the line ended with "\n".
func (ix *Indexer) Add(e *bs.Entry, terminated bool) {
	t := ix.t
	n := Node{Line: e.Line, Offset: e.Offset, Len: len(e.Raw), Kind: e.Kind, Err: e.Err,
		Type: e.Type, ID: e.ID, ParentID: e.ParentID, Role: e.Role, CustomType: e.CustomType,
		Timestamp: e.Timestamp, FirstKeptIndex: -1}
	if len(e.Blocks) > 0 {
		n.BlockTypes = make([]string, len(e.Blocks))
		for i, b := range e.Blocks {
			n.BlockTypes[i] = b.Type
		}
	}
	if e.Kind == bs.KindMalformed && ix.path != "" {
		n.Err = lineError(ix.path, e)
	}
	needExtras := e.Kind == bs.KindHeader || e.Type == "compaction" || e.Type == "leaf" || containsAppendMode(e.Raw)
	if needExtras && e.Kind != bs.KindMalformed {
		var x extras
		if err := json.Unmarshal(e.Raw, &x); err == nil {
			if x.FirstKeptEntryID != nil {
				n.FirstKept = *x.FirstKeptEntryID
			}
			if x.FirstKeptEntryIndex != nil {
				n.FirstKeptIndex = *x.FirstKeptEntryIndex
			}
			if x.TargetID != nil {
				n.Target = *x.TargetID
			}
			n.Side = x.AppendMode == "side"
			if e.Kind == bs.KindHeader && t.header.Line == 0 && !ix.sawEntry {
				t.header = Header{Line: e.Line, Version: 1, Cwd: x.Cwd, ParentSession: x.ParentSession, Timestamp: e.Timestamp}
				if x.Version != nil {
					t.header.Version = *x.Version
				}
				if x.ID != nil {
					t.header.ID = *x.ID
				}
			}
		}
	}
	if e.Kind == bs.KindEntry {
		ix.sawEntry = true
	}
	t.terminated = terminated
	t.nodes = append(t.nodes, n)
}

// Transcript finishes the index and returns the Transcript for ref, read
// at version v (its size bounds Entries). The Indexer must not be used
// afterwards.
func (ix *Indexer) Transcript(ref bs.SessionRef, v bs.Version) *Transcript {
	t := ix.t
	t.index()
	if ref.Path != "" && ref.ID == "" {
		ref.ID = sessionIDFromPath(ref.Path)
	}
	t.ref, t.version, t.size = ref, v, v.Size
	ix.t = nil
	return t
}

func containsAppendMode(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"appendMode"`))
}

// index builds the id map, the active leaf and the active path.
func (t *Transcript) index() {
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Kind == bs.KindEntry && n.ID != "" {
			t.byID[n.ID] = i
		}
	}
	linear := t.header.Version < 2
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Kind != bs.KindEntry {
			continue
		}
		switch {
		case n.Type == "leaf" && !linear:
			if n.Target == "" {
				continue
			}
			if j, ok := t.byID[n.Target]; ok {
				t.leaf = j
			}
		case n.Side && !linear:
		default:
			t.leaf = i
		}
	}
	if t.leaf < 0 {
		return
	}
	if linear {
		for i := range t.nodes {
			if t.nodes[i].Kind == bs.KindEntry && i <= t.leaf {
				t.path = append(t.path, i)
			}
		}
		return
	}
	seen := make(map[int]bool)
	for i := t.leaf; i >= 0 && !seen[i]; {
		seen[i] = true
		t.path = append(t.path, i)
		p := t.nodes[i].ParentID
		if p == "" {
			break
		}
		j, ok := t.byID[p]
		if !ok {
			break
		}
		i = j
	}
	for l, r := 0, len(t.path)-1; l < r; l, r = l+1, r-1 {
		t.path[l], t.path[r] = t.path[r], t.path[l]
	}
}

// Ref returns the session the transcript belongs to.
func (t *Transcript) Ref() bs.SessionRef { return t.ref }

// Version returns the fingerprint of the file as it was read.
func (t *Transcript) Version() bs.Version { return t.version }

// Header returns the session header.
func (t *Transcript) Header() Header { return t.header }

// Nodes returns the index of every line in file order. The caller must not
// modify the returned slice.
func (t *Transcript) Nodes() []Node { return t.nodes }

// Node returns the node of the entry with the given id.
func (t *Transcript) Node(id string) (*Node, bool) {
	i, ok := t.byID[id]
	if !ok {
		return nil, false
	}
	return &t.nodes[i], true
}

// Terminated reports whether the file ends with "\n" (or is empty).
func (t *Transcript) Terminated() bool { return t.terminated }

// Leaf returns the active leaf: the last entry line, or the target of the
// last valid leaf control line (OpenClaw ≥ 2026.5.28); side appends do not
// move it. ok is false for a transcript without entries.
func (t *Transcript) Leaf() (n *Node, ok bool) {
	if t.leaf < 0 {
		return nil, false
	}
	return &t.nodes[t.leaf], true
}

// ActivePath returns the indexes (into Nodes) of the entries from the root
// to the active leaf. For a v1 transcript, which has no tree, it is every
// entry in file order.
func (t *Transcript) ActivePath() []int { return t.path }

// EntryCount returns the number of entry lines (not the header, blank or
// malformed lines).
func (t *Transcript) EntryCount() int {
	n := 0
	for i := range t.nodes {
		if t.nodes[i].Kind == bs.KindEntry {
			n++
		}
	}
	return n
}

// Malformed returns a LineError for every malformed line.
func (t *Transcript) Malformed() []*bs.LineError {
	var out []*bs.LineError
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Kind != bs.KindMalformed {
			continue
		}
		var le *bs.LineError
		if errors.As(n.Err, &le) {
			out = append(out, le)
		} else {
			out = append(out, &bs.LineError{Path: t.ref.Path, Line: n.Line, Err: n.Err})
		}
	}
	return out
}

// BranchPoints returns the number of entries (or roots, counted as one
// "root" parent) that have more than one child.
func (t *Transcript) BranchPoints() int {
	kids := make(map[string]int)
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Kind != bs.KindEntry {
			continue
		}
		p := n.ParentID
		if p == "" {
			p = "\x00root"
		}
		kids[p]++
	}
	c := 0
	for _, k := range kids {
		if k > 1 {
			c++
		}
	}
	return c
}

// Compactions returns the indexes (into Nodes) of every compaction entry
// in file order.
func (t *Transcript) Compactions() []int {
	var out []int
	for i := range t.nodes {
		if t.nodes[i].Kind == bs.KindEntry && t.nodes[i].Type == "compaction" {
			out = append(out, i)
		}
	}
	return out
}

// Context describes what the host builds from the active path for the
// model, computed as pi's buildSessionContext does.
type Context struct {
	// Compaction is the index (into Nodes) of the latest compaction on the
	// active path, or -1.
	Compaction int
	// FirstKept is the index of the compaction's first kept entry, or -1.
	FirstKept int
	// Messages are the indexes of the entries that become context messages,
	// in order. The compaction summary, when there is one, comes first and
	// is not listed here.
	Messages []int
}

// Count returns the number of context messages, the compaction summary
// included.
func (c Context) Count() int {
	if c.Compaction >= 0 {
		return len(c.Messages) + 1
	}
	return len(c.Messages)
}

// Context returns the model context the host builds from the active path.
func (t *Transcript) Context() Context {
	c := Context{Compaction: -1, FirstKept: -1}
	comp := -1
	for k, i := range t.path {
		if t.nodes[i].Type == "compaction" {
			comp = k
		}
	}
	isMsg := func(n *Node) bool {
		return n.Type == "message" || n.Type == "custom_message" || n.Type == "branch_summary"
	}
	if comp < 0 {
		for _, i := range t.path {
			if isMsg(&t.nodes[i]) {
				c.Messages = append(c.Messages, i)
			}
		}
		return c
	}
	cn := &t.nodes[t.path[comp]]
	// For v1, firstKeptEntryIndex indexes pi's entries array, where the
	// header is 0: the count of header and entry lines before a node.
	var v1Index []int
	if t.header.Version < 2 {
		v1Index = make([]int, len(t.nodes))
		k := 0
		for j := range t.nodes {
			v1Index[j] = k
			if t.nodes[j].Kind == bs.KindEntry || t.nodes[j].Kind == bs.KindHeader {
				k++
			}
		}
	}
	c.Compaction = t.path[comp]
	found := false
	for k := 0; k < comp; k++ {
		i := t.path[k]
		n := &t.nodes[i]
		if !found {
			if t.header.Version < 2 {
				found = cn.FirstKeptIndex >= 0 && v1Index[i] >= cn.FirstKeptIndex
			} else {
				found = n.ID != "" && n.ID == cn.FirstKept
			}
			if found {
				c.FirstKept = i
			}
		}
		if found && isMsg(n) {
			c.Messages = append(c.Messages, i)
		}
	}
	for _, i := range t.path[comp+1:] {
		if isMsg(&t.nodes[i]) {
			c.Messages = append(c.Messages, i)
		}
	}
	return c
}

// MessagePositions returns, for every entry on the active path that reaches
// the model as a message (message and custom_message entries), its position
// counted from the end: 0 is the newest message. Entries off the active
// path are absent. The map is keyed by line number.
func (t *Transcript) MessagePositions() map[int]int {
	out := make(map[int]int)
	pos := 0
	for k := len(t.path) - 1; k >= 0; k-- {
		n := &t.nodes[t.path[k]]
		if n.Type == "message" || n.Type == "custom_message" {
			out[n.Line] = pos
			pos++
		}
	}
	return out
}

// Entries streams the transcript's lines from disk in order. It yields an
// error wrapping brainsurgeon.ErrChanged when the file is no longer the
// version that was indexed. The entry is valid until the next iteration.
func (t *Transcript) Entries(ctx context.Context) iter.Seq2[*bs.Entry, error] {
	return func(yield func(*bs.Entry, error) bool) {
		if t.ref.Path == "" {
			yield(nil, fmt.Errorf("entries: transcript was not read from a file: %w", bs.ErrInvalid))
			return
		}
		f, err := openTranscriptFile(t.ref.Path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		v, err := hostfile.FingerprintFile(f)
		if err != nil {
			yield(nil, fmt.Errorf("entries %s: %w", t.ref.Path, err))
			return
		}
		if v != t.version {
			yield(nil, fmt.Errorf("entries %s: file changed since it was read: %w", t.ref.Path, bs.ErrChanged))
			return
		}
		rd := NewReader(io.NewSectionReader(f, 0, t.size))
		for rd.Next() {
			if rd.Line()%1024 == 0 {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
			}
			if !yield(rd.Entry(), nil) {
				return
			}
		}
		if err := rd.Err(); err != nil {
			yield(nil, fmt.Errorf("entries %s: %w", t.ref.Path, err))
		}
	}
}
