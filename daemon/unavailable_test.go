package daemon_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestPruneSideStoreUnavailable takes the side store down once a
// scheduled run has written its first session: the run stops (the next
// session fails, the two after it are not attempted), reports it (result,
// last error, log), keeps last_run_at unsaved; the next tick, with the
// store back, reads exactly the three sessions left and extracts them.
func TestPruneSideStoreUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Sessions: 2, Size: 96 << 10})
		if err != nil {
			t.Fatal(err)
		}
		fault := sidefault.New(nil)
		open := wiring.Opener(agents, "")
		lb := &logBuf{}
		var armed atomic.Bool
		lb.hook = func(msg string) {
			if strings.HasPrefix(msg, "Processing session ") && armed.CompareAndSwap(true, false) {
				fault.Down()
			}
		}
		d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, Logger: lb.logger(), Location: time.UTC,
			Open: func(ctx context.Context, c config.Config, log bs.Logger) (bs.Installation, error) {
				inst, err := open(ctx, c, log)
				inst.Side = fault.Over(inst.Side)
				return inst, err
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Config().Set(t.Context(), []byte(`{"enabled": true}`)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the retention run at start-up
		armed.Store(true)
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()

		r := lastPrune(t, d)
		if r.Sessions != 4 || r.Processed != 2 || r.Extracted != 1 || r.Failed != 1 || r.NotAttempted != 2 ||
			!strings.Contains(r.Unavailable, sidefault.Cause) || strings.Contains(r.Unavailable, "not attempted") {
			t.Fatalf("run with the store down = %+v; want 1 extracted, 1 failed, 2 not attempted", r)
		}
		failed := 0
		for _, op := range sidefault.All {
			failed += fault.Failed(op)
		}
		if failed != 1 {
			t.Errorf("%d calls failed on the store that is down, want 1 (the run stops)", failed)
		}
		st := d.Status().Prune
		if !strings.Contains(st.LastError, "side store unavailable") || !strings.Contains(st.LastError, "2 sessions not attempted") {
			t.Errorf("last_error %q: want the side store's error and the count not attempted", st.LastError)
		}
		for _, w := range []string{"2 not attempted: the side store cannot be reached", "level=ERROR msg=\"cron job failed\""} {
			if !strings.Contains(lb.String(), w) {
				t.Errorf("log lacks %q:\n%s", w, lb.String())
			}
		}
		if c, err := config.Load(t.Context(), agents, nil); err != nil || c.LastRunAt != nil {
			t.Fatalf("last_run_at = %v, %v; want none after a run the side store stopped", c.LastRunAt, err)
		}

		fault.Up()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		r = lastPrune(t, d)
		if r.Processed != 3 || r.Unchanged != 1 || r.Extracted != 3 || r.Failed != 0 || r.NotAttempted != 0 || r.Unavailable != "" {
			t.Fatalf("next run = %+v; want the 3 sessions left processed and extracted, 1 unchanged", r)
		}
		if st := d.Status().Prune; st.LastError != "" {
			t.Errorf("last_error %q after a good run", st.LastError)
		}
		if n := countPlaceholders(t, sessions); n == 0 {
			t.Fatal("no placeholders")
		}
		if c, err := config.Load(t.Context(), agents, nil); err != nil || c.LastRunAt == nil {
			t.Fatalf("last_run_at = %v, %v; want it saved", c.LastRunAt, err)
		}
		// A manual run (the API's) fails with the error, answered 503.
		fault.Down()
		r, err = d.RunPruneNow(ctx)
		if !errors.Is(err, bs.ErrUnavailable) || r == nil || r.Failed != 1 || r.NotAttempted != 3 {
			t.Fatalf("RunPruneNow with the store down = %+v, %v; want 1 failed, 3 not attempted and an error wrapping ErrUnavailable", r, err)
		}
	})
}
