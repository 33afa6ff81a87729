package restore_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
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

// migrateV1 gives a v1 transcript (no entry ids: pi's oldest format, as
// the pi-mono fixtures are) the ids pi gives it when it opens one: each
// entry gets an id and the previous entry as parent, a compaction's
// "firstKeptEntryIndex" (an index among the file's JSON lines, header
// included) becomes "firstKeptEntryId", and the header says version 3.
// It returns nil for a transcript that is not v1.
func migrateV1(data []byte) []byte {
	var lines [][]byte
	for _, l := range bytes.SplitAfter(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 && json.Valid(bytes.TrimSpace(l)) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	var head struct {
		Type    string `json:"type"`
		Version *int   `json:"version"`
	}
	if json.Unmarshal(lines[0], &head) != nil || head.Type != "session" || head.Version != nil {
		return nil
	}
	ids := make([]string, len(lines))
	for i := 1; i < len(lines); i++ {
		ids[i] = fmt.Sprintf("%08x", 0xa0000000+i)
	}
	var out bytes.Buffer
	for i, l := range lines {
		if i == 0 {
			out.WriteString(`{"version":3,`)
			out.Write(l[1:])
			continue
		}
		var e struct {
			ID    *string `json:"id"`
			Type  string  `json:"type"`
			Index *int    `json:"firstKeptEntryIndex"`
		}
		if json.Unmarshal(l, &e) != nil || e.ID != nil {
			return nil // not an object, or ids already
		}
		if e.Type == "compaction" && e.Index != nil {
			sp, err := jsonedit.Remove(l, "", "firstKeptEntryIndex")
			if err != nil {
				return nil
			}
			l = jsonedit.Apply(l, sp)
			if k := *e.Index; k > 0 && k < len(lines) {
				l = append([]byte(`{"firstKeptEntryId":"`+ids[k]+`",`), l[1:]...)
			}
		}
		parent := "null"
		if i > 1 {
			parent = `"` + ids[i-1] + `"`
		}
		fmt.Fprintf(&out, `{"id":%q,"parentId":%s,`, ids[i], parent)
		out.Write(l[1:])
	}
	return out.Bytes()
}

// oracleMaxBytes is the size up to which TestRepairCorpusRoundTrip asks
// pi to load a repaired transcript.
const oracleMaxBytes = 1 << 20

// repairedCopy is a repaired transcript kept for pi to load once the
// round trips are done.
type repairedCopy struct {
	name, path, leaf string
	inContext        bool
}

// TestRepairCorpusRoundTrip inserts an entry into copies of every corpus
// transcript (a v1 one migrated as pi migrates it), after a message on the
// active path that has a child there, re-parents the child to it
// (ApplyRepair), then restores pristine: the file must be byte-identical
// to the original. pi then loads a copy of each repaired transcript, in
// one batch, and must show the new entry on its path.
func TestRepairCorpusRoundTrip(t *testing.T) {
	useOracle := oracle.Optional(t)
	corpus := corpusFiles(t)
	const id = "5eed0001"
	text := "synthetic entry " + id
	message := fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1771608600000}`, text)
	keep := t.TempDir()
	var mu sync.Mutex
	var copies []repairedCopy
	// pi's process starts while the round trips run.
	warm := make(chan error, 1)
	if useOracle {
		go func() {
			_, err := oracle.Summary(ctx(), corpus[0])
			warm <- err
		}()
	} else {
		warm <- nil
	}
	t.Run("files", func(t *testing.T) {
		for n, f := range corpus {
			t.Run(corpusName(f), func(t *testing.T) {
				t.Parallel()
				orig := read(t, f)
				if m := migrateV1(orig); m != nil {
					orig = m
				}
				path := activePath(orig)
				// After the last compaction on the path, so that pi's
				// context shows the new entry.
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
					t.Skipf("no message with a child on the active path (%d entries on it)", len(path))
				}
				anchor, child := path[cands[len(cands)/2]], path[cands[len(cands)/2]+1]
				dir, ref := install(t, "s1", orig)
				r := newRestorer(dir)
				line := []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-02-20T17:30:00.000Z","message":%s}`, id, anchor.ID, message))
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
				// pi loads the smaller files only, to keep the test fast;
				// every file makes the byte-level round trip.
				if useOracle && len(orig) <= oracleMaxBytes {
					p := filepath.Join(keep, fmt.Sprintf("%03d.jsonl", n))
					if err := os.WriteFile(p, repaired, 0o600); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					copies = append(copies, repairedCopy{name: corpusName(f), path: p, leaf: path[len(path)-1].ID, inContext: inContext})
					mu.Unlock()
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
	})
	if err := <-warm; err != nil {
		t.Fatal(err)
	}
	if len(copies) == 0 {
		return
	}
	files := make([]string, len(copies))
	for i, c := range copies {
		files[i] = c.path
	}
	sums, err := oracle.Summary(ctx(), files...)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(message))
	sha := hex.EncodeToString(sum[:])[:16]
	for i, c := range copies {
		s := sums[i]
		if s.Leaf() != c.leaf {
			t.Errorf("%s: pi's leaf %q, want %s", c.name, s.Leaf(), c.leaf)
		}
		n := 0
		for _, m := range s.Messages {
			if m.Sha == sha && m.Bytes == len(message) {
				n++
			}
		}
		if want := map[bool]int{true: 1}[c.inContext]; n != want {
			t.Errorf("%s: pi's context holds the inserted entry %d times, want %d", c.name, n, want)
		}
	}
	t.Logf("pi loaded %d repaired transcripts", len(copies))
}
