package daemon_test

import (
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestEngineFollowsConfig checks the daemon's context engine (the one an
// API over the daemon uses): it is made from the runtime config
// (extraction policy, compaction thresholds, the stores' state dir), kept
// while the config is unchanged, made again after a change, and none is
// given once the daemon is closed.
func TestEngineFollowsConfig(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		t.Fatal(err)
	}
	e := d.Engine()
	if e == nil || e.Store == nil || e.StateDir == "" || e.Summarizer == nil || e.Settings.WarnAt != 3 {
		t.Fatalf("engine %+v, want one over the stores with the config's settings", e)
	}
	if d.Engine() != e {
		t.Error("a second request got another engine while the config is unchanged")
	}
	if _, err := d.Config().Set(ctx, []byte(`{"keep_recent":7,"compaction":{"warn_at":2}}`)); err != nil {
		t.Fatal(err)
	}
	n := d.Engine()
	if n == e || n.Policy.KeepRecent != 7 || n.Settings.WarnAt != 2 {
		t.Errorf("after a config change: same engine %v, keep_recent %d, warn_at %d; want a new one with 7 and 2", n == e, n.Policy.KeepRecent, n.Settings.WarnAt)
	}
	d.Close()
	if d.Engine() != nil {
		t.Error("an engine after Close")
	}
}
