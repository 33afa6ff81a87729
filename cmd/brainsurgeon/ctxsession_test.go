package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDefaultSession checks that a command without --session works on the
// most recently modified session of agent main and says which one.
func TestDefaultSession(t *testing.T) {
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(agents, "main", "sessions")
	old := filepath.Join(dir, "7f3e2a10-5b6c-4d8e-9f01-23456789abcd.jsonl")
	data, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	const newer = "0a0a0a0a-1111-4222-8333-444444444444"
	lines := strings.SplitN(string(data), "\n", 2)
	head := strings.Replace(lines[0], "7f3e2a10-5b6c-4d8e-9f01-23456789abcd", newer, 1)
	if err := os.WriteFile(filepath.Join(dir, newer+".jsonl"), []byte(head+"\n"+lines[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for name, age := range map[string]time.Duration{old: 2 * time.Hour, filepath.Join(dir, newer+".jsonl"): 3 * time.Minute} {
		if err := os.Chtimes(name, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, "context", "history", "--agents-dir", agents)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	want := "session: main/" + newer + " (the most recently modified session of agent main, modified 3 minutes ago; choose another with --session)"
	if !strings.Contains(errs, want) || !strings.Contains(out, "Session: main/"+newer) {
		t.Fatalf("stderr:\n%s\nwant %q\nstdout:\n%s", errs, want, out)
	}
	if err := os.Chtimes(old, now, now); err != nil {
		t.Fatal(err)
	}
	if _, out, errs := run(t, "context", "history", "--agents-dir", agents); !strings.Contains(out, "Session: main/7f3e2a10") {
		t.Fatalf("after touching the old session:\n%s\n%s", out, errs)
	}
}
