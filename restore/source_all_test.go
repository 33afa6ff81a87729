package restore_test

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
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// TestRestoreAllSourcePlaceholder: a tool result stored at the source has
// no original line to put back, so RestoreAll (pristine or not) leaves
// its placeholder, lists it in Lost with ProblemSourceKept and does not
// call the session pristine.
func TestRestoreAllSourcePlaceholder(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}]}}`,
		`{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":"[[extracted-tc-call_1]] stored outside"}]}}`,
		`{"type":"message","id":"a1","parentId":"r1","timestamp":"2026-02-18T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}`,
	}
	original := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(path, original, 0o600); err != nil {
		t.Fatal(err)
	}
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
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false,
		[]byte(`[{"type":"text","text":"a.txt\nb.txt"}]`), []byte(`[{"type":"text","text":"[[extracted-tc-call_1]] stored outside"}]`), now))
	if _, err := extract.SaveRecord(ctx, set.Side, ref, rec); err != nil {
		t.Fatal(err)
	}
	r := restore.New(set.Store, set.Side, set.StateDir)
	for _, pristine := range []bool{false, true} {
		res, err := r.RestoreAll(ctx, ref, pristine)
		if err != nil {
			t.Fatal(err)
		}
		if res.Pristine || res.Remaining.SourceValues != 1 || res.Remaining.Placeholders != 1 || len(res.Lost) != 1 ||
			res.Lost[0].Kind != restore.ProblemSourceKept || res.Lost[0].EntryID != "r1" ||
			!strings.Contains(res.Lost[0].Detail, "purge_control restore tc-call_1 returns it") {
			t.Fatalf("pristine %v: %+v", pristine, res)
		}
	}
	if now, _ := os.ReadFile(path); string(now) != string(original) {
		t.Fatalf("the transcript changed:\n%s", now)
	}
}
