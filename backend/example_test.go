package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The README's library example: open an installation (JSONL files and
// OpenClaw SQLite stores alike), run one extraction pass with the runtime
// config, find the resolved session's result in the report, restore one
// value at once, then undo everything byte for byte. It works on any
// agents dir: TestExampleMultiSession runs it on one with several agents
// and sessions.
func Example() {
	ctx := context.Background()
	agentsDir, cleanup := demoCopy() // a temp copy of testdata/demo/agents; use your own agents dir
	defer cleanup()

	cfg, err := config.Load(ctx, agentsDir, nil) // .brainsurgeon/config.json, defaults when missing
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg.Enabled = true  // nothing is rewritten until a user opts in
	cfg.IdleSeconds = 0 // no quiet period (a daemon keeps the default 300 s)
	cfg.AgeThresholdHours = 0
	cfg.MinValueLength = 200

	set, err := backend.Open(ctx, agentsDir, backend.FromConfig(cfg, nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, err := set.Store.Resolve(ctx, "agent:main:main") // by key, agent/sessionId, id or path
	if err != nil {
		fmt.Println(err)
		return
	}
	rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil) // queued write-backs, then one pass per session
	if err != nil {
		fmt.Println(err)
		return
	}
	s := rep.Session(ref) // this session's result, whatever else the agents dir holds
	if s == nil || s.Result == nil || len(s.Result.Details) == 0 {
		fmt.Println("nothing extracted from", ref, "-", rep.Reason)
		return
	}
	fmt.Println(s.Session, s.Backend, s.Status, s.Result.Entries, "entries")

	r := restore.New(set.Store, set.Side, set.StateDir)
	out, err := r.Restore(ctx, ref, s.Result.Details[0].ID, nil, restore.RestoreOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("restored:", out.Restored, "written back:", out.Applied)

	all, err := r.RestoreAll(ctx, ref, true) // pristine: the transcript as it was
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pristine undo written:", all.Applied)
	// Output:
	// main/7f3e2a10-5b6c-4d8e-9f01-23456789abcd jsonl extracted 5 entries
	// restored: true written back: true
	// pristine undo written: true
}

// demoExtra, when set, adds to the copy demoCopy makes (a test gives the
// example an agents dir with more sessions).
var demoExtra func(agentsDir string) error

// demoCopy copies the bundled demo agents dir into a temp dir.
func demoCopy() (string, func()) {
	tmp, err := os.MkdirTemp("", "backend-example-")
	if err != nil {
		panic(err)
	}
	src := filepath.Join("..", "testdata", "demo", "agents")
	dst := filepath.Join(tmp, "agents")
	err = filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err == nil && demoExtra != nil {
		err = demoExtra(dst)
	}
	if err != nil {
		panic(err)
	}
	return dst, func() { os.RemoveAll(tmp) }
}
