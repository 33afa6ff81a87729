package backend_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/sides3"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// noLocalSideDirs fails t when a side directory of the local pack store
// holds a file: with an object store every value goes there.
func noLocalSideDirs(t testing.TB, set *backend.Set) {
	t.Helper()
	dirs, err := backend.LocalSideDirs(context.Background(), set.Installation, 0)
	if err != nil || len(dirs) > 0 {
		t.Fatalf("values written to local side dirs: %v %v", dirs, err)
	}
}

// TestS3CorpusLossless runs a pass over the JSONL corpus transcripts of
// up to 1 MB (every shape; the larger ones drive the same medium with
// more of the same values, and the pack store's own tests read them all)
// with the side store on an S3 server: every placeholder's value is
// there, nothing is written to a local side dir, and a pristine restore
// gives every transcript back byte for byte.
func TestS3CorpusLossless(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	for _, f := range testcorpus.Transcripts(t) {
		if fi, err := os.Stat(f); err != nil || fi.Size() > 1<<20 {
			continue
		}
		t.Run(testcorpus.Name(f), func(t *testing.T) {
			agents, path := testcorpus.Copy(t, f, "s1")
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := sidetest.PassConfig(t, agents, srv.URL(s3test.Prefix(t)), 200)
			set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
			if err != nil || rep.Failed > 0 {
				t.Fatalf("pass: %v %+v", err, rep)
			}
			n := sidetest.VerifyAll(t, set.Store, set.Side)
			noLocalSideDirs(t, set)
			refs, _, _ := set.Store.Sessions(ctx)
			r := restore.New(set.Store, set.Side, set.StateDir)
			for _, ref := range refs {
				if _, err := r.RestoreAll(ctx, ref, true); err != nil {
					t.Fatal(err)
				}
			}
			if back, _ := os.ReadFile(path); !bytes.Equal(back, orig) {
				t.Fatalf("the pristine restore does not give the transcript back (%d vs %d bytes, %d placeholders)", len(back), len(orig), n)
			}
		})
	}
}

// failAfterPut is a transport that passes requests on but, once the
// n-th PUT of a pack has reached the server, answers the client with an
// error for that pack, every time it is sent again (the client retries):
// the pack is stored, the pass is told it was not (a crash or a lost
// connection between the PUT and the transcript's rewrite).
type failAfterPut struct {
	n    int
	mu   sync.Mutex
	puts int
	key  string
	// then runs, when set, instead of the error (stopping the server).
	then func()
}

func (f *failAfterPut) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodPut || !strings.Contains(req.URL.Path, "/pack-") {
		return resp, err
	}
	f.mu.Lock()
	f.puts++
	if f.puts == f.n {
		f.key = req.URL.Path
	}
	hit := f.key == req.URL.Path
	f.mu.Unlock()
	if !hit {
		return resp, err
	}
	resp.Body.Close()
	if f.then != nil {
		f.then()
	}
	return nil, errors.New("connection lost after the PUT")
}

// openWith opens agents with side on S3 through transport.
func openWith(t testing.TB, agents string, cfg config.Config, transport http.RoundTripper) *backend.Set {
	t.Helper()
	set, err := backend.Open(context.Background(), agents, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	side, err := sides3.Open(cfg.SideStore, set.Store.(*backend.Multi), sides3.Options{
		Roots:     []sides3.Root{{Name: "agents", Dir: agents}, {Name: "state", Dir: set.StateDir}},
		Spool:     filepath.Join(set.StateDir, "spool"),
		Transport: transport,
	})
	if err != nil {
		t.Fatal(err)
	}
	set.Side = side
	return set
}

// sessionsDir writes n copies of the self-made OpenClaw transcript (every
// kind of value, 100 KB) as sessions s00… of agent main and returns the
// agents dir and their paths.
func sessionsDir(t testing.TB, n int) (string, []string) {
	t.Helper()
	var src string
	for _, f := range testcorpus.SelfMade(t) {
		if filepath.Base(f) == "v3-openclaw.jsonl" {
			src = f
		}
	}
	agents, first := testcorpus.Copy(t, src, "s00")
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{first}
	for i := 1; i < n; i++ {
		p := filepath.Join(filepath.Dir(first), fmt.Sprintf("s%02d.jsonl", i))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		os.Chtimes(p, old, old)
	}
	return agents, paths
}

// sqliteSessions writes an OpenClaw SQLite store for agent main holding
// n copies of the self-made OpenClaw transcript (each under its own id)
// and returns the agents dir.
func sqliteSessions(t testing.TB, n int) string {
	t.Helper()
	var data []byte
	for _, f := range testcorpus.SelfMadeFiles() {
		if f.Name == "v3-openclaw.jsonl" {
			data = f.Data
		}
	}
	rows := testcorpus.StoreRows(data)
	var h struct{ ID string }
	if err := json.Unmarshal([]byte(rows[0]), &h); err != nil || len(h.ID) < 8 {
		t.Fatalf("header %q: %v", rows[0], err)
	}
	var ss []testcorpus.StoreSession
	for i := range n {
		id := fmt.Sprintf("%s%02d", h.ID[:len(h.ID)-2], i)
		r := slices.Clone(rows)
		r[0] = strings.Replace(r[0], h.ID, id, 1)
		ss = append(ss, testcorpus.StoreSession{ID: id, Rows: r, Zstd: map[int]bool{2: true}})
	}
	agents := filepath.Join(t.TempDir(), "agents")
	testcorpus.WriteStore(t, agents, "main", ss...)
	return agents
}

// snapshot returns every session's lines, joined, by identity.
func snapshot(t testing.TB, set *backend.Set) map[string]string {
	t.Helper()
	ctx := context.Background()
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ref := range refs {
		tr, err := set.Store.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for e, err := range tr.Entries(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			b.Write(e.Raw)
			b.WriteByte('\n')
		}
		out[ref.Identity()] = b.String()
	}
	return out
}

// TestS3Faults: the server fails in the middle of a pass. The sessions
// whose pack was stored and acknowledged are extracted and verify clean;
// every other transcript is byte-identical to before; the next pass, with
// the server back, finishes the work; nothing is lost.
func TestS3Faults(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		// transport returns the transport of the failing pass.
		transport func(srv *s3test.Server) http.RoundTripper
		extra     string // setting parameters of the failing pass
		// stored is how many sessions the failing pass may leave extracted.
		stored int
		kind   error
		// slow puts a proxy that holds each connection 3 s in front of
		// the server for the failing pass (the setting's timeout is 1 s).
		slow bool
	}{
		{"lost connection after the PUT", func(*s3test.Server) http.RoundTripper { return &failAfterPut{n: 2} }, "", 4, nil, false},
		{"server stopped mid-pass", func(srv *s3test.Server) http.RoundTripper {
			return &failAfterPut{n: 3, then: srv.Stop}
		}, "timeout=2s", 2, bs.ErrUnavailable, false},
		{"slow server", func(*s3test.Server) http.RoundTripper { return nil }, "timeout=1s", 0, bs.ErrUnavailable, true},
	} {
		for _, store := range []string{bs.BackendJSONL, bs.BackendSQLite} {
			t.Run(store+"/"+tt.name, func(t *testing.T) {
				srv := s3test.Start(t)
				srv.Env(t)
				var agents string
				if store == bs.BackendJSONL {
					agents, _ = sessionsDir(t, 5)
				} else {
					agents = sqliteSessions(t, 5)
				}
				setting := srv.URL(s3test.Prefix(t), tt.extra)
				var slow *s3test.SlowProxy
				if tt.slow {
					slow = srv.Slow(t, 3*time.Second)
					setting = strings.Replace(setting, srv.Endpoint, "http://"+slow.Addr, 1)
				}
				cfg := sidetest.PassConfig(t, agents, setting, 500)
				set := openWith(t, agents, cfg, tt.transport(srv))
				before := snapshot(t, set)
				if len(before) != 5 {
					t.Fatalf("%d sessions, want 5", len(before))
				}
				rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
				if err != nil {
					t.Logf("pass: %v", err)
				}
				extracted, failed := 0, 0
				for _, s := range rep.Sessions {
					switch s.Status {
					case prune.StatusExtracted:
						extracted++
					case prune.StatusUnchanged:
						t.Fatalf("session %s unchanged", s.Session)
					default:
						failed++
						if tt.kind != nil && !strings.Contains(s.Note, "unavailable") && !strings.Contains(s.Note, "cannot") {
							t.Errorf("session %s: %s %q, want a note naming the unreachable store", s.Session, s.Status, s.Note)
						}
					}
				}
				if failed == 0 || extracted > tt.stored {
					t.Fatalf("%d extracted, %d failed: %+v", extracted, failed, rep.Sessions)
				}
				after := snapshot(t, set)
				changed := 0
				for id := range before {
					if after[id] != before[id] {
						changed++
					}
				}
				if changed != extracted {
					t.Fatalf("%d transcripts changed, %d sessions reported extracted", changed, extracted)
				}
				if slow != nil {
					slow.SetDelay(0)
				} else {
					srv.Restart(t)
				}
				if objects := srv.Keys(t, s3test.Prefix(t)+"/"); len(objects) < extracted {
					t.Fatalf("%d sessions extracted, objects %v", extracted, objects)
				}
				set = openWith(t, agents, cfg, nil)
				if sidetest.VerifyAll(t, set.Store, set.Side); changed > 0 {
					t.Logf("%d sessions committed before the fault verify clean", changed)
				}
				rep, err = prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
				if err != nil || rep.Failed > 0 {
					t.Fatalf("the next pass: %v %+v", err, rep)
				}
				if n := sidetest.VerifyAll(t, set.Store, set.Side); n == 0 {
					t.Fatal("no placeholders after the next pass")
				}
				noLocalSideDirs(t, set)
				refs, _, _ := set.Store.Sessions(ctx)
				r := restore.New(set.Store, set.Side, set.StateDir)
				for _, ref := range refs {
					if _, err := r.RestoreAll(ctx, ref, true); err != nil {
						t.Fatal(err)
					}
				}
				if now := snapshot(t, set); !maps.Equal(now, before) {
					t.Fatal("the sessions differ after the pristine restore")
				}
			})
		}
	}
}

// TestS3Retention: retention deletes expired values from the object
// store as it does from packs on disk: with scope orphans only values no
// placeholder names; with scope all every expired one; and the values of
// a session whose transcript is gone.
func TestS3Retention(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	for _, c := range [][2]string{{bs.BackendJSONL, config.ScopeOrphans}, {bs.BackendJSONL, config.ScopeAll}, {bs.BackendSQLite, config.ScopeOrphans}, {bs.BackendSQLite, config.ScopeAll}} {
		store, scope := c[0], c[1]
		t.Run(store+"/"+scope, func(t *testing.T) {
			var agents string
			var paths []string
			if store == bs.BackendJSONL {
				agents, paths = sessionsDir(t, 3)
			} else {
				agents = sqliteSessions(t, 3)
			}
			cfg := sidetest.PassConfig(t, agents, srv.URL(s3test.Prefix(t)), 500)
			set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
			if err != nil {
				t.Fatal(err)
			}
			refs, _, _ := set.Store.Sessions(ctx)
			// A record no placeholder names.
			if err := set.Side.Put(ctx, refs[0], []bs.SideRecord{{EntryID: "ghost", Data: []byte(`{"format":"` + extract.Format + `","entry_id":"ghost","values":[]}` + "\n")}}); err != nil {
				t.Fatal(err)
			}
			if rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
				t.Fatalf("pass: %v %+v", err, rep)
			}
			placeholders := sidetest.VerifyAll(t, set.Store, set.Side)
			// JSONL: s02 is deleted by the host; its values go with it.
			if paths != nil {
				if err := os.Rename(paths[2], paths[2]+".deleted.2026-01-01T00-00-00.000Z"); err != nil {
					t.Fatal(err)
				}
			}
			keysBefore := len(srv.Keys(t, s3test.Prefix(t)+"/"))
			cfg.Retention, cfg.RetentionScope = "1h", scope
			st, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir, Config: cfg,
				Clock: fixedClock(time.Now().Add(3 * time.Hour))})
			if err != nil || st.Errors != 0 || st.Cleaned == 0 {
				t.Fatalf("retention: %+v, %v", st, err)
			}
			if _, err := set.Side.Get(ctx, refs[0], "ghost"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("the unreferenced record after retention: %v, want ErrNotFound", err)
			}
			gone := srv.Keys(t, s3test.Prefix(t)+"/test/agents/main/sessions/extracted/s02/")
			if len(gone) != 0 {
				t.Errorf("the deleted session's values remain: %v", gone)
			}
			keysAfter := len(srv.Keys(t, s3test.Prefix(t)+"/"))
			live, _, _ := set.Store.Sessions(ctx)
			switch scope {
			case config.ScopeOrphans:
				if n := sidetest.VerifyAll(t, set.Store, set.Side); n == 0 || (paths != nil && n >= placeholders) || (paths == nil && n != placeholders) {
					t.Errorf("%d placeholders verify after retention (of %d before; with JSONL a third went with s02)", n, placeholders)
				}
			case config.ScopeAll:
				for _, ref := range live {
					if infos, err := set.Side.List(ctx, ref); err != nil || len(infos) != 0 {
						t.Errorf("%s keeps %d values after retention of everything: %v", ref, len(infos), err)
					}
				}
			}
			t.Logf("retention %s: %+v; objects %d → %d", scope, st, keysBefore, keysAfter)
		})
	}
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// TestS3SettingChecked: the state dir's side-store.json names the store
// of the values; a side_store that differs is refused with the way out,
// and so is an object store while local values exist.
func TestS3SettingChecked(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	agents, _ := sessionsDir(t, 1)
	local := sidetest.PassConfig(t, agents, "local", 500)
	set, err := backend.Open(ctx, agents, backend.FromConfig(local, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prune.New(set.Store, set.Side, set.StateDir, local, nil).Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	remote := srv.URL(s3test.Prefix(t))
	_, err = backend.Open(ctx, agents, backend.Options{SideStore: remote})
	if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "but the extracted values are in the local pack store beside the transcripts: run `brainsurgeon side migrate --to "+remote+"`") {
		t.Fatalf("s3 over local values: %v", err)
	}
	// A fresh install takes the object store and records it.
	fresh, _ := sessionsDir(t, 1)
	if _, err := backend.Open(ctx, fresh, backend.Options{SideStore: remote}); err != nil {
		t.Fatal(err)
	}
	st, found, err := backend.ReadSideStoreState(config.StateDir(fresh))
	canon, _ := backend.CanonicalSideStore(remote)
	if err != nil || !found || st.Store != canon {
		t.Fatalf("side-store.json: %+v %v %v, want %s", st, found, err, canon)
	}
	// While the object store holds no value, the setting may still change.
	if _, err := backend.Open(ctx, fresh, backend.Options{SideStore: srv.URL("other")}); err != nil {
		t.Fatalf("a fixed setting before any value: %v", err)
	}
	if st, _, _ := backend.ReadSideStoreState(config.StateDir(fresh)); !strings.Contains(st.Store, "s3://bs-test/other?") {
		t.Fatalf("side-store.json after the fix: %+v", st)
	}
	if _, err := backend.Open(ctx, fresh, backend.Options{SideStore: remote}); err != nil {
		t.Fatal(err)
	}
	cfg := sidetest.PassConfig(t, fresh, remote, 500)
	set, err = backend.Open(ctx, fresh, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
		t.Fatalf("pass: %v %+v", err, rep)
	}
	for _, setting := range []string{"", "local", srv.URL("other")} {
		_, err := backend.Open(ctx, fresh, backend.Options{SideStore: setting})
		if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "but the extracted values are in "+canon+", as ") || !strings.Contains(err.Error(), "side migrate --to") {
			t.Errorf("side_store %q over %s: %v", setting, canon, err)
		}
	}
	// A wrong secret for the recorded store: it cannot tell, so it refuses.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	if _, err := backend.Open(ctx, fresh, backend.Options{SideStore: "local"}); !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "cannot be read to tell") {
		t.Errorf("local over an unreadable object store: %v", err)
	}
}

// TestS3Trash: a session deleted into the trash takes its values along
// in the object store, and a restore brings every one back.
func TestS3Trash(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	agents, paths := sessionsDir(t, 2)
	cfg := sidetest.PassConfig(t, agents, srv.URL(s3test.Prefix(t)), 500)
	set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
		t.Fatalf("pass: %v %+v", err, rep)
	}
	n := sidetest.VerifyAll(t, set.Store, set.Side)
	bin := trash.For(set.Installation)
	if bin.Sides == nil {
		t.Fatal("trash.For of an object store: no Sides")
	}
	item, err := bin.Delete(ctx, "main", "s01")
	if err != nil {
		t.Fatal(err)
	}
	base := s3test.Prefix(t) + "/test/"
	if left := srv.Keys(t, base+"agents/main/sessions/extracted/s01/"); len(left) != 0 {
		t.Errorf("values left at the session's place: %v", left)
	}
	if in := srv.Keys(t, base+"state/trash/"+item.ID+"/extracted/s01/"); len(in) == 0 || item.Bytes == 0 {
		t.Errorf("the trash item holds no values: %v (item %d files, %d bytes)", in, item.Files, item.Bytes)
	}
	if _, err := os.Stat(paths[1]); err == nil {
		t.Error("the transcript is still in place")
	}
	if _, err := bin.Restore(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	if got := sidetest.VerifyAll(t, set.Store, set.Side); got != n {
		t.Errorf("%d placeholders verify after the restore, %d before", got, n)
	}
	noLocalSideDirs(t, set)
}
