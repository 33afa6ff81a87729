package session_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/atonce"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// copyToAgents copies a corpus transcript into a fresh agents dir as
// main/sessions/<name>.jsonl and returns its path (the corpus itself is
// read-only and never written).
func copyToAgents(t *testing.T, src string) (root, path string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return root, path
}

// noop is an edit that changes no byte but makes Rewrite write the file.
var noop = []bs.Edit{{Line: 1, Splices: []bs.Splice{{Start: 0, End: 0}}}}

func fileSHA(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestStoreRewriteRoundTrip writes every corpus transcript back through the
// real Writer: once unchanged, once with every extractable value of the
// first entries replaced, and once with those values put back. The first and
// last results must be byte-identical to the original, and the edited one
// must load in pi with the same entries, leaf and context size.
func TestStoreRewriteRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("rewrites every corpus transcript three times and loads it in the pi oracle; skipped with -short")
	}
	t.Parallel()
	ctx := context.Background()
	// Four files at a time: each waits for its fsyncs and the oracle.
	var cases []atonce.Case
	for _, f := range corpusTranscripts(t) {
		cases = append(cases, atonce.Case{Name: shortName(f), Run: func(t *testing.T) {
			root, path := copyToAgents(t, f)
			orig := fileSHA(t, path)
			st := session.NewStore(root)
			st.Writer.Quiet = 0 // no quiet period
			ref, err := st.Resolve(ctx, "main/s1")
			if err != nil {
				t.Fatal(err)
			}
			tr, err := session.Open(ctx, path, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			// An edit that changes nothing still goes through the whole
			// write path (temp file, fsync, rename): a new inode, same bytes.
			if err := st.Rewrite(ctx, ref, tr.Version(), noop, nil); err != nil {
				t.Fatal(err)
			}
			if fileSHA(t, path) != orig {
				t.Fatal("unchanged rewrite is not byte-identical")
			}
			if v, _ := session.Open(ctx, path, ref, nil); v.Version().Equal(tr.Version()) {
				t.Fatal("the no-op rewrite did not replace the file")
			}

			// Replace up to 50 values by a placeholder, remembering the bytes.
			tr, err = session.Open(ctx, path, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			var edits, undo []bs.Edit
			for e, err := range tr.Entries(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				var sp, un []bs.Splice
				shift := 0
				for _, c := range entry.Classify(e) {
					if c.Block || len(edits) >= 50 {
						continue
					}
					ph := []byte(`"[[extracted-` + e.ID + `]]"`)
					sp = append(sp, bs.Splice{Start: c.Start, End: c.End, With: ph})
					old := append([]byte(nil), e.Raw[c.Start:c.End]...)
					un = append(un, bs.Splice{Start: c.Start + shift, End: c.Start + shift + len(ph), With: old})
					shift += len(ph) - c.Len()
				}
				if len(sp) > 0 {
					edits = append(edits, bs.Edit{Line: e.Line, ID: e.ID, Splices: sp})
					undo = append(undo, bs.Edit{Line: e.Line, ID: e.ID, Splices: un})
				}
			}
			if err := st.Rewrite(ctx, ref, tr.Version(), edits, nil); err != nil {
				t.Fatal(err)
			}
			edited, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(edits) > 0 && sha256.Sum256(edited) == orig {
				t.Fatal("edits changed nothing")
			}
			tr2, err := session.Open(ctx, path, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tr2.EntryCount() != tr.EntryCount() || len(tr2.Malformed()) != len(tr.Malformed()) {
				t.Fatalf("edited file: %d entries, %d malformed; was %d, %d", tr2.EntryCount(), len(tr2.Malformed()), tr.EntryCount(), len(tr.Malformed()))
			}
			if tr.Header().Version >= 2 && oracle.Optional(t) {
				cmp, err := oracle.Compare(ctx, f, path)
				if err != nil {
					t.Fatal(err)
				}
				if cmp.EntryCount[0] != cmp.EntryCount[1] || !cmp.SameLeaf || cmp.ContextMessageCount[0] != cmp.ContextMessageCount[1] {
					t.Fatalf("pi sees a different session after the edit: %+v", cmp)
				}
			}
			if err := st.Rewrite(ctx, ref, tr2.Version(), undo, nil); err != nil {
				t.Fatal(err)
			}
			if fileSHA(t, path) != orig {
				t.Fatal("undoing the edits does not give the original bytes back")
			}
		}})
	}
	atonce.Run(t, 4, cases)
}

func TestStoreErrors(t *testing.T) {
	ctx := context.Background()
	st := session.NewStore("../testdata/demo/agents")
	if _, err := st.Resolve(ctx, "main/nope"); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	refs, _, err := st.Sessions(ctx)
	if err != nil || len(refs) != 1 || refs[0].Key != "agent:main:main" || refs[0].Status != "done" {
		t.Fatalf("sessions = %+v, %v", refs, err)
	}
	tr, err := st.Open(ctx, refs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	// The demo transcript is old enough, but its base version is stale.
	stale := tr.Version()
	root, path := copyToAgents(t, refs[0].Path)
	st2 := session.NewStore(root)
	st2.Writer.Quiet = 0 // no quiet period
	ref, err := st2.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	before := fileSHA(t, path)
	if err := st2.Rewrite(ctx, ref, stale, noop, nil); !errors.Is(err, bs.ErrChanged) {
		t.Fatalf("stale base: %v", err)
	}
	// A session modified just now is busy under the default idle gate.
	st2.Writer.Quiet = session.DefaultQuiet
	tr2, _ := session.Open(ctx, path, ref, nil)
	if err := st2.Rewrite(ctx, ref, tr2.Version(), noop, nil); !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("fresh file under the default idle gate: %v", err)
	}
	if fileSHA(t, path) != before {
		t.Fatal("a refused write changed the file")
	}
	if _, err := st.Open(ctx, bs.SessionRef{}, nil); !errors.Is(err, bs.ErrInvalid) {
		t.Fatalf("empty ref: %v", err)
	}
}

// TestSessionsJSONCache checks that discovery sees a changed sessions.json
// although it caches the parse of an unchanged one.
func TestSessionsJSONCache(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1", "s2"} {
		line := `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sj := filepath.Join(dir, "sessions.json")
	old := time.Now().Add(-time.Hour)
	write := func(key, id string) {
		t.Helper()
		data := `{"` + key + `":{"sessionId":"` + id + `","status":"done"}}`
		if err := os.WriteFile(sj, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(sj, old, old); err != nil {
			t.Fatal(err)
		}
		old = old.Add(time.Second)
	}
	keyOf := func(id string) string {
		t.Helper()
		refs, _, err := session.NewStore(filepath.Join(root, "agents")).Sessions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			if r.ID == id {
				return r.Key
			}
		}
		return ""
	}
	write("agent:main:aa", "s1")
	if k := keyOf("s1"); k != "agent:main:aa" {
		t.Fatalf("key of s1 = %q", k)
	}
	if k := keyOf("s1"); k != "agent:main:aa" { // from the cache
		t.Fatalf("key of s1 (cached) = %q", k)
	}
	write("agent:main:bb", "s2") // same size, newer mtime
	if k := keyOf("s2"); k != "agent:main:bb" {
		t.Fatalf("key of s2 after the change = %q", k)
	}
	if k := keyOf("s1"); k != "" {
		t.Fatalf("s1 still has key %q", k)
	}
}

// TestStoreStat checks the JSONL store's stat-level change check: stable
// while the file is untouched, different after an append (even with the
// modification time put back), not found when the file is gone.
func TestStoreStat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s1.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	os.Chtimes(path, old, old)
	st := session.NewStore(filepath.Dir(path))
	ref := bs.SessionRef{ID: "s1", Path: path}
	a, err := st.Stat(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !a.ModTime.Equal(old) {
		t.Errorf("ModTime = %v, want %v", a.ModTime, old)
	}
	if b, _ := st.Stat(ctx, ref); !b.Version.Equal(a.Version) {
		t.Error("two stats of an untouched file differ")
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{}\n")
	f.Close()
	os.Chtimes(path, old, old)
	if b, _ := st.Stat(ctx, ref); b.Version.Equal(a.Version) {
		t.Error("an append did not change the stat")
	}
	os.Remove(path)
	if _, err := st.Stat(ctx, ref); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Stat of a removed file = %v, want ErrNotFound", err)
	}
}

// TestDiscoveryCache checks that a discovery reused from the cache (its
// dirs and sessions.json unchanged) is a copy, and that adding a
// transcript or replacing sessions.json is seen at once.
func TestDiscoveryCache(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	header := func(id string) []byte {
		return []byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	}
	os.WriteFile(filepath.Join(dir, "s1.jsonl"), header("s1"), 0o600)
	os.WriteFile(filepath.Join(dir, "sessions.json"), []byte(`{"agent:main:main":{"sessionId":"s1","status":"done"}}`), 0o600)
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{filepath.Join(dir, "sessions.json"), dir, filepath.Join(agents, "main"), agents} {
		os.Chtimes(p, old, old)
	}
	list := func() []bs.SessionRef {
		t.Helper()
		refs, _, err := session.NewStore(agents).Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	a := list()
	if len(a) != 1 || a[0].Status != "done" {
		t.Fatalf("first listing = %+v", a)
	}
	a[0].ID = "changed by the caller"
	if b := list(); len(b) != 1 || b[0].ID != "s1" {
		t.Fatalf("cached listing = %+v, want s1 (a copy)", b)
	}
	os.WriteFile(filepath.Join(dir, "s2.jsonl"), header("s2"), 0o600)
	if b := list(); len(b) != 2 {
		t.Fatalf("listing after adding s2 = %+v, want 2 sessions", b)
	}
	os.Chtimes(dir, old.Add(time.Second), old.Add(time.Second))
	if b := list(); len(b) != 2 { // cached again
		t.Fatalf("listing = %+v, want 2 sessions", b)
	}
	// sessions.json rewritten in place, its directory untouched.
	sj := filepath.Join(dir, "sessions.json")
	os.WriteFile(sj, []byte(`{"agent:main:main":{"sessionId":"s1","status":"running"}}`), 0o600)
	os.Chtimes(sj, old.Add(2*time.Second), old.Add(2*time.Second))
	if b := list(); b[0].Status != "running" {
		t.Fatalf("status after sessions.json changed = %q, want running", b[0].Status)
	}
}

// TestStatMany: the batched stat gives, in order, what Stat gives for each
// session, and ErrNotFound for a transcript that is gone.
func TestStatMany(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	var refs []bs.SessionRef
	for _, agent := range []string{"main", "other"} {
		dir := filepath.Join(root, agent, "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
			if err := os.WriteFile(p, []byte(strings.Repeat("x", i+1)), 0o600); err != nil {
				t.Fatal(err)
			}
			refs = append(refs, bs.SessionRef{Agent: agent, ID: fmt.Sprintf("s%d", i), Path: p})
		}
	}
	gone := refs[4].Path
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	refs = append(refs, bs.SessionRef{Agent: "main", ID: "nodir", Path: filepath.Join(root, "nope", "sessions", "x.jsonl")})
	st := session.NewStore(root)
	got := st.StatMany(ctx, refs)
	if len(got) != len(refs) {
		t.Fatalf("%d results for %d refs", len(got), len(refs))
	}
	for i, ref := range refs {
		want, werr := st.Stat(ctx, ref)
		switch {
		case werr != nil:
			if !errors.Is(got[i].Err, bs.ErrNotFound) || !errors.Is(werr, bs.ErrNotFound) {
				t.Errorf("%s: StatMany err %v, Stat err %v; want both ErrNotFound", ref.Path, got[i].Err, werr)
			}
		case got[i].Err != nil || !got[i].Stat.Version.Equal(want.Version) || !got[i].Stat.ModTime.Equal(want.ModTime):
			t.Errorf("%s: StatMany %+v %v, Stat %+v", ref.Path, got[i].Stat, got[i].Err, want)
		}
	}
}

// TestStatOtherBackend checks that the JSONL store refuses a ref of
// another backend as one it cannot take (ErrUnsupported), whatever its
// Path, so that a caller holding only this store, such as a Restorer's
// queue, leaves that ref's work alone.
func TestStatOtherBackend(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"session","version":3,"id":"s1"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(dir)
	_, err := st.Stat(context.Background(), bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "s1", Path: path})
	if !errors.Is(err, bs.ErrUnsupported) {
		t.Errorf("Stat of a SQLite ref: %v, want ErrUnsupported", err)
	}
	if _, err := st.Stat(context.Background(), bs.SessionRef{Agent: "main", ID: "s1", Path: path}); err != nil {
		t.Errorf("Stat of a JSONL ref: %v", err)
	}
}
