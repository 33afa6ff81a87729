package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/adhocore/gronx"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// TestCron checks the scheduler alone on fake time: ticks on the minute,
// replacement, Unschedule, a bad expression, ticks skipped while a run is
// going, and Close waiting for a run.
func TestCron(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lb := &logBuf{}
		c := daemon.NewCron(t.Context(), lb.logger())
		c.Location = time.UTC
		var mu sync.Mutex
		runs := map[string]int{}
		count := func(name string) daemon.Job {
			return func(ctx context.Context) error {
				mu.Lock()
				runs[name]++
				mu.Unlock()
				return nil
			}
		}
		get := func(name string) int { mu.Lock(); defer mu.Unlock(); return runs[name] }

		for _, bad := range []string{"61 * * * *", "0,99 * * * *", "", "every minute"} {
			if err := c.Schedule("a", bad, count("a")); !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("Schedule(%q) = %v, want ErrInvalid", bad, err)
			}
		}
		if err := c.Schedule("a", "*/2 * * * *", count("a")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10*time.Minute + time.Second)
		synctest.Wait()
		if n := get("a"); n != 5 {
			t.Fatalf("*/2 ran %d times in 10 minutes, want 5", n)
		}
		// Replace: the old schedule stops, the new one runs.
		if err := c.Schedule("a", "*/5 * * * *", count("a5")); err != nil {
			t.Fatal(err)
		}
		if next, _ := c.Next("a"); !next.Equal(time.Date(2000, 1, 1, 0, 15, 0, 0, time.UTC)) {
			t.Fatalf("next after replacing = %v, want 00:15", next)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if get("a") != 5 || get("a5") != 2 {
			t.Fatalf("after replacing: a ran %d, a5 ran %d; want 5 and 2", get("a"), get("a5"))
		}
		c.Unschedule("a")
		if _, ok := c.Next("a"); ok {
			t.Fatal("Next reports an unscheduled job")
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if get("a5") != 2 {
			t.Fatal("an unscheduled job ran")
		}

		// A slow job: the ticks that pass while it runs are skipped.
		release := make(chan struct{})
		var slowRuns int
		if err := c.Schedule("slow", "* * * * *", func(ctx context.Context) error {
			mu.Lock()
			slowRuns++
			n := slowRuns
			mu.Unlock()
			if n == 1 {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(61 * time.Second) // the first run starts and blocks
		time.Sleep(3 * time.Minute)
		close(release)
		synctest.Wait()
		if !strings.Contains(lb.String(), "slow: 3 tick(s) skipped while the previous run was going") {
			t.Errorf("no skipped-ticks log:\n%s", lb.String())
		}
		// Close waits for a run in progress, which sees the cancellation.
		var stopped bool
		if err := c.Schedule("slow", "* * * * *", func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(time.Second) // a write that finishes
			mu.Lock()
			stopped = true
			mu.Unlock()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		c.Close()
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			t.Error("Close returned before the run finished")
		}
		if err := c.Schedule("b", "* * * * *", count("b")); !errors.Is(err, bs.ErrUnsupported) {
			t.Errorf("Schedule after Close = %v, want ErrUnsupported", err)
		}
	})
}

// TestRunTimeKeepsConfigChange is the first BrainSurgeon's defect 25: a
// config change made while a run is going must survive the run's save of
// its run time.
func TestRunTimeKeepsConfigChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		retention := func(ctx context.Context, set bs.Installation, c config.Config) (any, error) {
			<-release
			return nil, nil
		}
		d, _, _ := setup(t, daemon.Options{Retention: retention})
		done := make(chan error)
		go func() { _, err := d.RunRetentionNow(t.Context()); done <- err }()
		synctest.Wait()
		if _, err := d.Config().Set(t.Context(), []byte(`{"keep_recent": 7, "min_value_length": 800}`)); err != nil {
			t.Fatal(err)
		}
		// Close waits for the manual run too.
		closed := make(chan struct{})
		go func() { d.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned during a manual run")
		default:
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		<-closed
		c, err := config.Load(t.Context(), d.AgentsDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.KeepRecent != 7 || c.MinValueLength != 800 || c.LastRetentionRunAt == nil {
			t.Fatalf("config after the run: keep_recent %d, min_value_length %d, last_retention_run_at %v; want 7, 800, set",
				c.KeepRecent, c.MinValueLength, c.LastRetentionRunAt)
		}
	})
}

var placeholder = regexp.MustCompile(`\[\[extracted-([^\]]+)\]\]`)

// TestQueuedWriteBackAppliedWhenIdle restores a value while its session is
// busy (the write-back is queued) and checks that a tick applies it once
// the session is idle, even with pruning disabled.
func TestQueuedWriteBackAppliedWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, sessions, _ := setup(t, daemon.Options{})
		if r, err := d.RunPruneNow(t.Context()); err != nil || r.Extracted != 4 {
			t.Fatalf("first run = %+v, %v", r, err)
		}
		s := sessions[0]
		data, _ := os.ReadFile(s.Path)
		m := placeholder.FindSubmatch(data)
		if m == nil {
			t.Fatal("no placeholder")
		}
		entry := string(m[1])
		now := time.Now()
		os.Chtimes(s.Path, now, now) // the host just wrote: busy
		set, err := backend.Open(t.Context(), d.AgentsDir(), backend.Options{Idle: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		res, err := restore.New(set.Store, set.Side, set.StateDir).Restore(t.Context(), bs.SessionRef{Agent: s.Agent, ID: s.ID, Path: s.Path, Key: s.Key}, entry, nil, restore.RestoreOptions{})
		if err != nil || !res.Queued {
			t.Fatalf("Restore on a busy session = %+v, %v; want queued", res, err)
		}
		if _, err := d.Config().Set(t.Context(), []byte(`{"enabled": false}`)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if r := lastPrune(t, d); r.WriteBacks != 0 {
			t.Fatalf("a write-back was applied to a busy session: %+v", r)
		}
		time.Sleep(4 * time.Minute) // idle_seconds (300) pass
		synctest.Wait()
		r := lastPrune(t, d)
		if r.WriteBacks != 1 || !r.Disabled {
			t.Fatalf("run once idle = %+v, want 1 write-back (pruning disabled)", r)
		}
		data, _ = os.ReadFile(s.Path)
		if bytes.Contains(data, []byte("[[extracted-"+entry+"]]")) {
			t.Error("the value is still a placeholder after the write-back")
		}
	})
}

// TestRecheckAfterAgeThreshold checks that an unchanged session whose
// values were too young is read again once they are old enough.
func TestRecheckAfterAgeThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 96 << 10})
		if err != nil {
			t.Fatal(err)
		}
		// The threshold is the age of the middle entry: the newer half is
		// too young now, and old enough within the hour (the half spans minutes).
		data, _ := os.ReadFile(sessions[0].Path)
		stamps := regexp.MustCompile(`"timestamp":"([^"]+)"`).FindAllSubmatch(data, -1)
		mid, err := time.Parse(time.RFC3339, string(stamps[len(stamps)/2][1]))
		if err != nil {
			t.Fatal(err)
		}
		hours := time.Since(mid).Hours()
		lb := &logBuf{}
		d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: lb.logger(), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Config().Set(t.Context(), []byte(fmt.Sprintf(`{"enabled": true, "age_threshold_hours": %.3f, "keep_recent": 0, "min_saving_tokens": 0}`, hours))); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		first := countPlaceholders(t, sessions)
		if r := lastPrune(t, d); r.Processed != 1 || first == 0 {
			t.Fatalf("first run = %+v with %d placeholders", r, first)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if r := lastPrune(t, d); r.Unchanged != 1 {
			t.Fatalf("second run = %+v, want unchanged", r)
		}
		time.Sleep(2 * time.Hour) // past the 1 h recheck and the newer entries' coming of age
		synctest.Wait()
		if n := countPlaceholders(t, sessions); n <= first {
			t.Fatalf("placeholders after the threshold passed: %d, was %d", n, first)
		}
	})
}

// TestConcurrentConfigChanges changes the cron expression from many
// goroutines while reading the status: the schedule ends on the config's
// final expression (and nothing deadlocks).
func TestConcurrentConfigChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, _, _ := setup(t, daemon.Options{Retention: func(ctx context.Context, set bs.Installation, c config.Config) (any, error) { return nil, nil }})
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := d.Start(ctx); err != nil {
				t.Error(err)
			}
		})
		for i := range 20 {
			wg.Go(func() {
				body := fmt.Sprintf(`{"auto_cron": "*/%d * * * *", "retention_cron": "%d * * * *"}`, i%7+1, i)
				if _, err := d.Config().Set(ctx, []byte(body)); err != nil {
					t.Error(err)
				}
				_ = d.Status()
			})
		}
		wg.Wait()
		c := d.Config().Get()
		for _, tt := range []struct{ name, spec string }{{daemon.JobPrune, c.AutoCron}, {daemon.JobRetention, c.RetentionCron}} {
			if got := d.Status(); (tt.name == daemon.JobPrune && got.Prune.Cron != tt.spec) || (tt.name == daemon.JobRetention && got.Retention.Cron != tt.spec) {
				t.Errorf("%s status cron differs from the config %q", tt.name, tt.spec)
			}
		}
		st := d.Status()
		next, err := gronxNext(c.AutoCron)
		if err != nil {
			t.Fatal(err)
		}
		if st.Prune.NextRunAt == nil || !st.Prune.NextRunAt.Equal(next) {
			t.Errorf("prune next_run_at = %v, want %v (config %q)", st.Prune.NextRunAt, next, c.AutoCron)
		}
	})
}

func gronxNext(spec string) (time.Time, error) {
	return gronx.NextTickAfter(spec, time.Now().UTC(), false)
}

// TestObsoleteFieldUpgraded opens a daemon on a config of an earlier
// version that holds scan_interval_seconds, which nothing reads: the
// daemon starts, keeps the file's other fields, and saves the file
// without the obsolete field.
func TestObsoleteFieldUpgraded(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := config.Path(agents)
	old := config.Default()
	old.KeepRecent = 9
	if err := config.Save(agents, old); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"keep_recent": 9,`), []byte(`"keep_recent": 9, "scan_interval_seconds": 30,`), 1)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	d, err := daemon.Open(t.Context(), daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: logs.logger()})
	if err != nil {
		t.Fatalf("open with an obsolete field: %v", err)
	}
	defer d.Close()
	if got := d.Config().Get().KeepRecent; got != 9 {
		t.Errorf("keep_recent %d, want the file's 9", got)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(saved, []byte("scan_interval_seconds")) {
		t.Errorf("the upgraded config still holds the obsolete field:\n%s", saved)
	}
	if !strings.Contains(logs.String(), "obsolete field scan_interval_seconds is ignored") {
		t.Errorf("the upgrade log does not say the field is ignored:\n%s", logs.String())
	}
}
