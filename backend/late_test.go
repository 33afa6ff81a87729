package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestSQLiteStoreCreatedLater checks that a set opened before OpenClaw
// created an agent's SQLite store (a fresh install, a new agent, the first
// run after the upgrade) lists and resolves that store's sessions once it
// exists, without being opened again; its Backends keep naming what was
// there at open.
func TestSQLiteStoreCreatedLater(t *testing.T) {
	ctx := context.Background()
	src := testcorpus.Store(t) // agent main has a SQLite store
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "main", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil || len(refs) != 0 {
		t.Fatalf("before the store exists: %d sessions, err %v; want none", len(refs), err)
	}
	if got := set.Backends; len(got) != 1 || got[0] != bs.BackendJSONL {
		t.Errorf("Backends = %v, want [%s]", got, bs.BackendJSONL)
	}
	// OpenClaw creates the store.
	agentDir := filepath.Join(src, "main", "agent")
	ents, err := os.ReadDir(agentDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "main", "agent"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(agentDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "main", "agent", e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	refs, _, err = set.Store.Sessions(ctx)
	if err != nil || len(refs) == 0 {
		t.Fatalf("after the store was created: %d sessions, err %v; want the store's sessions", len(refs), err)
	}
	ref, err := set.Store.Resolve(ctx, refs[0].Agent+"/"+refs[0].ID)
	if err != nil || ref.Backend != bs.BackendSQLite {
		t.Errorf("Resolve(%s/%s) = %+v, %v; want the SQLite session", refs[0].Agent, refs[0].ID, ref, err)
	}
}
