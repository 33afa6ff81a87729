package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/adhocore/gronx"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
)

// Cron runs jobs on cron expressions (gronx syntax: five
// to seven fields, tags such as "@daily"). Each job has its own goroutine
// that sleeps on a timer until the next tick and runs the job in line, so a
// job never overlaps itself; a tick that passes while the job runs is
// skipped and logged. Cron is safe for concurrent use.
//
// It never installs signal handlers, prints or exits: cancel the context
// given to NewCron, or call Close, to stop it.
type Cron struct {
	// Location is the time zone of the expressions; nil is time.Local.
	// Set it before the first Schedule.
	Location *time.Location

	ctx    context.Context
	cancel context.CancelFunc
	log    bs.Logger
	wg     sync.WaitGroup

	mu     sync.Mutex
	jobs   map[string]*cronJob
	closed bool
}

// Job is work a Cron runs.
type Job func(ctx context.Context) error

type cronJob struct {
	spec string
	job  Job
	stop chan struct{}
	next time.Time // guarded by Cron.mu
}

// NewCron returns a Cron whose jobs run with ctx (or a context derived
// from it): cancelling ctx stops every job's loop after the run in
// progress, which sees the cancellation. A nil log discards.
func NewCron(ctx context.Context, log bs.Logger) *Cron {
	ctx, cancel := context.WithCancel(ctx)
	return &Cron{ctx: ctx, cancel: cancel, log: bs.LoggerOrDiscard(log), jobs: map[string]*cronJob{}}
}

// ValidSpec returns nil when spec is a cron expression that fires, else an
// error wrapping brainsurgeon.ErrInvalid that shows it. It checks as the
// config's validation does (each item of a list on its own, so the answer
// does not depend on the time of day).
func ValidSpec(spec string) error {
	c := config.Default()
	c.AutoCron = spec
	var ve *config.ValidationError
	if err := c.Validate(); errors.As(err, &ve) {
		if msg, bad := ve.Field("auto_cron"); bad {
			return fmt.Errorf("cron expression: %s: %w", msg, bs.ErrInvalid)
		}
	}
	if _, err := gronx.NextTickAfter(spec, time.Now(), false); err != nil {
		return fmt.Errorf("cron expression %q never fires (%v): %w", spec, err, bs.ErrInvalid)
	}
	return nil
}

// Schedule runs job on spec under name, replacing an earlier job of that
// name (a run of the earlier job that is in progress finishes). It returns
// an error wrapping brainsurgeon.ErrInvalid for a bad expression, and one
// wrapping brainsurgeon.ErrUnsupported after Close.
func (c *Cron) Schedule(name, spec string, job Job) error {
	if err := ValidSpec(spec); err != nil {
		return fmt.Errorf("schedule %s: %w", name, err)
	}
	if job == nil {
		return fmt.Errorf("schedule %s: nil job: %w", name, bs.ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("schedule %s: the scheduler is closed: %w", name, bs.ErrUnsupported)
	}
	if old, ok := c.jobs[name]; ok {
		close(old.stop)
	}
	j := &cronJob{spec: spec, job: job, stop: make(chan struct{})}
	j.next = c.nextAfter(spec, time.Now())
	c.jobs[name] = j
	c.wg.Add(1)
	go c.loop(name, j)
	return nil
}

// Unschedule removes the job of that name; a run in progress finishes.
func (c *Cron) Unschedule(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if j, ok := c.jobs[name]; ok {
		close(j.stop)
		delete(c.jobs, name)
	}
}

// Next returns when the job of that name runs next, and whether there is
// such a job.
func (c *Cron) Next(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok {
		return time.Time{}, false
	}
	return j.next, true
}

// Spec returns the cron expression of the job of that name, and whether
// there is such a job.
func (c *Cron) Spec(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	j, ok := c.jobs[name]
	if !ok {
		return "", false
	}
	return j.spec, true
}

// Close stops every job and waits for the runs in progress, which see a
// cancelled context, to return. Later Schedules fail.
func (c *Cron) Close() {
	c.mu.Lock()
	c.closed = true
	for name, j := range c.jobs {
		close(j.stop)
		delete(c.jobs, name)
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

func (c *Cron) loc() *time.Location {
	if c.Location == nil {
		return time.Local
	}
	return c.Location
}

// nextAfter returns the first tick of spec after t, or the zero time.
func (c *Cron) nextAfter(spec string, t time.Time) time.Time {
	next, err := gronx.NextTickAfter(spec, t.In(c.loc()), false)
	if err != nil {
		return time.Time{}
	}
	return next
}

func (c *Cron) loop(name string, j *cronJob) {
	defer c.wg.Done()
	c.mu.Lock()
	next := j.next
	c.mu.Unlock()
	for {
		if next.IsZero() {
			c.log.Error("cron job stopped: its expression has no next tick", "job", name, "cron", j.spec)
			return
		}
		t := time.NewTimer(time.Until(next))
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-j.stop:
			t.Stop()
			return
		case <-t.C:
		}
		if err := j.job(c.ctx); err != nil {
			c.log.Error("cron job failed", "job", name, "error", err)
		}
		now := time.Now()
		skipped := 0
		n := c.nextAfter(j.spec, next)
		for !n.IsZero() && !n.After(now) && skipped < 1000 {
			skipped++
			n = c.nextAfter(j.spec, n)
		}
		if skipped > 0 {
			c.log.Info(fmt.Sprintf("%s: %d tick(s) skipped while the previous run was going", name, skipped), "job", name, "skipped", skipped)
		}
		next = n
		c.mu.Lock()
		if c.jobs[name] == j {
			j.next = next
		}
		c.mu.Unlock()
	}
}
