package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
)

// Extract a session's tool results, then run retention a day later: the
// expired pack goes, the placeholder stays and a restore answers
// restore.MissingText.
func ExampleRun() {
	ctx := context.Background()
	tmp, _ := os.MkdirTemp("", "retention-example")
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "agents")
	dir := filepath.Join(root, "main", "sessions")
	_ = os.MkdirAll(dir, 0o700)
	path := filepath.Join(dir, "s1.jsonl")
	_ = os.WriteFile(path, transcript("s1", "r1", "r2"), 0o600)
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(path, old, old)

	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := prune.New(set.Store, set.Side, set.StateDir, passConfig(), nil).Run(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}

	cfg := config.Default() // retention "24h", scope "all"
	stats, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir,
		Config: cfg, Clock: fixedClock(time.Now().Add(25 * time.Hour))})
	fmt.Println("cleaned:", stats.Cleaned, "errors:", stats.Errors, err)

	ref, _ := set.Store.Resolve(ctx, "main/s1")
	res, _ := restore.New(set.Store, set.Side, set.StateDir).Restore(ctx, ref, "r1", nil, restore.RestoreOptions{})
	for _, v := range res.Content {
		fmt.Println("r1:", v)
	}
	// Output:
	// cleaned: 1 errors: 0 <nil>
	// r1: [Content unavailable - extracted file missing]
}

func ExampleHumanBytes() {
	fmt.Println(retention.HumanBytes(1258291))
	// Output: 1.2 MB
}
