// Package daemon is the core of `brainsurgeon serve`: scheduled extraction
// and retention over an agents dir, and the runtime config service. It never
// prints, exits or handles signals: the command does, and cancels the
// context given to Start.
//
// # Use
//
//	open := func(ctx context.Context, c config.Config, log bs.Logger) (bs.Installation, error) {
//		set, err := backend.Open(ctx, dir, backend.FromConfig(c, log))
//		if err != nil {
//			return bs.Installation{}, err
//		}
//		return set.Installation, nil // as internal/wiring.Opener does
//	}
//	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: dir, Open: open, Logger: log, Retention: retentionPass})
//	if err := d.Start(ctx); err != nil { … }
//	defer d.Close() // waits for a run in progress
//
// # What the API needs
//
// The daemon imports no API: package api takes a *Daemon
// (api.Options.Daemon) and reaches it through these methods.
//
//   - [Daemon.Config] returns the [ConfigService]: Get returns the runtime
//     config; Set applies a partial JSON object (the body of POST
//     /api/config), validates every field and saves atomically. Its error
//     is a *config.ValidationError naming each bad field (wrapping
//     brainsurgeon.ErrInvalid: answer 400), or [ErrReadOnly] (403). On error
//     nothing is saved and the schedules keep their old expressions.
//   - [Daemon.Status] is the scheduler snapshot: for both jobs next_run_at,
//     last_run_at, running and the last result ([Status], [JobStatus]);
//     "engine" counts the context engine's assemble calls its API answered
//     and their latency (engine.Stats).
//   - [Daemon.RunPruneNow] and [Daemon.RunRetentionNow] run a job now and
//     return its result. They fail with ErrReadOnly in read-only mode, and
//     with an error wrapping brainsurgeon.ErrBusy (409) while the same job
//     is running.
//   - [Daemon.Restorer] and [Daemon.Engine] are the Restorer and the
//     context engine that follow the runtime config (the API's restores,
//     set_extractable, get_context and the plugin's engine requests use
//     them); [Daemon.EngineMeter] counts the engine's assemble calls the
//     API answers, which Status reports; [Daemon.Logger] and
//     [Daemon.ReadOnly] are the daemon's logger and mode, which the API
//     adopts.
//
// # Scheduling
//
// [Cron] runs jobs on cron expressions with adhocore/gronx: one
// goroutine and one timer per job; a job never overlaps itself, and a tick
// that passes while a run is going is skipped and logged. The daemon
// schedules [JobPrune] on auto_cron, [JobRetention] on retention_cron and
// [JobDoctor] on doctor_schedule (not at all when it is ""), runs
// retention once at Start as well, and reschedules at once when a Set
// changes an expression.
//
// A program with a scheduler of its own passes it in Options.Scheduler
// (the [Scheduler] interface: Schedule, Unschedule and Next); the daemon
// then makes no Cron, schedules the same jobs there, and takes them off it
// at Close or when Start's context is cancelled (the Scheduler example
// shows one).
//
// The doctor report diagnoses every session with package doctor (a
// session unchanged since the last run keeps its diagnosis), scans the
// host's leftovers when the store can, and logs one "doctor report" line
// (sessions, broken, warn, failed, leftover_files, leftover_bytes,
// unique_files) and one "doctor: session broken" warning per broken
// session (session, missing_tool_results, orphan_tool_results,
// displaced_tool_results). It runs
// whether pruning is enabled or not, and writes nothing: it neither fixes
// a session nor collects a leftover ([Daemon.RunDoctorNow] runs it at
// once). A manual run and a scheduled one never overlap
// either.
//
// With "enabled": false the scheduled runs do no pruning and no retention;
// the prune tick still applies queued restore write-backs (the restore was
// asked for, and is finished once the session is idle). In read-only mode
// nothing is scheduled and nothing is written.
//
// # One run
//
// A run first applies the queued restore write-backs of idle sessions,
// then lists the sessions and asks the store for each one's state with
// a stat (the store's Stat: a file's stat, the SQLite store's fences).
// A session whose state did not change since the daemon last processed it
// is skipped (debug: "Session main/abc123 unchanged since …, skipping");
// after a restart, a session last changed before the previous run's
// last_run_at by more than every time-based protection (idle_seconds,
// age_threshold_hours, keep_after_restore_seconds) counts as unchanged too.
// A session whose values were kept by a time-based protection is read
// again once it may have expired (after the protection's length, at most
// an hour). A config change that alters what is
// extracted makes every session worth reading again.
//
// The others go through prune.Pass one at a time (info when values were
// extracted: "Processing session main/abc123, 15 entries to check: …").
// A session that fails or is busy is reported and tried again next time;
// it never stops the others, except when the side store cannot be reached
// (brainsurgeon.ErrUnavailable): the run then stops at that session, counts
// the sessions it would have read next as not attempted (not_attempted,
// the error in unavailable), saves no last_run_at, runs no compaction, and
// fails with the error (logged by the scheduler, last_error in the
// status); the next run reads those sessions. last_run_at (the start of
// the last complete run) is saved after the run, changing only that field
// of the current config.
//
// # Automatic compaction
//
// With compaction.auto_enabled (false by default) a scheduled prune tick
// is followed by automatic compaction, on its own change tracking: every
// session that changed since it was last checked and has been left alone
// for compaction.auto_quiet_seconds (300, the prompt cache's lifetime) gets
// compact.Status, and when a threshold is crossed compact.Compact with
// trigger "auto" runs (info: "[COMPACT] main/abc123 layer summarize
// 187,450 → 48,320 tokens", and a "compact" line in the audit log). A
// session still in its quiet period, in use or changed meanwhile is logged
// at debug and checked again on a later tick; one whose store cannot append
// a compaction (OpenClaw's SQLite store) once it changes. The thresholds and
// the tokenizer come from the config's compaction object; the summarizer is
// the configured (or environment's) model escalating to the deterministic
// summarizer, or the deterministic one alone when no model is named. The
// result is [PruneResult.Compaction] ([CompactResult]).
//
// Shutdown: cancelling Start's context stops a run between sessions; the
// session being written is finished under a context that is not
// cancelled, and Close waits for it.
package daemon
