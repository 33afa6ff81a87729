package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// TestRestoreAllSourcePlaceholder: restore --all --pristine leaves the
// placeholder of a tool result stored at the source, says so and exits 1
// (the session is not pristine).
func TestRestoreAllSourcePlaceholder(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lines := `{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}]}}
{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":"[[extracted-tc-call_1]] stored outside"}]}}
`
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	saveConfig(t, agents, noIdle)
	set, err := backend.Open(ctx, agents, backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := &extract.Record{Session: ref.String(), EntryID: "tc-call_1", TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, []byte(`[{"type":"text","text":"a.txt"}]`), []byte(`[]`), now))
	if _, err := extract.SaveRecord(ctx, set.Side, ref, rec); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "restore", "main/s1", "--all", "--pristine", "--agents-dir", agents)
	if code != 1 || !strings.Contains(out, "Pristine    no: 1 tool result stored at the source keeps its placeholder") ||
		!strings.Contains(out, "source_not_written_back") || !strings.Contains(errs, "not pristine") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
