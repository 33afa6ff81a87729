package restore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// Extract a long tool result, get it back at once with Restore, then undo
// everything with RestoreAll pristine.
func ExampleRestorer_Restore() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "restore-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(tmp)
	agents := filepath.Join(tmp, "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Println(err)
		return
	}
	output := strings.Repeat("README.md\n", 100)
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}]}}`,
		`{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[{"type":"text","text":` + fmt.Sprintf("%q", output) + `}]}}`,
		`{"type":"message","id":"a1","parentId":"r1","timestamp":"2026-02-18T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"one file"}]}}`,
		`{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-02-18T09:00:04.000Z","message":{"role":"user","content":[{"type":"text","text":"thanks"}]}}`,
		`{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-02-18T09:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"welcome"}]}}`,
	}
	original := []byte(strings.Join(lines, "\n") + "\n")
	path := filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(path, original, 0o600); err != nil {
		fmt.Println(err)
		return
	}
	// Open the installation: JSONL files and OpenClaw SQLite stores alike.
	// Idle 0 writes at once; a real daemon keeps a quiet period.
	set, err := backend.Open(ctx, agents, backend.Options{Idle: 0})
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := extract.DefaultPolicy()
	policy.AgeThreshold, policy.MinSavingTokens = 0, 0
	if _, err := (&extract.Extractor{Policy: policy, Store: set.Store, Side: set.Side}).Run(ctx, ref); err != nil {
		fmt.Println(err)
		return
	}

	r := restore.New(set.Store, set.Side, set.StateDir)
	res, err := r.Restore(ctx, ref, "r1", []string{"text"}, restore.RestoreOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("restored:", res.Restored, "applied:", res.Applied, "queued:", res.Queued)
	fmt.Println("keys:", res.KeysRestored, "sizes:", res.SizesBytes)
	fmt.Printf("content: %q…\n", res.Text()[:20])

	if _, err := r.RestoreAll(ctx, ref, true); err != nil {
		fmt.Println(err)
		return
	}
	now, _ := os.ReadFile(path)
	fmt.Println("byte-identical after pristine restore:", bytes.Equal(now, original))
	// Output:
	// restored: true applied: true queued: false
	// keys: [/message/content/0/text] sizes: map[/message/content/0/text:1102]
	// content: "README.md\nREADME.md\n"…
	// byte-identical after pristine restore: true
}

// Keys name runs of a stored value's path.
func ExampleMatchKey() {
	path := "/message/content/2/text"
	for _, key := range []string{"/message/content/2/text", "text", "content", "content/2", "2", "thinking"} {
		fmt.Println(key, restore.MatchKey(key, path))
	}
	// Output:
	// /message/content/2/text true
	// text true
	// content true
	// content/2 true
	// 2 true
	// thinking false
}
