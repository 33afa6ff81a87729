package daemon_test

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
)

// snapshot describes every file and directory under root: kind, size,
// mode, modification time and sha256 of the contents.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

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
		before := snapshot(t, root)
		d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, ReadOnly: true, Retention: daemon.Retention(nil, nil), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		d.Close()
		after := snapshot(t, root)
		for p, b := range before {
			if a, ok := after[p]; !ok || a != b {
				t.Errorf("%s changed in read-only mode:\n before %s\n after  %s", p, b, a)
			}
		}
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("%s was created in read-only mode", p)
			}
		}
	})
}
