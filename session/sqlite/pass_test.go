package sqlite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// passConfig enables pruning of every trigger type from values of minLen
// bytes, with no quiet period, age or saving threshold, in the state dir
// of agentsDir.
func passConfig(t testing.TB, agentsDir string, minLen int) config.Config {
	t.Helper()
	c := config.Default()
	c.Enabled = true
	c.IdleSeconds = 0
	c.MinValueLength = minLen
	c.KeepRecent = 1
	c.MinSavingTokens = 0
	c.AgeThresholdHours = 0
	c.TriggerTypes = nil
	for _, tt := range bs.TriggerTypes() {
		c.TriggerTypes = append(c.TriggerTypes, string(tt))
	}
	if err := config.Save(agentsDir, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// rowsOf reads every line of every session of a store through the seam.
func rowsOf(t testing.TB, st bs.Store) map[string][][]byte {
	t.Helper()
	ctx := context.Background()
	refs, _, err := st.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, ref := range refs {
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range tr.Entries(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			out[ref.Identity()] = append(out[ref.Identity()], bytes.Clone(e.Raw))
		}
	}
	return out
}

// TestPassPristineOnEveryStore runs the library pass (every trigger type
// the store allows, values of 100+ bytes) over a copy of every corpus
// store, checks that every placeholder has its value, then restores
// every session pristine: every row is byte-identical to before, the
// other tables are unchanged and the database is intact.
func TestPassPristineOnEveryStore(t *testing.T) {
	srv := s3test.Optional(t)
	stores := corpusStores(t)
	for i, cs := range stores {
		for _, side := range sideStores {
			// Under the race detector the S3 medium runs on the smallest
			// store only: its goroutines are the same on every store, and
			// the real ones cost minutes there (sides3 and backend race-test
			// the medium itself).
			if side == "s3" && testcorpus.RaceEnabled() && i != smallest(t, stores) {
				continue
			}
			t.Run(cs.name+"/"+side, func(t *testing.T) {
				ctx := context.Background()
				state, path := copyStore(t, cs.path, cs.agent)
				agents := filepath.Join(state, "agents")
				cfg := passConfig(t, agents, 100)
				cfg.SideStore = sideStore(t, srv, side)
				set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
				if err != nil {
					t.Fatal(err)
				}
				before := rowsOf(t, set.Store)
				others := dumpOthers(t, path)
				rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				extracted := 0
				for _, s := range rep.Sessions {
					if s.Backend != bs.BackendSQLite {
						t.Fatalf("session %s from the %q backend, want sqlite", s.Session, s.Backend)
					}
					switch s.Status {
					case prune.StatusExtracted:
						extracted += s.Result.Values
					case prune.StatusUnchanged:
					default:
						t.Fatalf("session %s: %s %s", s.Session, s.Status, s.Note)
					}
				}
				if extracted == 0 {
					t.Fatal("nothing was extracted")
				}
				refs, _, err := set.Store.Sessions(ctx)
				if err != nil {
					t.Fatal(err)
				}
				r := restore.New(set.Store, set.Side, set.StateDir)
				placeholders := 0
				for _, ref := range refs {
					v, err := restore.Verify(ctx, set.Store, set.Side, ref)
					if err != nil {
						t.Fatal(err)
					}
					if !v.OK() {
						t.Fatalf("verify %s: %+v", ref, v.Problems)
					}
					placeholders += v.Placeholders
					if _, err := r.RestoreAll(ctx, ref, true); err != nil {
						t.Fatalf("restore all of %s: %v", ref, err)
					}
				}
				if placeholders != extracted {
					t.Fatalf("%d placeholders verified, %d values extracted", placeholders, extracted)
				}
				after := rowsOf(t, set.Store)
				for id, rows := range before {
					if len(after[id]) != len(rows) {
						t.Fatalf("%s: %d rows, was %d", id, len(after[id]), len(rows))
					}
					for i := range rows {
						if !bytes.Equal(rows[i], after[id][i]) {
							t.Fatalf("%s line %d differs after the pristine restore", id, i+1)
						}
					}
				}
				if got := dumpOthers(t, path); !equalMaps(got, others) {
					t.Fatalf("other tables changed:\n%v\nwas\n%v", got, others)
				}
				integrityOK(t, path)
				noLocalSide(t, side == "s3", agents)
				t.Logf("%d values extracted and restored in %d sessions", extracted, len(refs))
			})
		}
	}
}

// smallest returns the index of the smallest store's database.
func smallest(t *testing.T, stores []corpusStore) int {
	t.Helper()
	best, size := 0, int64(-1)
	for i, cs := range stores {
		fi, err := os.Stat(cs.path)
		if err != nil {
			t.Fatal(err)
		}
		if size < 0 || fi.Size() < size {
			best, size = i, fi.Size()
		}
	}
	return best
}

// sideStores are the side stores the core tests run on: the pack store
// beside the transcripts and an S3 server (versitygw on loopback).
var sideStores = []string{"local", "s3"}

// sideStore returns the side_store setting of a side store of sideStores,
// or skips t when it is "s3" and srv is nil.
func sideStore(t *testing.T, srv *s3test.Server, side string) string {
	t.Helper()
	if side == "local" {
		return config.SideStoreLocal
	}
	s3test.SkipWithout(t, srv)
	return srv.URL(s3test.Prefix(t))
}

// noLocalSide fails t when side is an object store and a side directory
// exists under agents: every value must have gone to the object store.
func noLocalSide(t *testing.T, remote bool, agents string) {
	t.Helper()
	if !remote {
		return
	}
	dirs, err := backend.LocalSideDirs(context.Background(), bs.Installation{AgentsDir: agents, StateDir: config.StateDir(agents)}, 0)
	if err != nil || len(dirs) > 0 {
		t.Fatalf("with an object store, side values were written locally: %v %v", dirs, err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// fixture is one session on one backend, for the shared table.
type fixture struct {
	agents string
	set    *backend.Set
	cfg    config.Config
	ref    bs.SessionRef
}

// TestBothBackends runs one table of operations — a pass, verify, a
// restore of one entry, set_extractable, and a pristine restore of
// everything — against the same session stored as a JSONL file and as
// rows of OpenClaw's SQLite store (imported from that file by OpenClaw).
func TestBothBackends(t *testing.T) {
	cs := musk(t)
	id := muskSession(cs)
	build := map[string]func(t *testing.T) fixture{
		bs.BackendJSONL: func(t *testing.T) fixture {
			agents := filepath.Join(t.TempDir(), "agents")
			dir := filepath.Join(agents, "main", "sessions")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(jsonlOf(t, cs, id))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, id+".jsonl")
			if err := os.WriteFile(p, b, 0o600); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Hour)
			os.Chtimes(p, old, old)
			return fixture{agents: agents}
		},
		bs.BackendSQLite: func(t *testing.T) fixture {
			state, _ := copyStore(t, cs.path, cs.agent)
			return fixture{agents: filepath.Join(state, "agents")}
		},
	}
	srv := s3test.Optional(t)
	for _, c := range [][2]string{{bs.BackendJSONL, "local"}, {bs.BackendSQLite, "local"}, {bs.BackendJSONL, "s3"}, {bs.BackendSQLite, "s3"}} {
		name, side := c[0], c[1]
		if side == "s3" && testcorpus.RaceEnabled() {
			continue // the medium's races: sides3, backend and TestPassPristineOnEveryStore's smallest store
		}
		t.Run(name+"/"+side, func(t *testing.T) {
			ctx := context.Background()
			f := build[name](t)
			f.cfg = passConfig(t, f.agents, 500)
			f.cfg.TriggerTypes = []string{config.TriggerThinking, config.TriggerToolResult}
			f.cfg.SideStore = sideStore(t, srv, side)
			var err error
			if f.set, err = backend.Open(ctx, f.agents, backend.FromConfig(f.cfg, nil)); err != nil {
				t.Fatal(err)
			}
			if f.ref, err = f.set.Store.Resolve(ctx, "main/"+id); err != nil {
				t.Fatal(err)
			}
			if f.ref.Backend != name {
				t.Fatalf("resolved to the %q backend", f.ref.Backend)
			}
			orig := rowsOf(t, f.set.Store)[f.ref.Identity()]
			for _, op := range []struct {
				name string
				run  func(t *testing.T, f *fixture)
			}{
				{"PassExtracts", func(t *testing.T, f *fixture) {
					rep, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, f.cfg, nil).Run(ctx, []bs.SessionRef{f.ref})
					if err != nil || len(rep.Sessions) != 1 || rep.Sessions[0].Status != prune.StatusExtracted {
						t.Fatalf("pass: %v %+v", err, rep)
					}
					if n := rep.Sessions[0].Result.Entries; n < map[bool]int{false: 50, true: 10}[cs.repo == selfMadeRepo] {
						t.Fatalf("only %d entries extracted", n)
					}
				}},
				{"VerifyOK", func(t *testing.T, f *fixture) {
					v, err := restore.Verify(ctx, f.set.Store, f.set.Side, f.ref)
					if err != nil || !v.OK() || v.Placeholders == 0 || v.Verified != v.Placeholders {
						t.Fatalf("verify: %v %+v", err, v)
					}
				}},
				{"RestoreOneEntry", func(t *testing.T, f *fixture) {
					tr, err := f.set.Store.Open(ctx, f.ref, nil)
					if err != nil {
						t.Fatal(err)
					}
					var entry string
					var line int
					for e, err := range tr.Entries(ctx) {
						if err != nil {
							t.Fatal(err)
						}
						if bytes.Contains(e.Raw, []byte(extract.PlaceholderPrefix)) && e.Role == "toolResult" {
							entry, line = e.ID, e.Line
							break
						}
					}
					r := restore.New(f.set.Store, f.set.Side, f.set.StateDir)
					res, err := r.Restore(ctx, f.ref, entry, nil, restore.RestoreOptions{})
					if err != nil || !res.Restored || !res.Applied {
						t.Fatalf("restore %s: %v %+v", entry, err, res)
					}
					e, err := mustOpen(t, f).Entry(ctx, line)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Contains(e.Raw, []byte(`"_restored"`)) {
						t.Fatalf("line %d has no _restored mark after the write-back", line)
					}
					var want string
					if err := json.Unmarshal(valueAt(t, orig[line-1], res.KeysRestored[0]), &want); err != nil {
						t.Fatal(err)
					}
					if res.Content[res.KeysRestored[0]] != want {
						t.Fatalf("restored content differs from the original value")
					}
				}},
				{"SetExtractable", func(t *testing.T, f *fixture) {
					tr := mustOpen(t, f)
					nodes := tr.Nodes()
					first := ""
					for _, n := range nodes {
						if n.Kind == bs.KindEntry && n.Role == "user" {
							first = n.ID
							break
						}
					}
					r := restore.New(f.set.Store, f.set.Side, f.set.StateDir)
					res, err := r.SetExtractable(ctx, f.ref, first, "false")
					if err != nil || !res.Applied {
						t.Fatalf("set_extractable: %v %+v", err, res)
					}
					// The previous value is reported as it was written.
					res, err = r.SetExtractable(ctx, f.ref, first, "3")
					if err != nil || !res.Applied || res.Previous != "false" {
						t.Fatalf("set_extractable again: %v %+v", err, res)
					}
				}},
				{"PristineRestore", func(t *testing.T, f *fixture) {
					if _, err := restore.New(f.set.Store, f.set.Side, f.set.StateDir).RestoreAll(ctx, f.ref, true); err != nil {
						t.Fatal(err)
					}
					now := rowsOf(t, f.set.Store)[f.ref.Identity()]
					if len(now) != len(orig) {
						t.Fatalf("%d lines, was %d", len(now), len(orig))
					}
					for i := range orig {
						if !bytes.Equal(now[i], orig[i]) {
							t.Fatalf("line %d differs after the pristine restore", i+1)
						}
					}
				}},
			} {
				if !t.Run(op.name, func(t *testing.T) { op.run(t, &f) }) {
					t.FailNow()
				}
			}
			noLocalSide(t, side == "s3", f.agents)
		})
	}
}

func mustOpen(t *testing.T, f *fixture) bs.Transcript {
	t.Helper()
	tr, err := f.set.Store.Open(context.Background(), f.ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// valueAt returns the raw JSON value at a pointer of a line.
func valueAt(t *testing.T, raw []byte, ptr string) []byte {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	cur := doc
	for _, seg := range splitPtr(ptr) {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[seg]
		case []any:
			i := 0
			for _, ch := range seg {
				i = i*10 + int(ch-'0')
			}
			cur = c[i]
		}
	}
	b, err := json.Marshal(cur)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func splitPtr(p string) []string {
	var out []string
	for _, s := range bytes.Split([]byte(p[1:]), []byte("/")) {
		out = append(out, string(s))
	}
	return out
}
