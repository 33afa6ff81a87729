package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// Node is the index record of one transcript line (see brainsurgeon.Node).
type Node = bs.Node

// Header is the parsed session header (see brainsurgeon.Header).
type Header = bs.Header

// Context describes the model context (see brainsurgeon.Context).
type Context = bs.Context

// Index is the tree of a transcript: one Node per line, the header, the
// active leaf and path. Every backend builds one with an Indexer from the
// lines it reads, so tree, context and message positions follow the same
// rules whatever stores the lines. An Index is immutable once built and
// safe for concurrent use.
type Index struct {
	name   string
	header Header
	nodes  []Node
	byID   map[string]int
	leaf   int // node index of the active leaf, -1 when there is none
	path   []int
	// terminated is false when the file's last byte is not "\n".
	terminated bool
}

// Transcript is a JSONL transcript that has been read and indexed. It
// holds the Index of every line, not the lines' bytes; Entries and Entry
// read them again from disk.
//
// A Transcript is immutable after Open and safe for concurrent use.
type Transcript struct {
	*Index
	ref     bs.SessionRef
	version bs.Version
	stamp   hostfile.Stamp
}

var _ bs.Transcript = (*Transcript)(nil)

// Open reads and indexes the transcript at path. ref describes the session
// when known; its Path is set to path. A file that is not a transcript
// (IsTranscript) is refused with an error wrapping ErrNotTranscript. Open streams the file and keeps only
// the index in memory; when v is not nil its Visit sees every line during
// that read. It never writes anything.
func Open(ctx context.Context, path string, ref bs.SessionRef, v *bs.Visitor) (*Transcript, error) {
	f, err := openTranscriptFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := hostfile.FingerprintFile(f)
	if err != nil {
		return nil, fmt.Errorf("open transcript %s: %w", path, err)
	}
	if err := checkHead(f, st.Size, path); err != nil {
		return nil, err
	}
	ref.Path = path
	if ref.ID == "" {
		ref.ID = sessionIDFromPath(path)
	}
	if ref.Backend == "" {
		ref.Backend = bs.BackendJSONL
	}
	var ix *Index
	if st.Size >= parallelMin && runtime.GOMAXPROCS(0) > 1 && (v == nil || v.Visit == nil || v.Concurrent) {
		ix, err = readParallel(ctx, io.NewSectionReader(f, 0, st.Size), path, v, st.Size)
	} else {
		ix, err = read(ctx, io.NewSectionReader(f, 0, st.Size), path, v, st.Size)
	}
	if err != nil {
		return nil, err
	}
	return &Transcript{Index: ix, ref: ref, version: st.Version(), stamp: st}, nil
}

// ReadIndex indexes a transcript read from r, for a caller that has the
// bytes but no store. name is used in malformed-line errors.
func ReadIndex(ctx context.Context, r io.Reader, name string) (*Index, error) {
	return read(ctx, r, name, nil, 0)
}

func openTranscriptFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open transcript: %s does not exist (expected a .jsonl transcript file; %s): %w", path, siblings(path), bs.ErrNotFound)
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

// siblings describes the transcripts in the directory of path.
func siblings(path string) string {
	names, _ := os.ReadDir(filepath.Dir(path))
	var ids []string
	for _, n := range names {
		if ClassifyFile(n.Name()) == FileKindTranscript {
			ids = append(ids, strings.TrimSuffix(n.Name(), ".jsonl"))
		}
	}
	sort.Strings(ids)
	switch {
	case len(ids) == 0:
		return "no transcripts there"
	case len(ids) > 8:
		ids = append(ids[:8], fmt.Sprintf("… (%d in all)", len(ids)))
	}
	return "transcripts there: " + strings.Join(ids, ", ")
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

func read(ctx context.Context, r io.Reader, path string, v *bs.Visitor, size int64) (*Index, error) {
	ix := NewIndexer(path)
	ix.SizeHint(size)
	rd := NewReader(r)
	for rd.Next() {
		if rd.Line()%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if v == nil || v.Visit == nil {
			ix.Add(rd.LiteEntry(), rd.Terminated())
			continue
		}
		var e *bs.Entry
		if v.Want == nil || v.Want(rd.Raw()) {
			e = rd.Entry()
		} else {
			e = rd.LiteEntry()
		}
		ix.Add(e, rd.Terminated())
		if err := v.Visit(e); err != nil {
			return nil, err
		}
	}
	if err := rd.Err(); err != nil {
		if path != "" {
			return nil, fmt.Errorf("read transcript %s: %w", path, err)
		}
		return nil, fmt.Errorf("read transcript: %w", err)
	}
	return ix.Index(), nil
}

// Indexer builds an Index from entries fed in order. A backend feeds it
// the lines it reads; a caller that streams a transcript for its own
// purpose gets the index from the same read.
type Indexer struct {
	t        *Index
	path     string
	sawEntry bool
	// strs and blocks intern the few distinct types, roles and lists of
	// block types: one copy each instead of one per line.
	strs   map[string]string
	blocks map[string][]string
	key    []byte
	total  int64 // the input's size when known (SizeHint)
}

// intern returns the shared copy of s (types and roles repeat on every
// line); unusual long values are not kept.
func (ix *Indexer) intern(s string) string {
	if s == "" || len(s) > 32 {
		return s
	}
	if v, ok := ix.strs[s]; ok {
		return v
	}
	if ix.strs == nil {
		ix.strs = map[string]string{}
	}
	if len(ix.strs) < 256 {
		ix.strs[s] = s
	}
	return s
}

// blockTypes returns the shared list of the blocks' types.
func (ix *Indexer) blockTypes(blocks []bs.Block) []string {
	ix.key = ix.key[:0]
	for _, b := range blocks {
		ix.key = append(ix.key, b.Type...)
		ix.key = append(ix.key, 0)
	}
	if v, ok := ix.blocks[string(ix.key)]; ok {
		return v
	}
	out := make([]string, len(blocks))
	for i, b := range blocks {
		out[i] = ix.intern(b.Type)
	}
	if ix.blocks == nil {
		ix.blocks = map[string][]string{}
	}
	if len(ix.blocks) < 1024 {
		ix.blocks[string(ix.key)] = out
	}
	return out
}

// NewIndexer returns an Indexer; name (a path, or a store and session) is
// used in malformed-line errors.
func NewIndexer(name string) *Indexer {
	return &Indexer{t: &Index{name: name, byID: make(map[string]int), leaf: -1, terminated: true}, path: name}
}

// Add records the next line. e may be a full or a lite entry (its Strings
// are not used); terminated tells whether the line ended with "\n". Lines
// must be added in order: e.Line must be the number of lines added before
// plus one.
func (ix *Indexer) Add(e *bs.Entry, terminated bool) {
	t := ix.t
	n := Node{Line: e.Line, Offset: e.Offset, Len: len(e.Raw), Kind: e.Kind,
		Type: ix.intern(e.Type), ID: e.ID, ParentID: e.ParentID, Role: ix.intern(e.Role),
		Timestamp: e.Timestamp}
	if len(e.Blocks) > 0 {
		n.BlockTypes = ix.blockTypes(e.Blocks)
	}
	extra := func() *bs.NodeExtra {
		if n.Extra == nil {
			n.Extra = &bs.NodeExtra{FirstKeptIndex: -1}
		}
		return n.Extra
	}
	if e.Err != nil {
		extra().Err = e.Err
	}
	if e.CustomType != "" {
		extra().CustomType = e.CustomType
	}
	if e.Kind == bs.KindEntry && e.Type == "branch_summary" && !bs.IsMessageLine(e.Type, e.Raw) {
		extra().Silent = true
	}
	if e.Kind == bs.KindMalformed && ix.path != "" {
		extra().Err = lineError(ix.path, e)
	}
	needExtras := e.Kind == bs.KindHeader || e.Type == "compaction" || e.Type == "leaf" || e.AppendMode != ""
	if needExtras && e.Kind != bs.KindMalformed {
		var x extras
		if err := json.Unmarshal(e.Raw, &x); err == nil {
			if x.FirstKeptEntryID != nil {
				extra().FirstKept = *x.FirstKeptEntryID
			}
			if x.FirstKeptEntryIndex != nil {
				extra().FirstKeptIndex = *x.FirstKeptEntryIndex
			}
			if x.TargetID != nil {
				extra().Target = *x.TargetID
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
	if len(t.nodes) == cap(t.nodes) && ix.total > 0 && len(t.nodes) >= 256 {
		// Grow once to the expected count (lines so far scaled by the
		// bytes still to come) rather than by a quarter at a time: each
		// growth copies the whole array and holds both copies.
		read := e.Offset + int64(len(e.Raw)) + 1
		if want := int(int64(len(t.nodes))*ix.total/max(read, 1)) + len(t.nodes)/16 + 64; want > cap(t.nodes) {
			t.nodes = slices.Grow(t.nodes, want-len(t.nodes))
		}
	}
	t.nodes = append(t.nodes, n)
}

// SizeHint tells the Indexer the input's size in bytes, so that it can
// allocate for the expected number of lines instead of growing step by
// step.
func (ix *Indexer) SizeHint(bytes int64) { ix.total = bytes }

// Index finishes and returns the Index. The Indexer must not be used
// afterwards.
func (ix *Indexer) Index() *Index {
	t := ix.t
	t.index()
	ix.t = nil
	return t
}

// index builds the id map, the active leaf and the active path.
func (t *Index) index() {
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
			if n.Target() == "" {
				continue
			}
			if j, ok := t.byID[n.Target()]; ok {
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

// Size returns the transcript's size in bytes when it was read.
func (t *Transcript) Size() int64 { return t.stamp.Size }

// Header returns the session header.
func (t *Index) Header() Header { return t.header }

// Nodes returns the index of every line in file order. The caller must not
// modify the returned slice.
func (t *Index) Nodes() []Node { return t.nodes }

// Node returns the node of the entry with the given id.
func (t *Index) Node(id string) (*Node, bool) {
	i, ok := t.byID[id]
	if !ok {
		return nil, false
	}
	return &t.nodes[i], true
}

// Terminated reports whether the file ends with "\n" (or is empty).
func (t *Index) Terminated() bool { return t.terminated }

// Leaf returns the active leaf: the last entry line, or the target of the
// last valid leaf control line (OpenClaw ≥ 2026.5.28); side appends do not
// move it. ok is false for a transcript without entries.
func (t *Index) Leaf() (n *Node, ok bool) {
	if t.leaf < 0 {
		return nil, false
	}
	return &t.nodes[t.leaf], true
}

// ActivePath returns the indexes (into Nodes) of the entries from the root
// to the active leaf. For a v1 transcript, which has no tree, it is every
// entry in file order.
func (t *Index) ActivePath() []int { return t.path }

// EntryCount returns the number of entry lines (not the header, blank or
// malformed lines).
func (t *Index) EntryCount() int {
	n := 0
	for i := range t.nodes {
		if t.nodes[i].Kind == bs.KindEntry {
			n++
		}
	}
	return n
}

// Malformed returns a LineError for every malformed line.
func (t *Index) Malformed() []*bs.LineError {
	var out []*bs.LineError
	for i := range t.nodes {
		n := &t.nodes[i]
		if n.Kind != bs.KindMalformed {
			continue
		}
		var le *bs.LineError
		if errors.As(n.Err(), &le) {
			out = append(out, le)
		} else {
			out = append(out, &bs.LineError{Path: t.name, Line: n.Line, Err: n.Err()})
		}
	}
	return out
}

// BranchPoints returns the number of entries (or roots, counted as one
// "root" parent) that have more than one child (brainsurgeon.BranchPoints).
func (t *Index) BranchPoints() int { return bs.BranchPoints(t.nodes) }

// Compactions returns the indexes (into Nodes) of every compaction entry
// in file order (brainsurgeon.Compactions).
func (t *Index) Compactions() []int { return bs.Compactions(t.nodes) }

// Context returns the model context the host builds from the active path.
func (t *Index) Context() Context {
	c := Context{Compaction: -1, FirstKept: -1}
	comp := -1
	for k, i := range t.path {
		if t.nodes[i].Type == "compaction" {
			comp = k
		}
	}
	if comp < 0 {
		for _, i := range t.path {
			if t.nodes[i].IsMessage() {
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
				found = cn.FirstKeptIndex() >= 0 && v1Index[i] >= cn.FirstKeptIndex()
			} else {
				found = n.ID != "" && n.ID == cn.FirstKept()
			}
			if found {
				c.FirstKept = i
			}
		}
		if found && n.IsMessage() {
			c.Messages = append(c.Messages, i)
		}
	}
	for _, i := range t.path[comp+1:] {
		if t.nodes[i].IsMessage() {
			c.Messages = append(c.Messages, i)
		}
	}
	return c
}

// MessagePositions returns, for every entry on the active path that reaches
// the model as a message (Node.IsMessage: message, custom_message and
// branch_summary entries), its position counted from the end: 0 is the
// newest message. Entries off the active path are absent. The map is keyed
// by line number.
func (t *Index) MessagePositions() map[int]int {
	out := make(map[int]int)
	pos := 0
	for k := len(t.path) - 1; k >= 0; k-- {
		n := &t.nodes[t.path[k]]
		if n.IsMessage() {
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
		f, err := t.reopen()
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		rd := NewReader(io.NewSectionReader(f, 0, t.stamp.Size))
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

// reopen opens the file again and checks that it is still the version
// that was indexed.
func (t *Transcript) reopen() (*os.File, error) {
	f, err := openTranscriptFile(t.ref.Path)
	if err != nil {
		return nil, err
	}
	st, err := hostfile.FingerprintFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", t.ref.Path, err)
	}
	if st != t.stamp {
		f.Close()
		return nil, fmt.Errorf("read %s: file changed since it was read: %w", t.ref.Path, bs.ErrChanged)
	}
	return f, nil
}

// Entry reads one line (1-based) again from disk, with its parsed view.
// It returns an error wrapping ErrChanged when the file is no longer the
// version that was indexed, and one wrapping ErrNotFound for a line past
// the end.
func (t *Transcript) Entry(ctx context.Context, line int) (*bs.Entry, error) {
	if line < 1 || line > len(t.nodes) {
		return nil, fmt.Errorf("read %s: line %d of %d: %w", t.ref.Path, line, len(t.nodes), bs.ErrNotFound)
	}
	for e, err := range t.Lines(ctx, []int{line}) {
		if err != nil {
			return nil, err
		}
		return entry.Parse(e.Raw, line, e.Offset), nil
	}
	return nil, fmt.Errorf("read %s: line %d: nothing read: %w", t.ref.Path, line, bs.ErrChanged)
}

// Lines reads the given lines (1-based, ascending) again from disk with
// one open of the file. The entries carry Line, Offset and Raw only.
func (t *Transcript) Lines(ctx context.Context, lines []int) iter.Seq2[*bs.Entry, error] {
	r, err := t.planLines(lines)
	if err != nil {
		return func(yield func(*bs.Entry, error) bool) { yield(nil, err) }
	}
	return r.Lines(ctx)
}

// planLines returns a reader of the given lines (1-based, ascending) that
// holds their places in the file, not the transcript's index.
func (t *Transcript) planLines(lines []int) (*lineReader, error) {
	locs, err := t.Locate(lines)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.ref.Path, err)
	}
	return &lineReader{t: &Transcript{ref: t.ref, version: t.version, stamp: t.stamp}, locs: locs}, nil
}

// LineLoc is where a line is: its Offset and Len (see Node).
type LineLoc struct {
	Line   int
	Offset int64
	Len    int
}

// Locate returns the place of each given line (1-based, ascending); a
// line out of order or past the end is an error wrapping ErrInvalid.
func (t *Index) Locate(lines []int) ([]LineLoc, error) {
	out := make([]LineLoc, len(lines))
	prev := 0
	for k, line := range lines {
		if line <= prev || line > len(t.nodes) {
			return nil, fmt.Errorf("line %d (of %d, after %d): lines must be ascending and exist: %w", line, len(t.nodes), prev, bs.ErrInvalid)
		}
		prev = line
		n := &t.nodes[line-1]
		out[k] = LineLoc{Line: line, Offset: n.Offset, Len: n.Len}
	}
	return out, nil
}

// lineReader reads lines at places taken from an index (see planLines);
// t has no index, only what reopen needs.
type lineReader struct {
	t    *Transcript
	locs []LineLoc
}

// Lines streams the planned lines from disk with one open of the file.
// It yields an error wrapping brainsurgeon.ErrChanged when the file is no
// longer the version that was indexed.
func (r *lineReader) Lines(ctx context.Context) iter.Seq2[*bs.Entry, error] {
	return func(yield func(*bs.Entry, error) bool) {
		f, err := r.t.reopen()
		if err != nil {
			yield(nil, err)
			return
		}
		defer f.Close()
		// Lines close to each other are read with one call: at the
		// corpus's density a pass reads a line in four, and 20,000 small
		// reads cost more than reading the gaps.
		for i := 0; i < len(r.locs); {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			start, end := r.locs[i].Offset, r.locs[i].Offset+int64(r.locs[i].Len)
			j := i + 1
			for ; j < len(r.locs); j++ {
				l := r.locs[j]
				if l.Offset-end > readGap || l.Offset+int64(l.Len)-start > readChunk {
					break
				}
				end = max(end, l.Offset+int64(l.Len))
			}
			buf := make([]byte, end-start)
			if _, err := f.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && end == start) {
				yield(nil, fmt.Errorf("read %s: lines %d to %d: %w", r.t.ref.Path, r.locs[i].Line, r.locs[j-1].Line, err))
				return
			}
			for _, l := range r.locs[i:j] {
				from := l.Offset - start
				raw := buf[from : from+int64(l.Len) : from+int64(l.Len)]
				if !yield(&bs.Entry{Line: l.Line, Offset: l.Offset, Raw: raw}, nil) {
					return
				}
			}
			i = j
		}
	}
}

// Planned lines are read in chunks of at most readChunk bytes, joining
// lines whose gap is at most readGap.
const (
	readGap   = 64 << 10
	readChunk = 1 << 20
)

// Location returns the transcript file, for people and for the host
// formats that name it (pi's parentSession).
func (t *Transcript) Location() string { return t.ref.Path }
