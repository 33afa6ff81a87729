package retention_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/restorelogtest"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/retention"
)

// TestRunKeepsRestored checks that retention keeps, in every scope, the
// records of entries the restore log says were restored within
// keep_after_restore_seconds, drops the others, and keeps a session's side
// data when the log cannot be read.
func TestRunKeepsRestored(t *testing.T) {
	ctx := context.Background()
	later := time.Now().Add(2 * time.Hour) // every unit expired (retention 1h)
	for _, tt := range []struct {
		name    string
		log     bs.RestoreLog
		want    map[string]bool
		wantErr bool
	}{
		{"no log", nil, set(), false},
		{"r1 restored 5 minutes ago", restorelogtest.Map{Times: map[string]time.Time{"r1": later.Add(-5 * time.Minute), "r2": later.Add(-20 * time.Minute)}}, set("r1"), false},
		{"no log for the session", restorelogtest.Map{Err: fmt.Errorf("pi: %w", bs.ErrInvalid)}, set(), false},
		{"the log cannot be read", restorelogtest.Map{Err: errors.New("disk on fire")}, set("r1", "r2", "r3"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "agents")
			dir := filepath.Join(root, "main", "sessions")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "s1.jsonl"), transcript("s1", "r1", "r2", "r3"), time.Now().Add(-time.Hour))
			bset, err := backend.Open(ctx, root, backend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if rep, err := prune.New(bset.Store, bset.Side, bset.StateDir, passConfig(), nil).Run(ctx, nil); err != nil || rep.Written != 1 {
				t.Fatalf("pass: %+v, %v", rep, err)
			}
			cfg := config.Default()
			cfg.Retention, cfg.RetentionScope = "1h", config.ScopeAll
			st, err := retention.Run(ctx, retention.Options{Store: bset.Store, Side: bset.Side, StateDir: bset.StateDir, Config: cfg,
				Clock: fixedClock(later), Restores: tt.log})
			if (err != nil) != tt.wantErr || (st.Errors > 0) != tt.wantErr {
				t.Fatalf("retention: %+v, %v; want an error %v", st, err, tt.wantErr)
			}
			f := &fx{set: bset}
			if got := f.has(t, "s1", "r1", "r2", "r3"); !mapsEqual(got, tt.want) {
				t.Errorf("kept %v, want %v", keys(got), keys(tt.want))
			}
		})
	}
}
