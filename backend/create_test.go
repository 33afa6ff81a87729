package backend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestMultiCreate checks that a new session goes to the store of its agent:
// a file for an agent without a SQLite store, a refusal naming
// BrainSurgeon's "never inserts rows" rule for the agent that has one, with
// nothing written.
func TestMultiCreate(t *testing.T) {
	ctx := context.Background()
	root := testcorpus.Store(t) // agent main has a SQLite store
	if err := os.MkdirAll(filepath.Join(root, "other", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := set.Store
	lines := [][]byte{[]byte(`{"type":"session","version":3,"id":"new-1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`)}
	ref, err := c.Create(ctx, "other", lines)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Backend != bs.BackendJSONL || ref.Path != filepath.Join(root, "other", "sessions", "new-1.jsonl") {
		t.Errorf("created %+v", ref)
	}
	before, _ := os.ReadDir(filepath.Join(root, "main"))
	_, err = c.Create(ctx, "main", [][]byte{[]byte(`{"type":"session","version":3,"id":"new-2","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`)})
	if !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "never inserts rows") {
		t.Fatalf("create for the SQLite agent: err = %v, want ErrUnsupported saying BrainSurgeon never inserts rows", err)
	}
	after, _ := os.ReadDir(filepath.Join(root, "main"))
	if len(after) != len(before) {
		t.Errorf("the refused create changed the agent dir: %d entries, then %d", len(before), len(after))
	}
	if _, err := os.Stat(filepath.Join(root, "main", "sessions", "new-2.jsonl")); err == nil {
		t.Errorf("the refused create wrote a transcript")
	}
}
