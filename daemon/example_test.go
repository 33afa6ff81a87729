package daemon_test

import (
	"context"
	"fmt"
	"os"

	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// Open a daemon on an agents dir, enable pruning through the config
// service (as POST /api/config does), run a pass now and read the status.
// A program that serves would call Start(ctx) and, on shutdown, Close.
func Example() {
	root, _ := os.MkdirTemp("", "daemon-example-")
	defer os.RemoveAll(root)
	agents, _, err := demo.Write(root, demo.Options{Sessions: 1, Size: 64 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	if _, err := d.Config().Set(ctx, []byte(`{"enabled": true, "auto_cron": "*/5 * * * *"}`)); err != nil {
		fmt.Println(err)
		return
	}
	_, err = d.Config().Set(ctx, []byte(`{"retention": "5x"}`))
	fmt.Println("invalid change:", err)

	r, err := d.RunPruneNow(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d sessions, %d rewritten, %d failed\n", r.Sessions, r.Extracted, r.Failed)
	st := d.Status()
	fmt.Println("prune cron:", st.Prune.Cron, "last run recorded:", st.Prune.LastRunAt != nil)
	// Output:
	// invalid change: retention: Invalid duration '5x'. Use m, h, d, or w
	// 2 sessions, 2 rewritten, 0 failed
	// prune cron: */5 * * * * last run recorded: true
}
