package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The names of the daemon's jobs, as the scheduler and Status know them
// (JobDoctor is in doctor.go).
const (
	// JobPrune is the extraction job, on auto_cron.
	JobPrune = "prune"
	// JobRetention is the retention job, on retention_cron.
	JobRetention = "retention"
)

// RetentionFunc runs one retention pass over set with
// the runtime config c and returns its stats (package retention's
// {cleaned, bytes, errors}), which Status shows as they are (they should
// marshal to JSON). It must stop early, between deletions, when ctx is
// cancelled.
type RetentionFunc func(ctx context.Context, set bs.Installation, c config.Config) (any, error)

// OpenFunc opens the agents dir's stores with the runtime config c (its
// quiet period, idle_seconds, and its side store, side_store) and the
// logger log, and returns the installation (backend.Open's Set holds
// one). The daemon calls it on every run, with the current config, so
// that a changed config and
// sessions the host made meanwhile are seen; cmd/brainsurgeon fills it with
// backend.Open (internal/wiring.Opener). It fails with an error wrapping
// brainsurgeon.ErrNotFound when the agents dir does not exist.
type OpenFunc func(ctx context.Context, c config.Config, log bs.Logger) (bs.Installation, error)

// Options tune Open.
type Options struct {
	// AgentsDir is the agents dir (or a ~/.openclaw dir); required.
	AgentsDir string
	// Open opens the stores of AgentsDir; required.
	Open OpenFunc
	// ReadOnly writes nothing anywhere: no config file, no schedules, no
	// manual runs, nothing at all.
	ReadOnly bool
	// Logger receives the daemon's records; nil discards. A *slog.Logger
	// made by internal/logging gives the levels trace to error and the
	// rotated log file under the OpenClaw root.
	Logger bs.Logger
	// Retention is the retention pass; nil means the daemon schedules no
	// retention and RunRetentionNow fails with ErrUnsupported.
	Retention RetentionFunc
	// Location is the time zone of the cron expressions of the default
	// scheduler (a Cron); nil is time.Local. A plugged Scheduler keeps its
	// own time zone.
	Location *time.Location
	// Scheduler runs the daemon's jobs; nil means a Cron that the daemon
	// makes at Start (with Location) and closes at Close. A program with a
	// scheduler of its own plugs it in here (see Scheduler for what the
	// daemon expects of it).
	Scheduler Scheduler
	// LimitMemory lets each prune run that processes sessions set the Go
	// runtime's soft memory limit for the largest transcript of the run
	// (half its size, at least 48 MB; not when GOMEMLIMIT is set), as
	// `brainsurgeon prune` does, and hand the memory the run freed back to
	// the operating system when it ends. A pass over a 100 MB transcript
	// then peaks near 64 MB instead of about 100 MB, and the daemon does
	// not keep that memory while it waits for the next run. These are
	// process-wide settings: `brainsurgeon serve` sets LimitMemory; a
	// program that embeds the daemon decides.
	LimitMemory bool
}

// Daemon runs scheduled extraction and retention over an agents dir and
// holds the runtime config. Open it, Start it with a context whose
// cancellation stops the schedules, and Close it to wait for a run in
// progress. All methods are safe for concurrent use.
type Daemon struct {
	opts    Options
	log     bs.Logger
	cfg     *ConfigService
	changes *changes
	// compactMarks is the change tracking of automatic compaction.
	compactMarks compactMarks

	prune, retention jobState
	// doctorJob is the doctor report; doctorCache its diagnoses of
	// unchanged sessions.
	doctorJob   jobState
	doctorCache doctorCache

	mu sync.Mutex
	// sched runs the jobs: Options.Scheduler or cron (nil until Start).
	sched Scheduler
	// cron is the default scheduler the daemon made at Start and closes at
	// Close; nil when Options.Scheduler is given.
	cron *Cron
	// specs holds the expression each job is scheduled on.
	specs map[string]string
	// runCtx is Start's context, cancelled by Close; scheduled runs see
	// its cancellation.
	runCtx   context.Context
	stopRuns context.CancelFunc
	// released is set once the daemon took its jobs off a plugged
	// Scheduler (Close, or Start's context cancelled): it schedules
	// nothing more.
	released bool
	wg       sync.WaitGroup

	// restorer is the API's Restorer for the current config (nil: made
	// again on the next request), see Restorer.
	restorerMu sync.Mutex
	restorer   *restore.Restorer

	// engine is the API's context engine for the current config (nil:
	// made again on the next request), see Engine; engineClosed
	// is set by Close.
	engineMu     sync.Mutex
	engine       *engine.Engine
	engineClosed bool
	// meter counts the context engine's assemble calls answered by the
	// daemon's API (EngineMeter), for Status.
	meter engine.Meter
}

// Open loads the runtime config (see OpenConfig: unless read-only, it is
// created or upgraded on disk) and returns a Daemon that does nothing
// until Start.
func Open(ctx context.Context, opts Options) (*Daemon, error) {
	if opts.AgentsDir == "" {
		return nil, fmt.Errorf("daemon: no agents dir given: %w", bs.ErrInvalid)
	}
	if opts.Open == nil {
		return nil, fmt.Errorf("daemon: no Open func given (cmd/brainsurgeon passes one over backend.Open): %w", bs.ErrInvalid)
	}
	log := bs.LoggerOrDiscard(opts.Logger)
	// The stores are opened before the config is created or upgraded,
	// so that a wrong agents dir or side store is reported first and
	// nothing is written beside it.
	first, err := config.Load(ctx, opts.AgentsDir, nil)
	if err != nil {
		return nil, err
	}
	inst, err := opts.Open(ctx, first, nil)
	if err != nil {
		return nil, err
	}
	// A side store elsewhere than on this disk is probed once at start: a
	// missing bucket, refused credentials or an unreachable server stop
	// the daemon here, before any pass could touch a transcript.
	if c, ok := inst.Side.(sideChecker); ok {
		if err := c.Check(ctx); err != nil {
			return nil, fmt.Errorf("daemon: %w", err)
		}
	}
	cfg, err := OpenConfig(ctx, opts.AgentsDir, opts.ReadOnly, log)
	if err != nil {
		return nil, err
	}
	d := &Daemon{opts: opts, log: log, cfg: cfg, changes: newChanges()}
	d.prune.name, d.retention.name, d.doctorJob.name = JobPrune, JobRetention, JobDoctor
	cfg.Subscribe(d.onConfig)
	return d, nil
}

// sideChecker is a side store that can be probed before use (an object
// store: package sides3).
type sideChecker interface {
	Check(ctx context.Context) error
}

// open opens the stores with the quiet period of the runtime config c
// and the side store the config file names.
func (d *Daemon) open(ctx context.Context, c config.Config) (bs.Installation, error) {
	// side_store as the file says now: `side migrate` changes it there,
	// and the next run follows.
	if disk, err := config.Load(ctx, d.opts.AgentsDir, nil); err == nil {
		c.SideStore = disk.SideStore
	}
	return d.opts.Open(ctx, c, d.log)
}

// Config returns the config service: Get and Set for the API.
func (d *Daemon) Config() *ConfigService { return d.cfg }

// AgentsDir returns the agents dir the daemon works on.
func (d *Daemon) AgentsDir() string { return d.opts.AgentsDir }

// Start schedules extraction on auto_cron, retention on retention_cron and
// the doctor report on doctor_schedule (unless it is "") and runs
// retention once now, in the background, as at every start-up.
// Cancelling ctx stops the schedules; a run in progress stops between
// sessions, and a write in progress finishes. In read-only mode nothing is
// scheduled. Start may be called once.
func (d *Daemon) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sched != nil {
		return fmt.Errorf("daemon: already started: %w", bs.ErrInvalid)
	}
	d.runCtx, d.stopRuns = context.WithCancel(ctx)
	d.specs = map[string]string{}
	if d.opts.Scheduler != nil {
		d.sched = d.opts.Scheduler
		context.AfterFunc(d.runCtx, d.release)
	} else {
		d.cron = NewCron(d.runCtx, d.log)
		d.cron.Location = d.opts.Location
		d.sched = d.cron
	}
	if d.opts.ReadOnly {
		d.log.Info("Read-only mode: no scheduled runs, nothing is written")
		return nil
	}
	d.reconcileLocked()
	if _, ok := d.specs[JobPrune]; !ok {
		return fmt.Errorf("daemon: the prune job could not be scheduled on %q (see the log): %w", d.cfg.Get().AutoCron, bs.ErrInvalid)
	}
	if d.opts.Retention != nil {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			_ = d.tick(d.runCtx, JobRetention)
		}()
	}
	return nil
}

// release takes the daemon's jobs off a plugged Scheduler, once; the
// default Cron is closed by Close instead.
func (d *Daemon) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.releaseLocked()
}

func (d *Daemon) releaseLocked() {
	if d.cron != nil || d.released {
		return
	}
	d.released = true
	for _, name := range []string{JobPrune, JobRetention, JobDoctor} {
		if _, on := d.specs[name]; on {
			d.sched.Unschedule(name)
			delete(d.specs, name)
		}
	}
}

// Close stops the schedules and waits for the runs in progress, scheduled
// or manual (a scheduled run sees a cancelled context and stops between
// sessions; a write in progress finishes; a manual run stops when its own
// context is cancelled). A Daemon that was never started closes at once.
func (d *Daemon) Close() {
	d.mu.Lock()
	c, stop := d.cron, d.stopRuns
	if d.sched != nil {
		d.releaseLocked()
		// A closed Cron has no jobs: a later reconcile schedules again,
		// and the Cron refuses.
		clear(d.specs)
	}
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
	if c != nil {
		c.Close()
	}
	d.closeEngine()
	d.wg.Wait()
	d.prune.wait()
	d.retention.wait()
	d.doctorJob.wait()
}

func (d *Daemon) scheduleLocked(name, spec string) error {
	err := d.sched.Schedule(name, spec, d.job(name))
	if err != nil {
		return err
	}
	d.specs[name] = spec
	next, _ := d.sched.Next(name)
	d.log.Info(fmt.Sprintf("Scheduled %s on %q, next run %s", name, spec, next.Format(time.RFC3339)), "job", name, "cron", spec)
	return nil
}

// job returns the Job the scheduler runs for the named job: a tick whose
// context is also cancelled when Start's context is cancelled or Close is
// called, which Close waits for, and which does nothing once the daemon
// took its jobs off a plugged scheduler.
func (d *Daemon) job(name string) Job {
	return func(ctx context.Context) error {
		d.mu.Lock()
		if d.released {
			d.mu.Unlock()
			return nil
		}
		d.wg.Add(1)
		runCtx := d.runCtx
		d.mu.Unlock()
		defer d.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(runCtx, cancel)()
		return d.tick(ctx, name)
	}
}

// onConfig reschedules at once when a cron expression changed, makes
// every session worth reading again when what is extracted changed, and
// drops the API's Restorer and context engine, made for the old config.
func (d *Daemon) onConfig(old, n config.Config) {
	fields := changedFields(old, n)
	if !onlyRunTimes(fields) {
		d.restorerMu.Lock()
		d.restorer = nil
		d.restorerMu.Unlock()
		d.dropEngine()
	}
	for _, f := range fields {
		if extractionFields[f] {
			d.changes.reset()
			break
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reconcileLocked()
}

// reconcileLocked puts each job on the expression of the current config,
// when it is not already (lock order: d.mu, then the config's).
func (d *Daemon) reconcileLocked() {
	if d.sched == nil || d.opts.ReadOnly || d.released {
		return
	}
	c := d.cfg.Get()
	want := map[string]string{JobPrune: c.AutoCron}
	if d.opts.Retention != nil {
		want[JobRetention] = c.RetentionCron
	}
	if c.DoctorSchedule != "" {
		want[JobDoctor] = c.DoctorSchedule
	}
	for _, name := range []string{JobPrune, JobRetention, JobDoctor} {
		spec, ok := want[name]
		if !ok {
			if _, on := d.specs[name]; on {
				d.sched.Unschedule(name)
				delete(d.specs, name)
				d.log.Info(fmt.Sprintf("Unscheduled %s", name), "job", name)
			}
			continue
		}
		if cur, ok := d.specs[name]; ok && cur == spec {
			continue
		}
		if err := d.scheduleLocked(name, spec); err != nil {
			d.log.Error("scheduling failed, the old schedule stays", "job", name, "cron", spec, "error", err)
		}
	}
}

// tick is a scheduled run: skipped (and logged) while a run of the same
// job is going.
func (d *Daemon) tick(ctx context.Context, name string) error {
	ctx = logging.WithActor(ctx, "scheduler")
	var err error
	switch name {
	case JobPrune:
		_, err = d.run(ctx, &d.prune, func(ctx context.Context) (any, error) {
			r, err := d.runPrune(ctx, false)
			// A run the side store stopped compacts nothing: compaction
			// writes to the same store.
			if r != nil && !r.Stopped && r.Unavailable == "" {
				r.Compaction = d.autoCompact(ctx)
			}
			return r, err
		})
	case JobRetention:
		_, err = d.run(ctx, &d.retention, func(ctx context.Context) (any, error) { return d.runRetention(ctx, false) })
	case JobDoctor:
		_, err = d.run(ctx, &d.doctorJob, func(ctx context.Context) (any, error) { return d.runDoctor(ctx) })
	}
	if errors.Is(err, errRunning) {
		d.log.Info(fmt.Sprintf("%s: tick skipped, the previous run is still going", name), "job", name)
		return nil
	}
	return err
}

var errRunning = fmt.Errorf("a run is already in progress: %w", bs.ErrBusy)

// run runs fn as the job's one run at a time and records its outcome.
func (d *Daemon) run(ctx context.Context, j *jobState, fn func(context.Context) (any, error)) (any, error) {
	if !j.begin() {
		return nil, fmt.Errorf("%s: %w", j.name, errRunning)
	}
	res, err := fn(ctx)
	j.end(res, err)
	return res, err
}

// RunPruneNow runs an extraction pass now over every session (unchanged
// ones included, and even when pruning is disabled: the caller asked),
// and returns its result. It fails with ErrReadOnly in read-only mode
// and with an error wrapping brainsurgeon.ErrBusy while a run is going.
// Cancelling ctx stops the run between sessions.
func (d *Daemon) RunPruneNow(ctx context.Context) (*PruneResult, error) {
	if d.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	res, err := d.run(ctx, &d.prune, func(ctx context.Context) (any, error) { return d.runPrune(ctx, true) })
	r, _ := res.(*PruneResult)
	return r, err
}

// RunRetentionNow runs a retention pass now, even when pruning is
// disabled, and returns its stats. It fails with ErrReadOnly in read-only
// mode, with an error wrapping brainsurgeon.ErrUnsupported when the daemon
// has no RetentionFunc, and with one wrapping brainsurgeon.ErrBusy while a
// run is going.
func (d *Daemon) RunRetentionNow(ctx context.Context) (any, error) {
	if d.opts.ReadOnly {
		return nil, ErrReadOnly
	}
	if d.opts.Retention == nil {
		return nil, fmt.Errorf("retention: this daemon has no retention pass: %w", bs.ErrUnsupported)
	}
	return d.run(ctx, &d.retention, func(ctx context.Context) (any, error) { return d.runRetention(ctx, true) })
}

// runRetention runs the retention pass and saves last_retention_run_at.
func (d *Daemon) runRetention(ctx context.Context, manual bool) (any, error) {
	d.trace(ctx, "runRetention: start", "manual", manual)
	cfg := d.cfg.Get()
	if !cfg.Enabled && !manual {
		d.log.Debug("retention: smart pruning is disabled, nothing to do")
		return RetentionSkipped{Disabled: true}, nil
	}
	start := time.Now()
	set, err := d.open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := d.opts.Retention(ctx, set, cfg)
	if err != nil {
		return res, fmt.Errorf("retention: %w", err)
	}
	if ctx.Err() == nil {
		d.saveRunTime(ctx, func(c *config.Config) { t := start.UTC(); c.LastRetentionRunAt = &t })
	}
	return res, nil
}

// RetentionSkipped is the result of a scheduled retention run that did
// nothing because smart pruning is disabled.
type RetentionSkipped struct {
	Disabled bool `json:"disabled"`
}

// saveRunTime records a run's time in the config file, changing only
// that field of the current config (a change made meanwhile is kept).
func (d *Daemon) saveRunTime(ctx context.Context, set func(*config.Config)) {
	if _, err := d.cfg.update(ctx, func(c *config.Config) error { set(c); return nil }); err != nil {
		d.log.Error("saving the run time in the config failed", "error", err)
	}
}

// jobState is one job's run state, for Status.
type jobState struct {
	name string

	mu       sync.Mutex
	idle     *sync.Cond // signalled when a run ends
	running  bool
	started  time.Time
	finished time.Time
	last     any
	lastErr  string
}

func (j *jobState) begin() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.idle == nil {
		j.idle = sync.NewCond(&j.mu)
	}
	if j.running {
		return false
	}
	j.running, j.started = true, time.Now()
	return true
}

func (j *jobState) end(res any, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.running, j.finished, j.last, j.lastErr = false, time.Now(), res, ""
	if err != nil {
		j.lastErr = err.Error()
	}
	j.idle.Broadcast()
}

// wait returns when no run of the job is going.
func (j *jobState) wait() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.running {
		j.idle.Wait()
	}
}

// JobStatus is the state of one job, as GET /api/scheduler shows it.
type JobStatus struct {
	// Name is JobPrune, JobRetention or JobDoctor.
	Name string `json:"name"`
	// Cron is the job's expression in the config.
	Cron string `json:"cron"`
	// Scheduled is true when the job is on the schedule (false before
	// Start, in read-only mode, and for retention without a pass).
	Scheduled bool `json:"scheduled"`
	// NextRunAt is the next scheduled run, or null.
	NextRunAt *time.Time `json:"next_run_at"`
	// LastRunAt is when the last complete run started (the config's
	// last_run_at or last_retention_run_at), or null.
	LastRunAt *time.Time `json:"last_run_at"`
	// Running is true while a run is going; RunningSince says since when.
	Running      bool       `json:"running"`
	RunningSince *time.Time `json:"running_since,omitempty"`
	// LastFinishedAt is when this process's last run ended, or null.
	LastFinishedAt *time.Time `json:"last_finished_at"`
	// LastResult is that run's result (a *PruneResult for JobPrune, the
	// retention stats for JobRetention), or null; LastError its error.
	LastResult any    `json:"last_result"`
	LastError  string `json:"last_error,omitempty"`
}

// Status is a snapshot of the daemon's state.
type Status struct {
	// Enabled is the config's enabled switch; ReadOnly the read-only mode.
	Enabled  bool `json:"enabled"`
	ReadOnly bool `json:"read_only"`
	// Prune and Retention are the pruning jobs; Doctor the doctor report
	// (its LastResult a *DoctorResult; not scheduled when
	// doctor_schedule is "").
	Prune     JobStatus `json:"prune"`
	Retention JobStatus `json:"retention"`
	Doctor    JobStatus `json:"doctor"`
	// Engine counts the context engine's assemble calls the daemon's API
	// answered since the daemon started (views, pass-throughs, failures)
	// and their latency, as GET /api/health shows them.
	Engine engine.Stats `json:"engine"`
}

// Status returns a snapshot of the jobs. It does no I/O.
func (d *Daemon) Status() Status {
	c := d.cfg.Get()
	next := d.nextRuns()
	s := Status{Enabled: c.Enabled, ReadOnly: d.opts.ReadOnly,
		Prune:     d.prune.status(next, c.AutoCron, c.LastRunAt),
		Retention: d.retention.status(next, c.RetentionCron, c.LastRetentionRunAt),
		Doctor:    d.doctorJob.status(next, c.DoctorSchedule, nil),
		Engine:    d.meter.Stats()}
	return s
}

// nextRuns returns the next run of each job the daemon scheduled, as the
// scheduler tells it; a job that will not run again is left out.
func (d *Daemon) nextRuns() map[string]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := map[string]time.Time{}
	for name := range d.specs {
		if t, ok := d.sched.Next(name); ok && !t.IsZero() {
			next[name] = t
		}
	}
	return next
}

// status returns the job's state, scheduled when next holds its next run.
func (j *jobState) status(next map[string]time.Time, spec string, last *time.Time) JobStatus {
	s := JobStatus{Name: j.name, Cron: spec, LastRunAt: last}
	if t, ok := next[j.name]; ok {
		s.Scheduled, s.NextRunAt = true, &t
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	s.Running, s.LastResult, s.LastError = j.running, j.last, j.lastErr
	if j.running {
		t := j.started
		s.RunningSince = &t
	}
	if !j.finished.IsZero() {
		t := j.finished
		s.LastFinishedAt = &t
	}
	return s
}

// trace logs at logging.LevelTrace when the logger is a *slog.Logger.
func (d *Daemon) trace(ctx context.Context, msg string, args ...any) {
	if l, ok := d.log.(*slog.Logger); ok {
		l.Log(ctx, logging.LevelTrace, msg, args...)
	}
}
