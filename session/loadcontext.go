package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// LoadedContext is the model context of a session as the host builds it
// from a compaction boundary (pi's buildSessionContext), read without
// indexing the whole transcript.
type LoadedContext struct {
	// Leaf is the id of the active leaf.
	Leaf string
	// Compaction is the latest compaction entry on the active path, or nil
	// when there is none. Its summary is the first context message.
	Compaction *bs.Entry
	// Entries are the entries that become the other context messages, in
	// order: the path's message, custom_message and branch_summary entries
	// from the compaction's firstKeptEntryId up to the compaction, then
	// those after it. Each carries its Raw bytes (the caller's to keep),
	// Offset and parsed view; Line is 0 when the transcript was read from
	// the end (line numbers are unknown there).
	Entries []*bs.Entry
	// FullRead is true when the transcript had to be read from the start
	// (a v1 transcript, a leaf control line, a parent that could not be
	// found before its child, a duplicate id); FullReadReason says why.
	FullRead       bool
	FullReadReason string
}

// LoadContext builds the session's model context from the end of its
// transcript (see LoadContext).
func (s *Store) LoadContext(ctx context.Context, ref bs.SessionRef) (LoadedContext, error) {
	if ref.Path == "" {
		return LoadedContext{}, fmt.Errorf("load context of %s: the ref has no transcript path: %w", ref, bs.ErrInvalid)
	}
	return LoadContext(ctx, ref.Path, ref)
}

// loadChunk is how much LoadContext reads at a time from the end.
const loadChunk = 256 << 10

// LoadContext builds the model context of the transcript at path as pi's
// buildSessionContext does, reading the file backwards from its end: the
// last entry line is the leaf; parent ids are followed back to the latest
// compaction on the active path and on to its firstKeptEntryId, and
// nothing before that is read. When that shortcut cannot be trusted (a v1
// transcript, whose path is the file order; a leaf control line; a parent
// not found before its child; an id that appears twice) it reads the whole
// file with Open and says so in FullRead. The result equals Open followed
// by Transcript.Context.
func LoadContext(ctx context.Context, path string, ref bs.SessionRef) (LoadedContext, error) {
	f, err := openTranscriptFile(path)
	if err != nil {
		return LoadedContext{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return LoadedContext{}, fmt.Errorf("load context of %s: %w", path, err)
	}
	lc, why, err := loadFromEnd(ctx, f, fi.Size())
	if err != nil {
		return LoadedContext{}, fmt.Errorf("load context of %s: %w", path, err)
	}
	if why == "" {
		return lc, nil
	}
	return loadFull(ctx, path, ref, why)
}

// loadFull is LoadContext's fallback: Open, then Context.
func loadFull(ctx context.Context, path string, ref bs.SessionRef, why string) (LoadedContext, error) {
	tr, err := Open(ctx, path, ref, nil)
	if err != nil {
		return LoadedContext{}, err
	}
	lc := LoadedContext{FullRead: true, FullReadReason: why}
	if leaf, ok := tr.Leaf(); ok {
		lc.Leaf = leaf.ID
	}
	c := tr.Context()
	var lines []int
	if c.Compaction >= 0 {
		lines = append(lines, tr.nodes[c.Compaction].Line)
	}
	for _, i := range c.Messages {
		lines = append(lines, tr.nodes[i].Line)
	}
	byLine := make(map[int]*bs.Entry, len(lines))
	if len(lines) > 0 {
		sorted := append([]int(nil), lines...)
		sortInts(sorted)
		for e, err := range tr.Lines(ctx, sorted) {
			if err != nil {
				return LoadedContext{}, err
			}
			byLine[e.Line] = entry.Parse(e.Raw, e.Line, e.Offset)
		}
	}
	k := 0
	if c.Compaction >= 0 {
		lc.Compaction = byLine[lines[0]]
		k = 1
	}
	for _, l := range lines[k:] {
		lc.Entries = append(lc.Entries, byLine[l])
	}
	return lc, nil
}

func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// reverseLines reads a file's lines from the end.
type reverseLines struct {
	f    io.ReaderAt
	pos  int64  // file offset of buf[0]
	buf  []byte // file[pos : pos+len(buf)], up to a line boundary
	done bool
}

// prev returns the line before the ones already returned (without its
// "\n") and its offset; ok is false at the start of the file.
func (r *reverseLines) prev() (line []byte, off int64, ok bool, err error) {
	for {
		if i := bytes.LastIndexByte(r.buf, '\n'); i >= 0 {
			line, off = r.buf[i+1:], r.pos+int64(i+1)
			r.buf = r.buf[:i]
			return line, off, true, nil
		}
		if r.pos == 0 {
			if r.done {
				return nil, 0, false, nil
			}
			r.done = true
			return r.buf, 0, true, nil
		}
		n := min(int64(loadChunk), r.pos)
		nb := make([]byte, int(n)+len(r.buf))
		if _, err := r.f.ReadAt(nb[:n], r.pos-n); err != nil {
			return nil, 0, false, err
		}
		copy(nb[n:], r.buf)
		r.buf, r.pos = nb, r.pos-n
	}
}

// headerVersion reads the format version of the file's first line, or 0
// when the first line is not a session header.
func headerVersion(f io.ReaderAt, size int64) (int, error) {
	buf := make([]byte, min(size, 64<<10))
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return 0, nil
	}
	e := entry.ParseLite(buf[:i], 1, 0)
	if e.Kind != bs.KindHeader {
		return 0, nil
	}
	var h struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(buf[:i], &h) != nil {
		return 0, nil
	}
	if h.Version == nil {
		return 1, nil
	}
	return *h.Version, nil
}

// loadFromEnd is LoadContext's shortcut. It returns a non-empty reason
// when the shortcut cannot be trusted and the whole file must be read.
func loadFromEnd(ctx context.Context, f *os.File, size int64) (LoadedContext, string, error) {
	var lc LoadedContext
	v, err := headerVersion(f, size)
	if err != nil {
		return lc, "", err
	}
	if v < 2 {
		return lc, "no v2+ session header on the first line (a v1 transcript's path is its file order)", nil
	}
	r := &reverseLines{f: f, pos: size}
	seen := make(map[string]bool) // ids of the lines passed so far
	want := ""                    // the id of the next entry on the path
	started := false              // the leaf was found
	var comp *bs.Entry
	firstKept := ""
	var after, kept []*bs.Entry // newest first
	n := 0
	for {
		raw, off, ok, err := r.prev()
		if err != nil {
			return lc, "", err
		}
		if !ok {
			break
		}
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return lc, "", err
			}
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		e := entry.ParseLite(raw, 0, off)
		if e.Kind != bs.KindEntry {
			continue
		}
		onPath := false
		switch {
		case !started:
			if e.Type == "leaf" {
				return lc, "the active leaf is set by a leaf control line", nil
			}
			if e.AppendMode == "side" {
				break
			}
			started, onPath = true, true
			lc.Leaf = e.ID
		case e.ID != "" && e.ID == want:
			onPath = true
		}
		if e.ID != "" {
			if seen[e.ID] {
				if onPath {
					return lc, fmt.Sprintf("entry id %q appears more than once", e.ID), nil
				}
			}
			seen[e.ID] = true
		}
		if !onPath {
			continue
		}
		isMsg := bs.IsMessageLine(e.Type, raw)
		switch {
		case comp == nil && e.Type == "compaction":
			comp = entry.Parse(bytes.Clone(raw), 0, off)
			var x struct {
				FirstKept *string `json:"firstKeptEntryId"`
			}
			if json.Unmarshal(raw, &x) == nil && x.FirstKept != nil {
				firstKept = *x.FirstKept
			}
		case comp == nil && isMsg:
			after = append(after, entry.Parse(bytes.Clone(raw), 0, off))
		case comp != nil && isMsg:
			kept = append(kept, entry.Parse(bytes.Clone(raw), 0, off))
		}
		if comp != nil && firstKept != "" && e.ID == firstKept {
			// The first kept entry: nothing before it is context.
			return finish(lc, comp, kept, after), "", nil
		}
		want = e.ParentID
		if want == "" {
			// The root: with no compaction, or a firstKeptEntryId not on
			// the path, the context is complete.
			if comp != nil {
				kept = nil // pi keeps nothing before a compaction whose first kept entry it never meets
			}
			return finish(lc, comp, kept, after), "", nil
		}
		if seen[want] {
			return lc, fmt.Sprintf("parent %q of entry %q comes after it in the file", want, e.ID), nil
		}
	}
	if !started {
		return lc, "", nil // no entries: an empty context
	}
	return lc, fmt.Sprintf("parent %q not found before its child", want), nil
}

// finish puts the context together: kept and after are newest first.
func finish(lc LoadedContext, comp *bs.Entry, kept, after []*bs.Entry) LoadedContext {
	lc.Compaction = comp
	for i := len(kept) - 1; i >= 0; i-- {
		lc.Entries = append(lc.Entries, kept[i])
	}
	for i := len(after) - 1; i >= 0; i-- {
		lc.Entries = append(lc.Entries, after[i])
	}
	return lc
}
