package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/daemon"
)

// recScheduler is a plugged Scheduler that records the daemon's calls and
// runs a job only when the test fires it. Jobs it was given stay in kept
// after Unschedule, so that a test can fire a job the daemon took back.
type recScheduler struct {
	mu    sync.Mutex
	calls []string
	specs map[string]string
	kept  map[string]daemon.Job
	fail  error
}

func newRecScheduler() *recScheduler {
	return &recScheduler{specs: map[string]string{}, kept: map[string]daemon.Job{}}
}

func (s *recScheduler) Schedule(name, spec string, job daemon.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("schedule %s %s", name, spec))
	if s.fail != nil {
		return s.fail
	}
	s.specs[name], s.kept[name] = spec, job
	return nil
}

func (s *recScheduler) Unschedule(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "unschedule "+name)
	delete(s.specs, name)
}

func (s *recScheduler) Next(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.specs[name]; !ok {
		return time.Time{}, false
	}
	return time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC), true
}

// takeCalls returns the calls recorded since the last takeCalls.
func (s *recScheduler) takeCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *recScheduler) job(name string) daemon.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kept[name]
}

// TestPluggedScheduler checks a Scheduler given in Options: the daemon
// schedules its jobs there at Start (no Cron of its own), reschedules and
// unschedules on config changes, keeps the old schedule when Schedule
// fails (and tries again on the next config change), shows the scheduler's next run in Status, runs a job the
// scheduler fires, and takes its jobs off the scheduler when Start's
// context is cancelled or at Close, after which a fired job does nothing.
func TestPluggedScheduler(t *testing.T) {
	wantCalls := func(t *testing.T, s *recScheduler, want ...string) {
		t.Helper()
		if got := s.takeCalls(); !slices.Equal(got, want) {
			t.Fatalf("scheduler calls:\n got %q\nwant %q", got, want)
		}
	}
	t.Run("Jobs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newRecScheduler()
			d, _, lb := setup(t, daemon.Options{Scheduler: s})
			if err := d.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s, "schedule prune */2 * * * *", "schedule doctor 17 3 * * *")
			st := d.Status()
			if !st.Prune.Scheduled || st.Prune.NextRunAt == nil || !st.Prune.NextRunAt.Equal(time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)) {
				t.Fatalf("prune status %+v, want scheduled with the scheduler's next run", st.Prune)
			}
			if st.Retention.Scheduled {
				t.Fatal("retention scheduled without a retention pass")
			}

			if _, err := d.Config().Set(t.Context(), []byte(`{"auto_cron": "*/5 * * * *", "doctor_schedule": ""}`)); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s, "schedule prune */5 * * * *", "unschedule doctor")

			s.mu.Lock()
			s.fail = fmt.Errorf("host scheduler full: %w", bs.ErrBusy)
			s.mu.Unlock()
			if _, err := d.Config().Set(t.Context(), []byte(`{"auto_cron": "*/7 * * * *"}`)); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s, "schedule prune */7 * * * *")
			if !strings.Contains(lb.String(), "scheduling failed, the old schedule stays") {
				t.Fatalf("no log of the failed Schedule:\n%s", lb)
			}
			s.mu.Lock()
			s.fail = nil
			s.mu.Unlock()

			if err := s.job(daemon.JobPrune)(t.Context()); err != nil {
				t.Fatal(err)
			}
			if r := lastPrune(t, d); r.Manual || r.Sessions != 4 || r.Extracted != 4 {
				t.Fatalf("fired prune: %+v, want a scheduled run over the 4 sessions that rewrote each", r)
			}

			// The run saved last_run_at: that config change retries the
			// schedule that failed.
			wantCalls(t, s, "schedule prune */7 * * * *")

			d.Close()
			wantCalls(t, s, "unschedule prune")
			if st := d.Status(); st.Prune.Scheduled {
				t.Fatalf("prune still scheduled after Close: %+v", st.Prune)
			}
			before := lastPrune(t, d)
			if err := s.job(daemon.JobPrune)(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := lastPrune(t, d); got != before {
				t.Fatalf("a job fired after Close ran: %+v", got)
			}
			if _, err := d.Config().Set(t.Context(), []byte(`{"auto_cron": "*/3 * * * *"}`)); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s)
		})
	})
	t.Run("StartContextCancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newRecScheduler()
			d, _, _ := setup(t, daemon.Options{Scheduler: s})
			defer d.Close()
			ctx, cancel := context.WithCancel(t.Context())
			if err := d.Start(ctx); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s, "schedule prune */2 * * * *", "schedule doctor 17 3 * * *")
			cancel()
			synctest.Wait()
			wantCalls(t, s, "unschedule prune", "unschedule doctor")
			if _, err := d.Config().Set(t.Context(), []byte(`{"auto_cron": "*/3 * * * *"}`)); err != nil {
				t.Fatal(err)
			}
			wantCalls(t, s)
		})
	})
	t.Run("ScheduleFailsAtStart", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newRecScheduler()
			s.fail = errors.New("no room")
			d, _, _ := setup(t, daemon.Options{Scheduler: s})
			defer d.Close()
			if err := d.Start(t.Context()); !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("Start with a scheduler that refuses = %v, want ErrInvalid", err)
			}
		})
	})
}
