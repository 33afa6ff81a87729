package sqlite_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// readAll lists, resolves, opens, streams, reads one entry of and checks
// the idleness of every session of the store under state.
func readAll(t *testing.T, state string) {
	t.Helper()
	ctx := context.Background()
	st := sqlite.NewStore(state, sqlite.Options{})
	refs, _, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range refs {
		if _, err := st.Resolve(ctx, ref.Agent+"/"+ref.ID); err != nil {
			t.Fatal(err)
		}
		tr, err := st.Open(ctx, ref, &bs.Visitor{Visit: func(*bs.Entry) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range tr.Entries(ctx) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tr.Entry(ctx, len(tr.Nodes())); err != nil {
			t.Fatal(err)
		}
		if err := st.CheckIdle(ctx, ref); err != nil && !errors.Is(err, bs.ErrBusy) {
			t.Fatal(err)
		}
	}
}

func TestReadOnly(t *testing.T) {
	for _, cs := range corpusStores(t) {
		t.Run(cs.name, func(t *testing.T) {
			state, path := copyStore(t, cs.path, cs.agent)
			if err := os.Chmod(path, 0o400); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Dir(path)
			sum, names := fileSum(t, path), listDir(t, dir)
			st, _ := os.Stat(path)
			readAll(t, state)
			if got := listDir(t, dir); !slices.Equal(got, names) {
				t.Errorf("directory holds %v after reading, %v before", got, names)
			}
			if got := fileSum(t, path); got != sum {
				t.Errorf("store changed by reading")
			}
			if st2, _ := os.Stat(path); !st2.ModTime().Equal(st.ModTime()) {
				t.Errorf("store's mtime changed by reading")
			}
		})
	}
}

// TestReadOnlyWhileHostHasItOpen reads a WAL store that another
// connection (the host) has open, with its -wal and -shm present: nothing
// new appears and the main file does not change.
func TestReadOnlyWhileHostHasItOpen(t *testing.T) {
	cs := musk(t)
	state, path := copyStore(t, cs.path, cs.agent)
	host := rawDB(t, path)
	var mode string
	if err := host.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode %q (%v), want wal", mode, err)
	}
	// A committed write the host has not checkpointed yet.
	mustExec(t, host, "UPDATE session_nodes SET label = 'from the host' WHERE session_key = 'agent:main:main'")
	dir := filepath.Dir(path)
	names := listDir(t, dir)
	if !slices.Contains(names, "openclaw-agent.sqlite-wal") || !slices.Contains(names, "openclaw-agent.sqlite-shm") {
		t.Fatalf("host connection left %v, want -wal and -shm", names)
	}
	sum := fileSum(t, path)
	readAll(t, state)
	refs, _, err := sqlite.NewStore(state, sqlite.Options{}).Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(refs, func(r bs.SessionRef) bool { return r.Label == "from the host" }) {
		t.Errorf("the host's committed write in the WAL is not seen: %+v", refs)
	}
	if got := listDir(t, dir); !slices.Equal(got, names) {
		t.Errorf("directory holds %v after reading, %v before", got, names)
	}
	if got := fileSum(t, path); got != sum {
		t.Errorf("main file changed by reading")
	}
}

func TestUnsupportedVersion(t *testing.T) {
	cs := musk(t)
	state, path := copyStore(t, cs.path, cs.agent)
	db := rawDB(t, path)
	mustExec(t, db, "PRAGMA user_version = 24")
	mustExec(t, db, "PRAGMA wal_checkpoint(TRUNCATE)")
	db.Close()
	sum := fileSum(t, path)
	st := sqlite.NewStore(state, sqlite.Options{})
	ctx := context.Background()
	ref := bs.SessionRef{Backend: bs.BackendSQLite, Agent: cs.agent, ID: muskSession(cs)}
	_, errSessions := bs.ListSessions(ctx, st, nil)
	_, errOpen := st.Open(ctx, ref, nil)
	errIdle := st.CheckIdle(ctx, ref)
	errRewrite := st.Rewrite(ctx, ref, bs.NewVersion(bs.BackendSQLite, "x", 0), []bs.Edit{{Line: 1}}, nil)
	for name, err := range map[string]error{"Sessions": errSessions, "Open": errOpen, "CheckIdle": errIdle} {
		if !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "version 24") || !strings.Contains(err.Error(), "expected exactly 23") {
			t.Errorf("%s: %v, want ErrUnsupported naming 24 and 23", name, err)
		}
	}
	if !errors.Is(errRewrite, bs.ErrUnsupported) {
		t.Errorf("Rewrite: %v, want ErrUnsupported", errRewrite)
	}
	if fileSum(t, path) != sum {
		t.Error("store changed")
	}
}

func TestCorruptStore(t *testing.T) {
	cs := musk(t)
	for _, tt := range []struct {
		name    string
		corrupt func(b []byte) []byte
	}{
		{"Garbage", func(b []byte) []byte { return []byte(strings.Repeat("not a database\n", 500)) }},
		{"Empty", func(b []byte) []byte { return nil }},
		{"Truncated", func(b []byte) []byte { return b[:len(b)/3] }},
		{"PagesZeroed", func(b []byte) []byte {
			c := slices.Clone(b)
			for i := 4096; i < len(c)-4096; i += 8192 {
				clear(c[i : i+4096])
			}
			return c
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state, path := copyStore(t, cs.path, cs.agent)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, tt.corrupt(b), 0o600); err != nil {
				t.Fatal(err)
			}
			sum, names := fileSum(t, path), listDir(t, filepath.Dir(path))
			st := sqlite.NewStore(state, sqlite.Options{})
			ctx := context.Background()
			ref := bs.SessionRef{Backend: bs.BackendSQLite, Agent: cs.agent, ID: muskSession(cs)}
			var errs []error
			_, err := bs.ListSessions(ctx, st, nil)
			errs = append(errs, err)
			if tr, err := st.Open(ctx, ref, nil); err != nil {
				errs = append(errs, err)
			} else {
				for _, err := range tr.Entries(ctx) {
					if err != nil {
						errs = append(errs, err)
						break
					}
				}
			}
			errs = append(errs, st.Rewrite(ctx, ref, bs.NewVersion(bs.BackendSQLite, "x", 0), []bs.Edit{{Line: 1}}, nil))
			failed := 0
			for _, err := range errs {
				if err != nil {
					failed++
					t.Log(err)
					if !strings.Contains(err.Error(), path) {
						t.Errorf("error does not name the store: %v", err)
					}
				}
			}
			if failed == 0 {
				t.Error("no error from a corrupt store")
			}
			if fileSum(t, path) != sum || !slices.Equal(listDir(t, filepath.Dir(path)), names) {
				t.Error("corrupt store or its directory changed")
			}
		})
	}
}

func TestSessionsAndResolve(t *testing.T) {
	ctx := context.Background()
	oracle.Shared(t) // the sessions and keys of one real store
	var sirdeuce corpusStore
	for _, cs := range corpusStores(t) {
		if strings.HasPrefix(cs.name, "sirdeuce") {
			sirdeuce = cs
		}
	}
	state, path := copyStore(t, sirdeuce.path, sirdeuce.agent)
	for _, root := range []string{state, filepath.Join(state, "agents")} {
		st := sqlite.NewStore(root, sqlite.Options{})
		refs, _, err := st.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range refs {
			if r.Backend != bs.BackendSQLite || r.Agent != "main" || r.Path != path {
				t.Errorf("ref %+v", r)
			}
			got = append(got, r.ID[:8]+" "+r.Key+" "+r.Status)
		}
		want := []string{
			"1d9efd24 agent:main:main done",
			"29330952 agent:main:recovered:29330952-50b3-43df-bbfe-a0e2046f3800 ",
			"5e9096eb agent:main:telegram:direct:8072905176 done",
		}
		if !slices.Equal(got, want) {
			t.Errorf("Sessions from %s:\n got %q\nwant %q", root, got, want)
		}
	}
	st := sqlite.NewStore(state, sqlite.Options{})
	for _, tt := range []struct {
		name, want string
		err        error
	}{
		{"main/1d9efd24-3d45-430b-a703-e713c1679ce1", "1d9efd24-3d45-430b-a703-e713c1679ce1", nil},
		{"1d9efd24-3d45-430b-a703-e713c1679ce1", "1d9efd24-3d45-430b-a703-e713c1679ce1", nil},
		{"5e9096eb", "5e9096eb-a13b-48ae-990d-ca9d6f231b05", nil},
		{"agent:main:main", "1d9efd24-3d45-430b-a703-e713c1679ce1", nil},
		{"telegram:direct:8072905176", "5e9096eb-a13b-48ae-990d-ca9d6f231b05", nil},
		{"main:main", "1d9efd24-3d45-430b-a703-e713c1679ce1", nil},
		{"ffffffff", "", bs.ErrNotFound},
		{"agent:main:cron:93b9902c-05da-42f4-bc9d-0020a2f61ebb", "", bs.ErrNotFound}, // a key without transcript rows
		{"other/1d9efd24", "", bs.ErrNotFound},
		{path, "", bs.ErrAmbiguous},
		{"", "", bs.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref, err := st.Resolve(ctx, tt.name)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Resolve(%q): %v, want %v", tt.name, err, tt.err)
				}
				t.Log(err)
				return
			}
			if err != nil || ref.ID != tt.want {
				t.Fatalf("Resolve(%q) = %s, %v; want %s", tt.name, ref.ID, err, tt.want)
			}
		})
	}
}

func TestDetectAndSideDir(t *testing.T) {
	cs := musk(t)
	state, _ := copyStore(t, cs.path, cs.agent)
	if err := os.MkdirAll(filepath.Join(state, "agents", "jsonl-only", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{state, filepath.Join(state, "agents")} {
		got, err := sqlite.Detect(root)
		if err != nil || !slices.Equal(got, []string{"main"}) {
			t.Errorf("Detect(%s) = %v, %v; want [main]", root, got, err)
		}
	}
	if _, err := sqlite.Detect(filepath.Join(state, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Detect of a missing dir: %v, want fs.ErrNotExist", err)
	}
	st := sqlite.NewStore(state, sqlite.Options{})
	want := filepath.Join(state, "agents", "main", "sessions", "extracted", "abc")
	if got, _ := st.SideDir(bs.SessionRef{Agent: "main", ID: "abc"}); got != want {
		t.Errorf("SideDir = %s, want %s", got, want)
	}
	// A session that moved from JSONL into the store keeps its side files.
	jsonl := bs.SessionRef{Agent: "main", ID: "abc", Path: filepath.Join(state, "agents", "main", "sessions", "abc.jsonl")}
	if got, err := session.SideDir(jsonl); got != want || err != nil {
		t.Errorf("session.SideDir = %s, %v; want %s as the SQLite store's", got, err, want)
	}
	for _, ref := range []bs.SessionRef{{Agent: "main", ID: "../x"}, {Agent: "..", ID: "x"}, {Agent: "main", ID: ""}, {Agent: "a/b", ID: "x"}, {Agent: "main", ID: "a\x00b"}} {
		if got, err := st.SideDir(ref); got != "" || err == nil {
			t.Errorf("SideDir(%q/%q) = %s, want empty", ref.Agent, ref.ID, got)
		}
		if _, err := st.Open(context.Background(), ref, nil); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("Open(%q/%q): %v, want ErrInvalid", ref.Agent, ref.ID, err)
		}
	}
	for _, tt := range bs.TriggerTypes() {
		want := tt == bs.TriggerThinking || tt == bs.TriggerToolResult || tt == bs.TriggerImage
		if st.Editable(bs.SessionRef{}, tt) != want {
			t.Errorf("Editable(%s) = %v, want %v", tt, !want, want)
		}
	}
	if st.Name() != bs.BackendSQLite {
		t.Errorf("Name = %s", st.Name())
	}
}
