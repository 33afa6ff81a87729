package restore_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// activePath returns the entries from the root to the leaf (the last
// entry of the file, as pi takes it), following "parentId".
func activePath(data []byte) []*bs.Entry {
	byID := map[string]*bs.Entry{}
	var leaf *bs.Entry
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		e := r.Entry()
		if e.Kind != bs.KindEntry || e.ID == "" {
			continue
		}
		c := *e
		c.Raw = bytes.Clone(e.Raw)
		byID[c.ID] = &c
		leaf = &c
	}
	var path []*bs.Entry
	seen := map[string]bool{}
	for e := leaf; e != nil && !seen[e.ID]; e = byID[e.ParentID] {
		seen[e.ID] = true
		path = append([]*bs.Entry{e}, path...)
		if e.ParentID == "" {
			break
		}
	}
	return path
}

// oracleMaxBytes is the size up to which TestRepairCorpusRoundTrip asks
// pi to load a repaired transcript.
const oracleMaxBytes = 1 << 20

// TestRepairCorpusRoundTrip inserts an entry into copies of every corpus
// transcript, after a message on the active path that has a child there,
// re-parents the child to it (ApplyRepair), checks that pi loads the new
// entry on its path, then restores pristine: the file must be
// byte-identical to the original.
func TestRepairCorpusRoundTrip(t *testing.T) {
	useOracle := oracle.Optional(t)
	for _, f := range corpusFiles(t) {
		t.Run(corpusName(f), func(t *testing.T) {
			orig := read(t, f)
			path := activePath(orig)
			// After the last compaction on the path, so that pi's context
			// shows the new entry.
			from := 0
			for i, e := range path {
				if e.Type == "compaction" {
					from = i + 1
				}
			}
			withChild := func(from int) []int {
				var out []int
				for i := from; i+1 < len(path); i++ {
					if path[i].Type == "message" && path[i+1].ParentID == path[i].ID {
						out = append(out, i)
					}
				}
				return out
			}
			inContext := true
			cands := withChild(from)
			if len(cands) == 0 {
				// Before the compaction: pi's context summarises it.
				inContext, cands = false, withChild(0)
			}
			if len(cands) == 0 {
				t.Skipf("no message with a child on the active path (%d entries on it; a v1 transcript has no entry ids)", len(path))
			}
			anchor, child := path[cands[len(cands)/2]], path[cands[len(cands)/2]+1]
			dir, ref := install(t, "s1", orig)
			r := newRestorer(dir)
			const id = "5eed0001"
			text := "synthetic entry " + id
			line := []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-02-20T17:30:00.000Z","message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1771608600000}}`, id, anchor.ID, text))
			rep := restore.Repair{Base: version(t, ref), Op: "doctor_fix",
				Inserts:   []restore.Insert{{AfterLine: anchor.Line, AfterID: anchor.ID, Entries: [][]byte{line}, IDs: []string{id}}},
				Reparents: []restore.Reparent{{Line: child.Line, EntryID: child.ID, Parent: id}},
			}
			if err := r.ApplyRepair(ctx(), ref, rep); err != nil {
				t.Fatal(err)
			}
			repaired := read(t, ref.Path)
			if np := activePath(repaired); len(np) != len(path)+1 {
				t.Fatalf("active path after the repair: %d entries, want %d", len(np), len(path)+1)
			}
			// pi is asked about the smaller files only, to keep the test
			// fast; every file makes the byte-level round trip.
			if useOracle && len(orig) <= oracleMaxBytes {
				c, err := oracle.Context(ctx(), ref.Path)
				if err != nil {
					t.Fatal(err)
				}
				if c.LeafID == nil || *c.LeafID != path[len(path)-1].ID {
					t.Fatalf("pi's leaf %v, want %s", c.LeafID, path[len(path)-1].ID)
				}
				n := 0
				for _, m := range c.Messages {
					if bytes.Contains(m, []byte(`"`+text+`"`)) {
						n++
					}
				}
				if want := map[bool]int{true: 1}[inContext]; n != want {
					t.Fatalf("pi's context holds the inserted entry %d times, want %d", n, want)
				}
			}
			res, err := r.RestoreAll(ctx(), ref, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := read(t, ref.Path); !bytes.Equal(got, orig) {
				t.Fatalf("pristine: %s\n%+v", firstDiff(orig, got), res)
			}
			if res.LinesRemoved != 1 || !res.Pristine {
				b, _ := json.Marshal(res)
				t.Fatalf("pristine result: %s", b)
			}
		})
	}
}
