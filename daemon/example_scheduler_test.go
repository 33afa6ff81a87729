package daemon_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// hostScheduler stands for the scheduler of a program that embeds the
// daemon: it keeps the jobs it is given and runs one when the program says
// so (Fire). A real one would run them on their expressions.
type hostScheduler struct {
	mu    sync.Mutex
	specs map[string]string
	jobs  map[string]daemon.Job
}

var _ daemon.Scheduler = (*hostScheduler)(nil)

func (s *hostScheduler) Schedule(name, spec string, job daemon.Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Printf("host: schedule %s on %q\n", name, spec)
	s.specs[name], s.jobs[name] = spec, job
	return nil
}

func (s *hostScheduler) Unschedule(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Printf("host: unschedule %s\n", name)
	delete(s.specs, name)
	delete(s.jobs, name)
}

// Next answers a fixed time, so that the example's output does not depend
// on the clock.
func (s *hostScheduler) Next(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[name]; !ok {
		return time.Time{}, false
	}
	return time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), true
}

// Fire runs the job of that name now, as the host's scheduler would on a
// tick.
func (s *hostScheduler) Fire(ctx context.Context, name string) error {
	s.mu.Lock()
	job := s.jobs[name]
	s.mu.Unlock()
	if job == nil {
		return fmt.Errorf("no job %s", name)
	}
	return job(ctx)
}

// A program with a scheduler of its own hands it to the daemon in
// Options.Scheduler: the daemon schedules its jobs there at Start,
// reschedules when the config changes an expression, reads the next runs
// from it for Status, and takes its jobs off it at Close. The scheduler
// itself keeps running; it belongs to the program.
func ExampleScheduler() {
	root, _ := os.MkdirTemp("", "daemon-scheduler-example-")
	defer os.RemoveAll(root)
	agents, _, err := demo.Write(root, demo.Options{Sessions: 1, Size: 64 << 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	host := &hostScheduler{specs: map[string]string{}, jobs: map[string]daemon.Job{}}
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Scheduler: host})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := d.Config().Set(ctx, []byte(`{"enabled": true}`)); err != nil {
		fmt.Println(err)
		return
	}
	if err := d.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := d.Config().Set(ctx, []byte(`{"auto_cron": "*/5 * * * *"}`)); err != nil {
		fmt.Println(err)
		return
	}
	st := d.Status()
	fmt.Println("prune next run:", st.Prune.NextRunAt.Format(time.RFC3339))

	if err := host.Fire(ctx, daemon.JobPrune); err != nil {
		fmt.Println(err)
		return
	}
	r := d.Status().Prune.LastResult.(*daemon.PruneResult)
	fmt.Printf("scheduled prune: %d sessions, %d rewritten\n", r.Sessions, r.Extracted)
	d.Close()
	fmt.Println("jobs left on the host:", len(host.jobs))
	// Output:
	// host: schedule prune on "*/2 * * * *"
	// host: schedule doctor on "17 3 * * *"
	// host: schedule prune on "*/5 * * * *"
	// prune next run: 2026-12-01T03:00:00Z
	// scheduled prune: 2 sessions, 2 rewritten
	// host: unschedule prune
	// host: unschedule doctor
	// jobs left on the host: 0
}
