package daemon

import "time"

// Scheduler runs the daemon's jobs on cron expressions. [Options] takes
// one, so that a program that embeds the daemon (an OpenClaw Go
// component with its own scheduler, say) runs the daemon's jobs on its
// own; nil means a [Cron] that the daemon makes at Start and closes at
// Close. *Cron satisfies Scheduler.
//
// The daemon schedules the jobs named [JobPrune], [JobRetention] and
// [JobDoctor], and calls Schedule, Unschedule and Next one at a time and
// while it holds a lock of its own that a run of a job may need: they must
// return without running a job or waiting for a run to end. The daemon skips a
// run of a job while an earlier run of the same job is going, so a
// scheduler need not prevent overlaps. Close (or the cancellation of the
// context given to Start) unschedules the daemon's jobs from a plugged
// Scheduler and leaves the scheduler itself running: its lifetime is the
// program's.
type Scheduler interface {
	// Schedule runs job on spec under name, replacing an earlier job of
	// that name. spec is a cron expression as the runtime config holds it,
	// already validated by the config (gronx syntax: five to seven fields,
	// or a tag such as "@daily"; ValidSpec checks one). The scheduler
	// calls job with a context that is cancelled when the scheduler stops
	// (the daemon also cancels it when Start's context is cancelled or
	// Close is called); job returns the run's error, which Status shows as
	// well and which the scheduler may log as Cron does. When Schedule
	// fails, the earlier job of that name, if any, must stay scheduled:
	// the daemon logs the error, keeps the old expression and tries again
	// on the next config change.
	Schedule(name, spec string, job Job) error
	// Unschedule removes the job of that name, if there is one; a run in
	// progress may finish.
	Unschedule(name string)
	// Next returns when the job of that name runs next, and whether there
	// is such a job. A zero time with true means the job is scheduled but
	// will not run again; Status then shows it as not scheduled.
	Next(name string) (time.Time, bool)
}

var _ Scheduler = (*Cron)(nil)
