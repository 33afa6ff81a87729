package daemon_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testtree"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestReadOnlyWritesNothing: with a config that enables pruning on every
// minute (written before the daemon starts), a read-only daemon runs a
// full hour of schedules and changes nothing at all under the OpenClaw
// root: no transcript, no side file, no config, no log, no state.
func TestReadOnlyWritesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		agents, _, err := demo.Write(root, demo.Options{Sessions: 2, Size: 96 << 10})
		if err != nil {
			t.Fatal(err)
		}
		c := config.Default()
		c.Enabled, c.AutoCron, c.RetentionCron = true, "* * * * *", "*/5 * * * *"
		c.AgeThresholdHours, c.IdleSeconds, c.MinSavingTokens = 0, 0, 0
		if err := config.Save(agents, c); err != nil {
			t.Fatal(err)
		}
		before := testtree.Snapshot(t, root)
		d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), ReadOnly: true, Retention: daemon.Retention(nil, nil), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		d.Close()
		testtree.Unchanged(t, root, before)
	})
}
