package retention_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
)

// goneFixture is an agents dir whose sessions all had a pass: live (kept
// as it is), reset (archived by the host as "<id>.jsonl.reset.<ts>"),
// deleted (removed), and the look-alikes that must not count as gone:
// topic (its transcript is "<id>-topic-1.jsonl" only after the pass, a
// name the host may use), locked (a ".lock" names it).
func goneFixture(t *testing.T) (root, dir string, set *backend.Set) {
	t.Helper()
	ctx := context.Background()
	root = filepath.Join(t.TempDir(), "agents")
	dir = filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, s := range []string{"live", "reset", "deleted", "topic", "locked"} {
		write(t, filepath.Join(dir, s+".jsonl"), transcript(s, s+"-a", s+"-b"), old)
	}
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := prune.New(set.Store, set.Side, set.StateDir, passConfig(), nil).Run(ctx, nil)
	if err != nil || rep.Failed > 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	for _, s := range rep.Sessions {
		if s.Status != "extracted" {
			t.Fatalf("pass over %s: %+v, want extracted", s.Session, s)
		}
	}
	mv := func(from, to string) {
		t.Helper()
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	mv("reset.jsonl", "reset.jsonl.reset.2026-11-22T10-00-00.000Z")
	if err := os.Remove(filepath.Join(dir, "deleted.jsonl")); err != nil {
		t.Fatal(err)
	}
	mv("topic.jsonl", "topic-topic-1.jsonl")
	mv("locked.jsonl", "locked.jsonl.deleted.2026-11-22T10-00-00.000Z")
	write(t, filepath.Join(dir, "locked.jsonl.lock"), []byte(`{"pid":1}`), time.Now())
	// A side dir of the first BrainSurgeon with nothing in it, and a file
	// where a side dir would be: neither is a session's side data.
	if err := os.MkdirAll(filepath.Join(dir, "extracted", "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "extracted", "stray.json"), []byte("{}"), old)
	return root, dir, set
}

func TestGoneSessions(t *testing.T) {
	ctx := context.Background()
	_, dir, set := goneFixture(t)
	gl, ok := set.Store.(retention.GoneLister)
	if !ok {
		t.Fatalf("the backend store %T is no GoneLister", set.Store)
	}
	gone, err := gl.GoneSessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ref := range gone {
		ids = append(ids, ref.ID)
		if ref.Agent != "main" || ref.Backend != bs.BackendJSONL || filepath.Dir(ref.Path) != dir {
			t.Errorf("gone ref %+v: want agent main, backend jsonl, a path in %s", ref, dir)
		}
	}
	want := []string{"deleted", "empty", "reset"}
	if len(ids) != len(want) || ids[0] != want[0] || ids[1] != want[1] || ids[2] != want[2] {
		t.Errorf("gone sessions %v, want %v", ids, want)
	}
}

func TestRunGone(t *testing.T) {
	ctx := context.Background()
	_, dir, set := goneFixture(t)
	side := func(id string) bool {
		_, err := os.Stat(filepath.Join(dir, "extracted", id))
		return err == nil
	}
	run := func(scope string, at time.Time) retention.Stats {
		t.Helper()
		cfg := config.Default()
		cfg.Retention, cfg.RetentionScope = "1h", scope
		st, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir, Config: cfg,
			Clock: fixedClock(at)})
		if err != nil || st.Errors != 0 {
			t.Fatalf("retention %s: %+v, %v", scope, st, err)
		}
		return st
	}
	// Within retention nothing goes, gone or not; the empty leftover dir
	// of a gone session is removed.
	if st := run(config.ScopeOrphans, time.Now()); st.Cleaned != 0 || st.Gone != 2 {
		t.Errorf("retention within the window: %+v, want nothing cleaned and 2 gone sessions examined", st)
	}
	if side("empty") {
		t.Error("the empty side dir of a gone session is still there")
	}
	for _, id := range []string{"live", "reset", "deleted", "topic", "locked"} {
		if !side(id) {
			t.Errorf("side dir of %s removed within retention", id)
		}
	}
	// Expired, in scope orphans: the gone sessions' values go (nothing
	// refers to them), the others are still referenced and stay.
	st := run(config.ScopeOrphans, time.Now().Add(2*time.Hour))
	if st.Gone != 2 || st.Cleaned != 2 {
		t.Errorf("expired orphans retention: %+v, want the 2 packs of the 2 gone sessions cleaned", st)
	}
	for id, want := range map[string]bool{"live": true, "topic": true, "locked": true, "reset": false, "deleted": false} {
		if side(id) != want {
			t.Errorf("side dir of %s: present %v, want %v", id, side(id), want)
		}
	}
	// The live session still restores completely.
	ref, err := set.Store.Resolve(ctx, "main/live")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := restore.Verify(ctx, set.Store, set.Side, ref); err != nil || !v.OK() || v.Verified != 2 {
		t.Errorf("verify live after retention: %+v, %v", v, err)
	}
	if st := run(config.ScopeOrphans, time.Now().Add(2*time.Hour)); st.Gone != 0 || st.Cleaned != 0 {
		t.Errorf("second run: %+v, want nothing left to do", st)
	}
}
