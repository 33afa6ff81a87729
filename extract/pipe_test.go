package extract_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// generated writes a generated transcript of about size bytes (real
// density) into a fresh agents directory, with extra lines appended, and
// returns its ref, store and bytes.
func generated(t *testing.T, size int64, extra string) (bs.SessionRef, *session.Store, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: size, Density: synth.DensityReal}); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(extra)
	ref, st := sessionOf(t, "g1", buf.Bytes())
	return ref, st, buf.Bytes()
}

// sessionOf writes data as session id of agent main in a fresh agents
// directory and returns its ref and a store with no quiet period.
func sessionOf(t *testing.T, id string, data []byte) (bs.SessionRef, *session.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(filepath.Dir(filepath.Dir(dir)))
	st.Writer.Quiet = 0
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return ref, st
}

func sideIDs(t *testing.T, st *session.Store, ref bs.SessionRef) []string {
	t.Helper()
	infos, err := sidedir.New(st).List(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range infos {
		ids = append(ids, in.EntryID)
	}
	sort.Strings(ids)
	return ids
}

func extractedIDs(res *extract.Result) []string {
	var ids []string
	for _, d := range res.Details {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids
}

// TestPassHoldBack checks the side records a pass writes while it still
// reads: records go out before the read ends once more than the hold-back
// window is planned, the keep window's entries (at the end of the file)
// get none, a pass below the minimum saving writes none, and a keep
// window far from the end of the file (a leaf moved back to an old
// branch) leaves only harmless orphans.
func TestPassHoldBack(t *testing.T) {
	defer extract.SetHoldBack(extract.SetHoldBack(64 << 10))
	ctx := context.Background()

	t.Run("window at the end", func(t *testing.T) {
		ref, st, orig := generated(t, 2<<20, "")
		res := run(t, ref, st, allTypes(500, 3))
		if !res.Written || res.Entries < 100 {
			t.Fatalf("written %v, %d entries: want a pass of many entries", res.Written, res.Entries)
		}
		if got, want := sideIDs(t, st, ref), extractedIDs(res); !slices.Equal(got, want) {
			t.Fatalf("side records of %d entries, extracted %d: want exactly the extracted ones", len(got), len(want))
		}
		if back := unextract(t, ref.Path, sidetest.Dir(ref.Path, ref.ID)); !bytes.Equal(back, orig) {
			t.Fatal("un-extracting does not give the original back")
		}
	})

	t.Run("below the minimum saving", func(t *testing.T) {
		ref, st, orig := generated(t, 2<<20, "")
		p := allTypes(500, 3)
		p.MinSavingTokens = 1 << 30
		res := run(t, ref, st, p)
		if res.Written || res.SkipCode != extract.SkipBelowMinSaving {
			t.Fatalf("written %v, skip %q: want below_min_saving", res.Written, res.SkipCode)
		}
		if ids := sideIDs(t, st, ref); len(ids) != 0 {
			t.Fatalf("%d side records written by a skipped pass, want none", len(ids))
		}
		if now, _ := os.ReadFile(ref.Path); !bytes.Equal(now, orig) {
			t.Fatal("transcript changed")
		}
	})

	t.Run("nothing written after early records", func(t *testing.T) {
		// The keep window turns out to cover every entry: the records
		// sent while reading become durable orphans, no pack is left
		// pending (a temp file) and the transcript is untouched.
		ref, st, orig := generated(t, 2<<20, "")
		res := run(t, ref, st, allTypes(500, 1<<20))
		if res.Written || res.SkipCode != extract.SkipNothing {
			t.Fatalf("written %v, skip %q: want nothing extracted", res.Written, res.SkipCode)
		}
		if len(sideIDs(t, st, ref)) == 0 {
			t.Fatal("no orphan records: the records sent early were not made durable")
		}
		ents, err := os.ReadDir(sidetest.Dir(ref.Path, ref.ID))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Fatalf("temp file %s left in the side dir", e.Name())
			}
		}
		if !bytes.Equal(mustRead(t, ref.Path), orig) {
			t.Fatal("transcript changed")
		}
	})

	t.Run("window far from the end", func(t *testing.T) {
		// A message whose parent is an early tool result: the active path
		// ends there, so the keep window holds entries read first, whose
		// records went out before the window was known.
		ref0, st0, _ := generated(t, 2<<20, "")
		tr, err := st0.Open(ctx, ref0, nil)
		if err != nil {
			t.Fatal(err)
		}
		var first string
		for _, n := range tr.Nodes() {
			if n.Role == "toolResult" && n.Len > 2000 {
				first = n.ID
				break
			}
		}
		leaf := `{"type":"message","id":"leaf0001","parentId":"` + first + `","timestamp":"2026-03-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"back"}]}}` + "\n"
		ref, st, orig := generated(t, 2<<20, leaf)
		res := run(t, ref, st, allTypes(500, 3))
		if !res.Written {
			t.Fatalf("not written: %s", res.Skipped)
		}
		if ids := extractedIDs(res); len(ids) == 0 || !bytes.Contains(mustRead(t, ref.Path), []byte("[[extracted-"+ids[0]+"]]")) {
			t.Fatal("no placeholder of an extracted entry found")
		}
		if bytes.Contains(mustRead(t, ref.Path), []byte("[[extracted-"+first+"]]")) {
			t.Fatalf("entry %s is in the keep window but was extracted", first)
		}
		extracted := map[string]bool{}
		for _, id := range extractedIDs(res) {
			extracted[id] = true
		}
		orphan := false
		for _, id := range sideIDs(t, st, ref) {
			orphan = orphan || (id == first && !extracted[id])
		}
		if !orphan {
			t.Fatalf("entry %s: want its early record left as an orphan", first)
		}
		if back := unextract(t, ref.Path, sidetest.Dir(ref.Path, ref.ID)); !bytes.Equal(back, orig) {
			t.Fatal("un-extracting does not give the original back")
		}
		if _, err := sidetest.Restorer(st, st.Root).RestoreAll(ctx, ref, true); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.ReadFile(ref.Path); !bytes.Equal(now, orig) {
			t.Fatal("restore --all --pristine does not give the original back")
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
