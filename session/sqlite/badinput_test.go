package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// badInputStores makes two stores under agents: "main" with a good
// session, one holding a row that is not JSON, one holding a damaged zstd
// row and another good one; "other" with one good session. It returns
// the pass over them (busy timeout 100 ms), main's path and the agents
// dir.
func badInputStores(t *testing.T) (*prune.Pass, string, string) {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	notJSON := synthTurns("bad-json", 3, 2000)
	notJSON[5] = `this row is not JSON at all {`
	main := newSynthStore(t, agents, "main",
		synthSession{id: "good-1", rows: synthTurns("good-1", 3, 2000)},
		synthSession{id: "bad-json", rows: notJSON},
		synthSession{id: "bad-zstd", rows: synthTurns("bad-zstd", 3, 2000), badZstd: map[int]bool{3: true}},
		synthSession{id: "good-2", rows: synthTurns("good-2", 3, 2000), zstd: map[int]bool{7: true}})
	newSynthStore(t, agents, "other", synthSession{id: "good-3", rows: synthTurns("good-3", 3, 2000)})
	cfg := passConfig(t, agents, 500)
	st := sqlite.NewStore(agents, sqlite.Options{BusyTimeout: 100 * time.Millisecond})
	return &prune.Pass{Store: st, Side: sidedir.New(st), StateDir: config.StateDir(agents), Config: cfg}, main, agents
}

// statuses returns each session's report by session name.
func statuses(rep *prune.Report) map[string]prune.SessionReport {
	out := map[string]prune.SessionReport{}
	for _, s := range rep.Sessions {
		out[s.Session] = s
	}
	return out
}

// TestBadRows runs a pass over stores where one session holds a row that
// is not JSON and another a damaged zstd row. The row that is not JSON
// is kept byte for byte as a malformed line, as in a JSONL transcript,
// and the session is pruned around it; the session with the damaged
// row fails alone with an error that says what was expected and found,
// and nothing of it is written; every other session, in the same store
// and in the other, is pruned.
func TestBadRows(t *testing.T) {
	ctx := context.Background()
	pass, path, _ := badInputStores(t)
	damaged := func() string {
		var row string
		db := rawDB(t, path)
		defer db.Close()
		if err := db.QueryRow(`SELECT hex(event_zstd) || ' ' || (SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = 'bad-zstd')
			FROM transcript_events WHERE session_id = 'bad-zstd' AND seq = 3`).Scan(&row); err != nil {
			t.Fatal(err)
		}
		return row
	}
	damagedBefore := damaged()
	before := rowsOfAll(t, pass.Store)
	rep, err := pass.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := statuses(rep)
	for _, s := range []string{"main/good-1", "main/good-2", "other/good-3", "main/bad-json"} {
		if got[s].Status != prune.StatusExtracted {
			t.Errorf("%s: %s %s, want extracted", s, got[s].Status, got[s].Note)
		}
	}
	bad := got["main/bad-zstd"]
	if bad.Status != prune.StatusError || !strings.Contains(bad.Note, "seq 3") || !strings.Contains(bad.Note, "expected one zstd frame") {
		t.Errorf("main/bad-zstd: %s %q, want an error naming row seq 3 and what was expected", bad.Status, bad.Note)
	}
	ref, err := pass.Store.Resolve(ctx, "main/bad-zstd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pass.Store.Open(ctx, ref, nil); !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("open main/bad-zstd: %v, want a damaged row (ErrInvalid)", err)
	}
	if rep.Failed != 1 {
		t.Errorf("%d sessions failed, want 1", rep.Failed)
	}
	after := rowsOfAll(t, pass.Store)
	if !bytes.Equal(after["main/bad-json"][5], before["main/bad-json"][5]) {
		t.Errorf("the row that is not JSON changed: %q", after["main/bad-json"][5])
	}
	if damaged() != damagedBefore {
		t.Error("the damaged row or its session's generation changed")
	}
	side := filepath.Join(filepath.Dir(pass.StateDir), "agents", "main", "sessions", "extracted", "bad-zstd")
	if p := packsIn(t, side); len(p) != 0 {
		t.Errorf("the failing session has side packs %v", p)
	}
}

// rowsOfAll reads the rows of every session it can, by session name;
// sessions that cannot be read are left out.
func rowsOfAll(t *testing.T, st bs.Store) map[string][][]byte {
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
			continue
		}
		for e, err := range tr.Entries(ctx) {
			if err != nil {
				break
			}
			out[ref.String()] = append(out[ref.String()], bytes.Clone(e.Raw))
		}
	}
	return out
}

// TestLockedStore runs a pass while another connection holds main's
// store: its write lock (BEGIN IMMEDIATE, as OpenClaw's writers take it),
// or an exclusive lock that keeps readers out too. Under the write lock
// main's sessions are read and reported busy, saying what held them and
// how long the pass waited; under the exclusive lock main's store cannot
// even be listed, and the report says so (Report.Unlisted) instead of
// leaving its sessions out silently. Nothing of main is written, and the
// other store's session is pruned.
func TestLockedStore(t *testing.T) {
	for _, tt := range []struct {
		name     string
		lock     []string
		say      string
		unlisted bool
	}{
		{"BeginImmediate", []string{"BEGIN IMMEDIATE"}, "another connection's write transaction", false},
		{"Exclusive", []string{"PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE", "UPDATE schema_meta SET updated_at = 2"}, "exclusive locking mode", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pass, path, agents := badInputStores(t)
			before := rowsOfAll(t, pass.Store)
			host := rawDB(t, path)
			for _, q := range tt.lock {
				mustExec(t, host, q)
			}
			rep, err := pass.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := statuses(rep)
			if s := got["other/good-3"]; s.Status != prune.StatusExtracted {
				t.Errorf("other/good-3: %s %s, want extracted", s.Status, s.Note)
			}
			if tt.unlisted {
				if len(rep.Unlisted) != 1 || !strings.Contains(rep.Unlisted[0], `agent "main"`) || !strings.Contains(rep.Unlisted[0], tt.say) {
					t.Errorf("unlisted %q, want main's store saying %q", rep.Unlisted, tt.say)
				}
				for id := range got {
					if strings.HasPrefix(id, "main/") {
						t.Errorf("%s is reported although its store could not be read", id)
					}
				}
				// An installation opened by package backend says the same.
				set, err := backend.Open(ctx, agents, backend.FromConfig(pass.Config, nil))
				if err != nil {
					t.Fatal(err)
				}
				refs, skipped, err := set.Store.Sessions(ctx)
				if err != nil || len(refs) != 1 || refs[0].String() != "other/good-3" || len(skipped) != 1 || !errors.Is(skipped[0], bs.ErrBusy) {
					t.Errorf("backend Sessions: %v %v %v, want other/good-3 and main's store skipped as busy", refs, skipped, err)
				}
			} else {
				if len(rep.Unlisted) != 0 {
					t.Errorf("unlisted %q, want none", rep.Unlisted)
				}
				for _, id := range []string{"main/good-1", "main/good-2"} {
					s := got[id]
					if s.Status != prune.StatusBusy || !strings.Contains(s.Note, tt.say) {
						t.Errorf("%s: %s %q, want busy saying %q", id, s.Status, s.Note, tt.say)
					}
				}
			}
			mustExec(t, host, "ROLLBACK")
			mustExec(t, host, "PRAGMA locking_mode = NORMAL")
			host.Close()
			after := rowsOfAll(t, pass.Store)
			for _, id := range []string{"main/good-1", "main/good-2", "main/bad-json"} {
				if !equalRows(after[id], before[id]) {
					t.Errorf("%s changed while its store was locked", id)
				}
			}
		})
	}
}
