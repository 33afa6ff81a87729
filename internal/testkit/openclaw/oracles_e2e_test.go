//go:build e2e

package openclaw

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestSQLiteOracles imports a corpus session with OpenClaw 2026.9.6's own importer and reads it back with its
// SessionManager (on a copy of the state dir). The numbers are the ones the research recorded for this session
// (shared/docs/research/openclaw-sqlite-oracle.md section 4: 67 entries, leaf 83d4bccf, 62 context messages).
func TestSQLiteOracles(t *testing.T) {
	in := Require(t, V9)
	e := NewEnv(in.Node)
	t.Cleanup(func() {
		if pids := KillLeftovers(e.Marker); len(pids) > 0 {
			t.Errorf("processes left over (killed): %v", pids)
		}
	})
	const id = "ea774ff3-e94f-41d2-aba0-a6a1c80697e4"
	var src string
	for _, p := range testcorpus.Real(t) {
		if filepath.Base(p) == id+".jsonl" {
			src = p
		}
	}
	if src == "" {
		t.Fatalf("corpus transcript %s not found", id)
	}
	st, err := NewState(filepath.Join(t.TempDir(), "state"), ConfigOptions{MockURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Seed("main", "agent:main:main", id, src); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	rep, err := Import(ctx, e, in, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("import: %s, %d bytes of report", time.Since(start).Round(100*time.Millisecond), len(rep))
	start = time.Now()
	got, err := ContextOracle(ctx, e, in, st, "main", "agent:main:main", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("context oracle: %s", time.Since(start).Round(100*time.Millisecond))
	leaf := ""
	if got.LeafID != nil {
		leaf = *got.LeafID
	}
	if got.EntryCount != 67 || len(got.Messages) != 62 || len(leaf) < 8 || leaf[:8] != "83d4bccf" {
		t.Fatalf("OpenClaw read back %d entries, %d context messages, leaf %q; want 67, 62, 83d4bccf…\n%s",
			got.EntryCount, len(got.Messages), leaf, got.Raw)
	}
}
