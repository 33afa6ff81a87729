package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// touchingStore makes every rewrite of a JSONL transcript fail as a
// host's write would: it moves the file's modification time first, so
// the writer finds the file changed since it was read.
type touchingStore struct{ bs.Store }

func (s touchingStore) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	t := time.Now().Add(time.Duration(len(edits)) * time.Second)
	if err := os.Chtimes(ref.Path, t, t); err != nil {
		return err
	}
	return s.Store.Rewrite(ctx, ref, base, edits, gate)
}

// packsIn lists the packs of a side directory.
func packsIn(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "pack-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFailedWritesAddNoPacks makes the write of a session fail three
// times after its values were stored (a failed write must not leave a new pack on every retry): the JSONL
// transcript changes under the writer, the SQLite store is locked by
// another writer. The side directory then holds one pack, not one per
// attempt; once the write succeeds it still holds that one, and every
// value restores exactly.
func TestFailedWritesAddNoPacks(t *testing.T) {
	const id = "retry-0001"
	for _, name := range []string{bs.BackendJSONL, bs.BackendSQLite} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			agents := filepath.Join(t.TempDir(), "agents")
			rows := synthTurns(id, 4, 3000)
			cfg := passConfig(t, agents, 500)
			var failing, working *prune.Pass
			var release func()
			switch name {
			case bs.BackendJSONL:
				dir := filepath.Join(agents, "main", "sessions")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
				if err != nil {
					t.Fatal(err)
				}
				working = prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
				failing = prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
				failing.Store = touchingStore{set.Store}
				release = func() {}
			case bs.BackendSQLite:
				path := newSynthStore(t, agents, "main", synthSession{id: id, rows: rows, zstd: map[int]bool{3: true}})
				st := sqlite.NewStore(agents, sqlite.Options{BusyTimeout: 50 * time.Millisecond})
				working = &prune.Pass{Store: st, Side: sidedir.New(st), StateDir: config.StateDir(agents), Config: cfg}
				failing = working
				// Another connection holds the write lock (as OpenClaw
				// does during its own write transaction).
				host := rawDB(t, path)
				mustExec(t, host, "BEGIN IMMEDIATE")
				release = func() { mustExec(t, host, "ROLLBACK") }
			}
			ref, err := working.Store.Resolve(ctx, "main/"+id)
			if err != nil {
				t.Fatal(err)
			}
			side := filepath.Join(agents, "main", "sessions", "extracted", id)
			before := rowsOf(t, working.Store)[ref.Identity()]
			for k := range 3 {
				rep, err := failing.Run(ctx, []bs.SessionRef{ref})
				if err != nil {
					t.Fatal(err)
				}
				if s := rep.Sessions[0]; s.Status != prune.StatusBusy {
					t.Fatalf("attempt %d: %s %s, want the write to fail as busy", k+1, s.Status, s.Note)
				}
				if got := packsIn(t, side); len(got) > 1 {
					t.Fatalf("after %d failed attempts the side dir holds %d packs: %v", k+1, len(got), got)
				}
			}
			if got := rowsOf(t, working.Store)[ref.Identity()]; !equalRows(got, before) {
				t.Fatal("a failed attempt changed the transcript")
			}
			packs := packsIn(t, side)
			if len(packs) != 1 {
				t.Fatalf("after 3 failed attempts the side dir holds %v, want the one pack of the values", packs)
			}
			release()
			rep, err := working.Run(ctx, []bs.SessionRef{ref})
			if err != nil || rep.Sessions[0].Status != prune.StatusExtracted {
				t.Fatalf("pass after the lock is gone: %v %+v", err, rep.Sessions)
			}
			if got := packsIn(t, side); len(got) != 1 || got[0] != packs[0] {
				t.Errorf("the successful pass left packs %v, want it to reuse %s", got, packs[0])
			}
			v, err := restore.Verify(ctx, working.Store, working.Side, ref)
			if err != nil || !v.OK() || v.Placeholders != rep.Sessions[0].Result.Values {
				t.Fatalf("verify: %v %+v", err, v)
			}
			if _, err := restore.New(working.Store, working.Side, working.StateDir).RestoreAll(ctx, ref, true); err != nil {
				t.Fatal(err)
			}
			if got := rowsOf(t, working.Store)[ref.Identity()]; !equalRows(got, before) {
				t.Fatal("the pristine restore does not give the transcript back byte for byte")
			}
		})
	}
}

func equalRows(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
