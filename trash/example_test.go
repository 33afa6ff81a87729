package trash_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// Delete a session into the trash, list the trash, and restore it.
func Example() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "trash-example")
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "agents")
	dir := filepath.Join(root, "main", "sessions")
	_ = os.MkdirAll(dir, 0o700)
	old := time.Now().Add(-time.Hour)
	for name, data := range map[string][]byte{
		"abc.jsonl":     transcript("abc", "", "r1"),
		"sessions.json": []byte(`{"agent:main:main":{"sessionId":"abc","status":"done"}}`),
	} {
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o600)
		_ = os.Chtimes(filepath.Join(dir, name), old, old)
	}

	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	bin := trash.New(set.Store, set.AgentsDir, set.StateDir)
	item, err := bin.Delete(ctx, "main", "abc")
	if err != nil {
		fmt.Println(err)
		return
	}
	items, _ := bin.List(ctx)
	fmt.Println("in the trash:", len(items), items[0].SessionID, items[0].State)
	sj, _ := os.ReadFile(filepath.Join(dir, "sessions.json"))
	fmt.Println("sessions.json:", string(sj))

	if _, err := bin.Restore(ctx, item.ID); err != nil {
		fmt.Println(err)
		return
	}
	sj, _ = os.ReadFile(filepath.Join(dir, "sessions.json"))
	fmt.Println("sessions.json:", string(sj))
	// Output:
	// in the trash: 1 abc trashed
	// sessions.json: {}
	// sessions.json: {"agent:main:main":{"sessionId":"abc","status":"done"}}
}
