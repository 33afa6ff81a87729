package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// logBuf collects log records; an optional hook sees each message.
type logBuf struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	hook func(msg string)
}

func (b *logBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuf) logger() *slog.Logger {
	return slog.New(hookHandler{slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}), b})
}

type hookHandler struct {
	slog.Handler
	b *logBuf
}

func (h hookHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.b.hook != nil {
		h.b.hook(r.Message)
	}
	return h.Handler.Handle(ctx, r)
}

func (h hookHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return hookHandler{h.Handler.WithAttrs(as), h.b}
}

// setup writes a small demo agents dir (inside a synctest bubble, so its
// times are the bubble's) and opens a daemon on it with pruning enabled.
func setup(t *testing.T, opts daemon.Options) (*daemon.Daemon, []demo.Session, *logBuf) {
	t.Helper()
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Sessions: 2, Size: 96 << 10})
	if err != nil {
		t.Fatal(err)
	}
	lb := &logBuf{}
	opts.AgentsDir, opts.Open, opts.Logger, opts.Location = agents, wiring.Opener(agents, ""), lb.logger(), time.UTC
	d, err := daemon.Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !opts.ReadOnly {
		// Open creates the config file with the defaults.
		if c, err := config.Load(t.Context(), agents, nil); err != nil || c.Enabled {
			t.Fatalf("config after Open = %+v, %v; want the defaults", c, err)
		}
		if _, err := os.Stat(d.Config().Path()); err != nil {
			t.Fatalf("Open did not create the config file: %v", err)
		}
		if _, err := d.Config().Set(t.Context(), []byte(`{"enabled": true}`)); err != nil {
			t.Fatal(err)
		}
	}
	return d, sessions, lb
}

func lastPrune(t *testing.T, d *daemon.Daemon) *daemon.PruneResult {
	t.Helper()
	r, ok := d.Status().Prune.LastResult.(*daemon.PruneResult)
	if !ok || r == nil {
		t.Fatalf("no prune result in the status: %+v", d.Status().Prune)
	}
	return r
}

func countPlaceholders(t *testing.T, ss []demo.Session) int {
	t.Helper()
	n := 0
	for _, s := range ss {
		data, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte("[[extracted-"))
	}
	return n
}

// TestScheduledPrune follows the schedule on fake time: the first tick
// prunes every session and saves last_run_at, the next skips them all as
// unchanged, a changed session is processed again, a config change
// reschedules at once, and "enabled": false stops the work.
func TestScheduledPrune(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, sessions, lb := setup(t, daemon.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		defer func() { cancel(); d.Close() }()
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		st := d.Status()
		if !st.Prune.Scheduled || st.Prune.NextRunAt == nil || !st.Prune.NextRunAt.Equal(time.Date(2000, 1, 1, 0, 2, 0, 0, time.UTC)) {
			t.Fatalf("prune status before the first tick = %+v, want next_run_at 00:02", st.Prune)
		}
		time.Sleep(2*time.Minute + time.Second)
		synctest.Wait()
		r := lastPrune(t, d)
		if r.Sessions != 4 || r.Processed != 4 || r.Extracted != 4 || r.Failed != 0 || r.Values == 0 || r.Reason != "" {
			t.Fatalf("first run = %+v, want 4 sessions processed and extracted", r)
		}
		if countPlaceholders(t, sessions) == 0 {
			t.Fatal("no placeholders after the first run")
		}
		c, err := config.Load(t.Context(), d.AgentsDir(), nil)
		if err != nil || c.LastRunAt == nil || !c.LastRunAt.Equal(time.Date(2000, 1, 1, 0, 2, 0, 0, time.UTC)) {
			t.Fatalf("last_run_at on disk = %v, %v; want 00:02", c.LastRunAt, err)
		}
		if !strings.Contains(lb.String(), "Processing session main/"+sessions[0].ID+", ") {
			t.Errorf("no Processing log line:\n%s", lb.String())
		}

		time.Sleep(2 * time.Minute)
		synctest.Wait()
		r = lastPrune(t, d)
		if r.Unchanged != 4 || r.Processed != 0 {
			t.Fatalf("second run = %+v, want 4 unchanged", r)
		}
		if want := "nothing was written: every session (4) is unchanged since it was last processed"; r.Reason != want {
			t.Errorf("second run's reason %q, want %q", r.Reason, want)
		}
		if want := "Session main/" + sessions[0].ID + " unchanged since 2000-01-01T00:02:"; !strings.Contains(lb.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, lb.String())
		}

		// A session that changes (and is idle again) is read again.
		f, err := os.OpenFile(sessions[1].Path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(`{"type":"custom","customType":"note","id":"n1","parentId":null,"timestamp":"1999-12-31T20:00:00.000Z","data":{}}` + "\n")
		f.Close()
		old := time.Now().Add(-time.Hour)
		os.Chtimes(sessions[1].Path, old, old)
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		r = lastPrune(t, d)
		if r.Unchanged != 3 || r.Processed != 1 {
			t.Fatalf("run after a change = %+v, want 1 processed, 3 unchanged", r)
		}

		// A new cron expression takes effect at once; an invalid one is
		// refused, saved nowhere, and the schedule stays.
		if _, err := d.Config().Set(ctx, []byte(`{"auto_cron": "*/5 * * * *"}`)); err != nil {
			t.Fatal(err)
		}
		if next := d.Status().Prune.NextRunAt; next == nil || !next.Equal(time.Date(2000, 1, 1, 0, 10, 0, 0, time.UTC)) {
			t.Fatalf("next_run_at after the change = %v, want 00:10", next)
		}
		before, _ := os.ReadFile(d.Config().Path())
		_, err = d.Config().Set(ctx, []byte(`{"auto_cron": "61 * * * *", "retention": "5x"}`))
		var ve *config.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, bs.ErrInvalid) {
			t.Fatalf("invalid Set error = %v, want a ValidationError", err)
		}
		if _, ok := ve.Field("auto_cron"); !ok {
			t.Errorf("error %v does not name auto_cron", err)
		}
		if _, ok := ve.Field("retention"); !ok {
			t.Errorf("error %v does not name retention", err)
		}
		after, _ := os.ReadFile(d.Config().Path())
		if !bytes.Equal(before, after) || d.Config().Get().AutoCron != "*/5 * * * *" {
			t.Error("an invalid Set changed the config")
		}
		if next := d.Status().Prune.NextRunAt; next == nil || !next.Equal(time.Date(2000, 1, 1, 0, 10, 0, 0, time.UTC)) {
			t.Fatalf("next_run_at after an invalid change = %v, want 00:10", next)
		}

		// Disabled: the tick does no pruning.
		if _, err := d.Config().Set(ctx, []byte(`{"enabled": false}`)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if r = lastPrune(t, d); !r.Disabled || r.Processed != 0 {
			t.Fatalf("disabled run = %+v", r)
		}
	})
}

// TestRunsNeverOverlap holds a retention run and checks that a manual run
// is refused, that a scheduled tick is skipped and logged, and that Close
// waits for the run.
func TestRunsNeverOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var runs int
		var mu sync.Mutex
		retention := func(ctx context.Context, set bs.Installation, c config.Config) (any, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			<-release
			return map[string]int{"cleaned": 1}, nil
		}
		d, _, lb := setup(t, daemon.Options{Retention: retention})
		ctx, cancel := context.WithCancel(t.Context())
		if _, err := d.Config().Set(ctx, []byte(`{"retention_cron": "* * * * *"}`)); err != nil {
			t.Fatal(err)
		}
		if err := d.Start(ctx); err != nil { // starts the start-up retention run
			t.Fatal(err)
		}
		synctest.Wait()
		if !d.Status().Retention.Running {
			t.Fatal("the start-up retention run is not running")
		}
		if _, err := d.RunRetentionNow(ctx); !errors.Is(err, bs.ErrBusy) {
			t.Fatalf("RunRetentionNow during a run = %v, want ErrBusy", err)
		}
		time.Sleep(61 * time.Second)
		synctest.Wait()
		if !strings.Contains(lb.String(), "retention: tick skipped, the previous run is still going") {
			t.Errorf("no skipped-tick log:\n%s", lb.String())
		}
		close(release)
		synctest.Wait()
		st := d.Status().Retention
		if st.Running || st.LastResult == nil || st.LastRunAt == nil {
			t.Fatalf("retention status after the run = %+v", st)
		}
		res, err := d.RunRetentionNow(ctx)
		if err != nil || res.(map[string]int)["cleaned"] != 1 {
			t.Fatalf("RunRetentionNow = %v, %v", res, err)
		}
		cancel()
		d.Close()
		mu.Lock()
		defer mu.Unlock()
		if runs != 2 {
			t.Errorf("retention ran %d times, want 2 (start-up and manual)", runs)
		}
	})
}

// TestShutdownFinishesWrite cancels the context while the first session
// is being extracted: that session's write completes, the run stops
// before the next session.
func TestShutdownFinishesWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, sessions, lb := setup(t, daemon.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		var once sync.Once
		lb.hook = func(msg string) {
			if msg == "extracted" {
				once.Do(cancel)
			}
		}
		r, err := d.RunPruneNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Stopped || r.Extracted != 1 || r.Processed != 1 {
			t.Fatalf("run cancelled mid-write = %+v, want 1 session extracted and stopped", r)
		}
		if countPlaceholders(t, sessions[:1]) == 0 {
			t.Error("the session being written has no placeholders")
		}
		if countPlaceholders(t, sessions[1:]) != 0 {
			t.Error("sessions after the cancellation were written")
		}
		if c := d.Config().Get(); c.LastRunAt != nil {
			t.Error("an incomplete run saved last_run_at")
		}
		d.Close()
	})
}

// TestReadOnly writes nothing: no config file, no schedule, no runs.
func TestReadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, sessions, _ := setup(t, daemon.Options{ReadOnly: true})
		if _, err := os.Stat(d.Config().Path()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("read-only Open created the config file: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Config().Set(ctx, []byte(`{"enabled": true}`)); !errors.Is(err, daemon.ErrReadOnly) {
			t.Errorf("Set = %v, want ErrReadOnly", err)
		}
		if _, err := d.RunPruneNow(ctx); !errors.Is(err, daemon.ErrReadOnly) {
			t.Errorf("RunPruneNow = %v, want ErrReadOnly", err)
		}
		if st := d.Status(); st.Prune.Scheduled || !st.ReadOnly {
			t.Errorf("status = %+v, want read-only and nothing scheduled", st)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		cancel()
		d.Close()
		if countPlaceholders(t, sessions) != 0 {
			t.Error("read-only mode wrote a transcript")
		}
		if _, err := os.Stat(filepath.Dir(d.Config().Path())); !errors.Is(err, os.ErrNotExist) {
			t.Errorf(".brainsurgeon exists in read-only mode: %v", err)
		}
	})
}

// TestLimitMemory checks that a run with Options.LimitMemory sets the
// runtime's soft memory limit for its sessions (48 MB for small ones), and
// that a daemon without it leaves the limit alone.
func TestLimitMemory(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	for _, limit := range []bool{false, true} {
		debug.SetMemoryLimit(math.MaxInt64)
		d, _, _ := setup(t, daemon.Options{LimitMemory: limit})
		if r, err := d.RunPruneNow(t.Context()); err != nil || r.Processed == 0 {
			t.Fatalf("LimitMemory %v: run = %+v, %v", limit, r, err)
		}
		d.Close()
		want := int64(math.MaxInt64)
		if limit {
			want = memlimit.Min
		}
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("LimitMemory %v: runtime memory limit %d after a run, want %d", limit, got, want)
		}
	}
}
