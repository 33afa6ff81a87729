//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seedFile is the corpus transcript the end-to-end tests use: an OpenClaw v3 session (68 lines, 161 KB) with
// seven tool results of 500+ characters (31 KB), from the ReinforcementSleeping backup.
const (
	seedSessionID = "ea774ff3-e94f-41d2-aba0-a6a1c80697e4"
	seedFile      = seedSessionID + ".jsonl"
)

// TestPrunedSessionStaysIdle drives the CLI on a copy of a corpus session that was left alone two hours ago, with
// the default-like idle gate (idle_seconds 300): prune extracts, and since the rewrite keeps the transcript's
// modification time the session still looks idle afterwards: a second prune reports it unchanged (not
// busy), and restore --all (`restore SESSION --all`) writes back at once instead of being refused.
func TestPrunedSessionStaysIdle(t *testing.T) {
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(corpusFile(t, seedFile))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, seedFile)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	left := time.Now().Add(-2 * time.Hour).Truncate(time.Second).Add(123456789)
	if err := os.Chtimes(p, left, left); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, agents, map[string]any{"enabled": true, "idle_seconds": 300})

	rep, r := prune(t, agents, seedSessionID)
	if rep.Status != "extracted" || len(placeholders(t, p)) == 0 {
		t.Fatalf("first prune: status %q, %d placeholders: %s", rep.Status, len(placeholders(t, p)), r)
	}
	if got := mtime(t, p); !got.Equal(left) {
		t.Fatalf("prune changed the transcript's mtime from %s to %s", left, got)
	}
	rep, r = prune(t, agents, seedSessionID)
	if rep.Status != "unchanged" {
		t.Fatalf("second prune: status %q, want unchanged (idle, and nothing left to extract): %s", rep.Status, r)
	}
	r = bs(t, "restore", "main/"+seedSessionID, "--all", "--agents-dir", agents)
	if r.code != 0 {
		t.Fatalf("restore --all on the pruned session: %s", r)
	}
	if n := len(placeholders(t, p)); n != 0 {
		t.Fatalf("%d placeholders left after restore --all", n)
	}
	if got := mtime(t, p); !got.Equal(left) {
		t.Fatalf("restore --all changed the transcript's mtime from %s to %s", left, got)
	}
}
