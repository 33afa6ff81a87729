package restore

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// The kinds of VerifyProblem.
const (
	// ProblemMissingFile: the entry has no side file.
	ProblemMissingFile = "missing_side_file"
	// ProblemMissingValue: the side file holds no value at the
	// placeholder's path.
	ProblemMissingValue = "missing_value"
	// ProblemHashMismatch: the stored value's bytes do not match their
	// sha256 (or size).
	ProblemHashMismatch = "hash_mismatch"
	// ProblemCorruptFile: the side file cannot be read or decoded.
	ProblemCorruptFile = "corrupt_side_file"
)

// The kinds of VerifyOrphan.
const (
	// OrphanSideFile: no placeholder points to any value of the file.
	OrphanSideFile = "side_file"
	// OrphanValue: the file is in use, but no placeholder points to this
	// value.
	OrphanValue = "value"
)

// VerifyReport is what Verify found in one session.
type VerifyReport struct {
	Session string `json:"session"`
	Backend string `json:"backend"`
	Path    string `json:"path"`
	// Placeholders counts the placeholders found in the transcript and
	// Verified those whose value is stored and intact.
	Placeholders int `json:"placeholders"`
	Verified     int `json:"verified"`
	// Entries counts the entries holding at least one placeholder.
	Entries int `json:"entries"`
	// MalformedLines counts the transcript's lines that are not exactly
	// one JSON object (invalid JSON, two glued values): they are kept as
	// they are, and a placeholder inside one is not checked.
	MalformedLines int `json:"malformed_lines"`
	// SideFiles counts the side files and Values the values they hold
	// (files that cannot be read count no values).
	SideFiles int `json:"side_files"`
	Values    int `json:"values"`
	// Problems are placeholders whose value cannot be restored.
	Problems []VerifyProblem `json:"problems"`
	// Orphans are side files and values no placeholder points to (values
	// already restored, entries gone, stray files). They are not problems:
	// retention removes them in time.
	Orphans []VerifyOrphan `json:"orphans"`
}

// OK reports whether every placeholder has its value.
func (r *VerifyReport) OK() bool { return len(r.Problems) == 0 }

// VerifyOrphan is a side file or a stored value that no placeholder points
// to.
type VerifyOrphan struct {
	Session string `json:"session"`
	EntryID string `json:"entry_id"`
	// Kind is OrphanSideFile or OrphanValue; Path is the value's JSON
	// Pointer for OrphanValue.
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`
	File   string `json:"file"`
	Bytes  int64  `json:"bytes"`
	Detail string `json:"detail"`
}

// Verify checks a session's extracted values: every placeholder in the
// transcript — a string value or a text block holding exactly its own
// entry's placeholder "[[extracted-<id>]]", or a preview ending with "…
// [[extracted-<id>]]" — must have a side record with a value at that path
// whose bytes match their sha256. A placeholder naming another entry (a
// quotation) is ignored. Side files and values that no placeholder points to
// are listed as orphans. Side files holding only bookkeeping (journal,
// redactions) and no values are not orphans.
//
// Verify only reads. It returns an error only when the transcript or the
// side store cannot be read; what it finds is in the report.
func Verify(ctx context.Context, store bs.Store, side bs.SideStore, ref bs.SessionRef) (*VerifyReport, error) {
	name := ref.String()

	// One read: the entries holding placeholders, and the ids present.
	var held, sources []*bs.Entry
	present := map[string]bool{}
	mark := []byte(extract.PlaceholderPrefix)
	visit := &bs.Visitor{Want: func(raw []byte) bool { return bytes.Contains(raw, mark) }, Visit: func(e *bs.Entry) error {
		if e.Kind != bs.KindEntry || e.ID == "" {
			return nil
		}
		present[e.ID] = true
		if !bytes.Contains(e.Raw, mark) {
			return nil
		}
		own, src := len(placeholderPointers(e)) > 0, heldSourceKey(e) != ""
		if !own && !src {
			return nil
		}
		c := *e
		c.Raw = bytes.Clone(e.Raw) // e.Raw belongs to the read
		c.Extractable = bytes.Clone(e.Extractable)
		if own {
			held = append(held, &c)
		}
		if src {
			sources = append(sources, &c)
		}
		return nil
	}}
	tr, err := store.Open(ctx, ref, visit)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", name, err)
	}
	ref = tr.Ref()
	name = ref.String()
	rep := &VerifyReport{Session: name, Backend: ref.Backend, Path: store.Location(ref), Problems: []VerifyProblem{}, Orphans: []VerifyOrphan{},
		Entries: countEntries(held, sources), MalformedLines: len(tr.Malformed())}
	infos, err := side.List(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", name, err)
	}
	files := make(map[string]int64, len(infos))
	where := make(map[string]string, len(infos))
	for _, in := range infos {
		files[in.EntryID] += in.Size
		where[in.EntryID] = in.Location
	}
	rep.SideFiles = len(files)
	type loaded struct {
		rec  *extract.Record
		path string
		err  error
	}
	recs := map[string]*loaded{}
	load := func(id string) *loaded {
		if l, ok := recs[id]; ok {
			return l
		}
		rec, err := extract.LoadRecord(ctx, side, ref, id)
		if err == nil {
			_, err = readBook(rec) // restore's members must decode too
		}
		path := where[id]
		if path == "" {
			path = "side record " + id
		}
		l := &loaded{rec: rec, path: path, err: err}
		recs[id] = l
		return l
	}

	// Each placeholder must have an intact value.
	used := map[string]map[string]bool{} // entry id → value paths pointed to
	holders := map[string]bool{}
	for _, e := range held {
		holders[e.ID] = true
		sr := sideRecord{err: fmt.Errorf("entry %s: %w", e.ID, bs.ErrNotFound)}
		if _, ok := files[e.ID]; ok {
			l := load(e.ID)
			sr = sideRecord{rec: l.rec, err: l.err, file: l.path}
		}
		if used[e.ID] == nil && sr.err == nil {
			used[e.ID] = map[string]bool{}
		}
		for _, c := range checkPlaceholders(name, e, sr) {
			rep.Placeholders++
			if sr.err == nil {
				if v, ok := valueFor(sr.rec, c.ptr); ok {
					used[e.ID][v.Path] = true
				}
			}
			if c.problem != nil {
				rep.Problems = append(rep.Problems, *c.problem)
				continue
			}
			rep.Verified++
		}
	}

	// A tool result stored at the source: its record is keyed by the
	// tool call, and its content must be there, intact.
	for _, e := range sources {
		key := heldSourceKey(e)
		holders[key] = true
		present[key] = true
		sr := sideRecord{err: fmt.Errorf("side record %s: %w", key, bs.ErrNotFound)}
		if _, ok := files[key]; ok {
			l := load(key)
			sr = sideRecord{rec: l.rec, err: l.err, file: l.path}
		}
		rep.Placeholders++
		c := checkSource(name, e, key, sr)
		if c.problem != nil {
			rep.Problems = append(rep.Problems, *c.problem)
			continue
		}
		if used[key] == nil {
			used[key] = map[string]bool{}
		}
		for _, v := range sr.rec.Values {
			used[key][v.Path] = true // the content and the details go together
		}
		rep.Verified++
	}

	// Orphans: files and values nothing points to.
	for _, id := range sortedKeys(files) {
		l := load(id)
		if l.err != nil {
			if !holders[id] {
				rep.Orphans = append(rep.Orphans, VerifyOrphan{Session: name, EntryID: id, Kind: OrphanSideFile,
					File: l.path, Bytes: files[id], Detail: fmt.Sprintf("unreadable, and no placeholder points to it: %v", l.err)})
			}
			continue
		}
		rep.Values += len(l.rec.Values)
		if len(l.rec.Values) == 0 {
			continue // bookkeeping only (journal, redactions)
		}
		u := used[id]
		if len(u) == 0 {
			why := "no placeholder points to it (its values are back in the transcript)"
			if !present[id] {
				why = "entry " + id + " is not in the transcript"
			}
			rep.Orphans = append(rep.Orphans, VerifyOrphan{Session: name, EntryID: id, Kind: OrphanSideFile,
				File: l.path, Bytes: l.rec.RawBytes(), Detail: why})
			continue
		}
		for _, v := range l.rec.Values {
			if !u[v.Path] {
				rep.Orphans = append(rep.Orphans, VerifyOrphan{Session: name, EntryID: id, Kind: OrphanValue, Path: v.Path,
					File: l.path, Bytes: int64(v.Size), Detail: "no placeholder points to this value (it is back in the transcript)"})
			}
		}
	}
	sort.SliceStable(rep.Problems, func(i, j int) bool { return rep.Problems[i].Line < rep.Problems[j].Line })
	return rep, nil
}

// countEntries counts the distinct entries of two lists.
func countEntries(a, b []*bs.Entry) int {
	seen := map[int]bool{}
	for _, l := range [][]*bs.Entry{a, b} {
		for _, e := range l {
			seen[e.Line] = true
		}
	}
	return len(seen)
}

// isPlaceholderText reports whether s is exactly the entry's placeholder
// or a preview followed by "… " and the placeholder.
func isPlaceholderText(s, id string) bool {
	ph := extract.Placeholder(id)
	return s == ph || strings.HasSuffix(s, "… "+ph)
}

// valueFor returns the stored value a placeholder at ptr stands for: the
// value at ptr, or the whole block (an image) whose stand-in text block
// holds the placeholder at ptr.
func valueFor(rec *extract.Record, ptr string) (extract.StoredValue, bool) {
	if v, ok := rec.Value(ptr); ok {
		return v, true
	}
	if parent, ok := strings.CutSuffix(ptr, "/text"); ok {
		if v, ok := rec.Value(parent); ok && v.Block {
			return v, true
		}
	}
	return extract.StoredValue{}, false
}

func valuePaths(rec *extract.Record) string {
	if len(rec.Values) == 0 {
		return "no values"
	}
	paths := make([]string, len(rec.Values))
	for i, v := range rec.Values {
		paths[i] = v.Path
	}
	return strings.Join(paths, ", ")
}

// stringText returns the text of a raw JSON string, or "" when raw is not
// a valid one.
func stringText(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	u, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		return ""
	}
	return string(u)
}
