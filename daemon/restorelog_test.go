package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestRestoreLogWired checks the daemon's wiring of the one notion of
// "restored": its engine reads the side store, its API Restorer records in
// the engine's state, and a value restored through the engine's view is
// not extracted by the daemon's prune run within keep_after_restore_seconds.
func TestRestoreLogWired(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "5e551011-0000-4000-8000-00000000000d"
	lines := []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, id),
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"look"}],"timestamp":1767225601000}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"exec","arguments":{"command":"cat"}}],"provider":"p","model":"m","usage":{"input":10,"output":5,"totalTokens":15},"stopReason":"toolUse","timestamp":1767225602000}}`,
		fmt.Sprintf(`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":%q}],"isError":false,"timestamp":1767225603000}}`,
			strings.Repeat("a line of the tool's output\n", 400)),
		`{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"p","model":"m","usage":{"input":3000,"output":5,"totalTokens":3005},"stopReason":"stop","timestamp":1767225604000}}`,
	}
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Retention: daemon.Retention(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Config().Set(ctx, []byte(`{"enabled":true,"keep_recent":0,"idle_seconds":0,"age_threshold_hours":0,"min_saving_tokens":0}`)); err != nil {
		t.Fatal(err)
	}
	e := d.Engine()
	if e == nil || e.Side == nil {
		t.Fatalf("engine %+v: want one that reads the side store", e)
	}
	if r := d.Restorer(); r == nil || r.Restores == nil {
		t.Fatal("the API's Restorer has no restore log")
	}
	ref, err := e.Store.Resolve(ctx, "main/"+id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Value(ctx, ref, "r1"); err != nil {
		t.Fatal(err)
	}
	res, err := d.RunPruneNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); bytes.Contains(b, []byte("[[extracted-r1]]")) || res.Values != 0 {
		t.Fatalf("the daemon's prune extracted a value restored through the engine's view: %+v", res)
	}
	// Retention keeps nothing it should not: it runs with the log.
	if _, err := d.RunRetentionNow(ctx); err != nil {
		t.Fatal(err)
	}
}
