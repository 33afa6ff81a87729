// Package prune is the library-level extraction pass: the one entry point
// that an embedding program, the daemon and the commands call. A pass
// takes a runtime config and a store and side store (package backend opens
// them for an installation),
// applies the restore write-backs that were queued while sessions were
// busy, then runs one extraction pass per session. A session that fails
// never stops the others, except when the side store cannot be reached
// (brainsurgeon.ErrUnavailable): the pass then stops, and the sessions it
// did not attempt are reported as such and tried again on the next pass.
package prune

import (
	"context"
	"errors"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// The statuses of a session in a Report.
const (
	// StatusExtracted: values were moved out and the transcript rewritten.
	StatusExtracted = "extracted"
	// StatusWouldExtract: a dry run found values to move out.
	StatusWouldExtract = "would_extract"
	// StatusWrittenBack: queued restore write-backs were applied, and
	// nothing was extracted.
	StatusWrittenBack = "written_back"
	// StatusUnchanged: nothing to do (nothing qualifies, the entries that
	// would have no ids, or the saving is below min_saving_tokens; Note
	// says which). A dry run reports a session below min_saving_tokens as
	// unchanged too, since the real pass would write nothing.
	StatusUnchanged = "unchanged"
	// StatusBusy: the host is using the session; it is tried again on the
	// next pass.
	StatusBusy = "busy"
	// StatusError: the pass failed for this session.
	StatusError = "error"
	// StatusNotAttempted: the pass stopped before this session because
	// the side store could not be reached (Report.Unavailable says why);
	// nothing was read or written, and the next pass tries it again.
	StatusNotAttempted = "not_attempted"
)

// NotAttemptedReason is the Note and the Reason of a session the pass did
// not attempt because the side store could not be reached.
const NotAttemptedReason = "side store unavailable"

// StoppedError is Run's error when a session's extraction failed because
// the side store could not be reached: the pass stopped at that session.
// It wraps Err, the session's error, which wraps
// brainsurgeon.ErrUnavailable.
type StoppedError struct {
	// Session names the session the side store failed for.
	Session string
	// NotAttempted counts the sessions after it, not attempted.
	NotAttempted int
	// Err is the session's error.
	Err error
}

// Error says where the pass stopped, how many sessions it did not
// attempt, and Err.
func (e *StoppedError) Error() string {
	return fmt.Sprintf("extraction pass stopped at session %s, %s not attempted (tried again on the next pass): %v",
		e.Session, plural.Count(e.NotAttempted, "session", "sessions"), e.Err)
}

// Unwrap returns Err.
func (e *StoppedError) Unwrap() error { return e.Err }

// ErrDisabled means smart pruning is off in the config and the pass was
// not forced.
var ErrDisabled = errors.New("smart pruning is disabled")

// Pass runs extraction passes. Store, Side and Config are required; New
// fills them.
type Pass struct {
	// Store reads and writes the sessions.
	Store bs.Store
	// Side keeps the extracted values.
	Side bs.SideStore
	// StateDir holds the queue of restore write-backs and the audit log.
	StateDir string
	// Config is the runtime config.
	Config config.Config
	// Force runs the pass even when Config.Enabled is false.
	Force bool
	// Now marks the pass as asked for by the user just now
	// (brainsurgeon.ExplicitWrite): the JSONL store skips its quiet period
	// (idle_seconds); OpenClaw's SQLite store does not take this
	// exemption and keeps its quiet period. A session with a run in flight or a live lock holder is
	// still busy.
	Now bool
	// DryRun decides and reports, and writes nothing (queued write-backs
	// included). It applies every gate of the real pass (Enabled unless
	// Force, the idle gate, what the store accepts to edit), so its
	// counts are the ones the same pass without DryRun writes now: a
	// session the real pass would find busy is busy in the dry run too.
	// The one difference: the real pass first applies the queued restore
	// write-backs, which the dry run leaves queued, so the values they
	// put back (protected for keep_after_restore_seconds) are not in its
	// figures either way.
	DryRun bool
	// SkipPending leaves the queued restore write-backs alone: for a
	// caller that applies them itself once (Restorer().ApplyPending) and
	// then runs the pass session by session, as the daemon does.
	SkipPending bool
	// Tokenizer counts the tokens a pass would save; nil is chars/4.
	Tokenizer tokens.Tokenizer
	// Logger receives the pass's records; nil discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// Progress, when not nil, is called before each session and once at
	// the end (Done == Total).
	Progress func(p Progress)
	// Restores is the log of the values the agent restored by any path
	// (the context engine is one, see bs.RestoreLog); nil means none. The
	// extraction protects what it holds for keep_after_restore_seconds
	// (extract.Extractor.Restores), and the Restorer records its restores
	// there.
	Restores bs.RestoreLog
}

// Progress tells how far a pass is.
type Progress struct {
	// Done and Total count sessions; Session is the one starting.
	Done, Total int
	Session     string
	// Bytes is the size of the transcripts done so far.
	Bytes int64
	// Elapsed is the time since the pass started.
	Elapsed time.Duration
}

// SessionReport is the outcome of a pass for one session.
type SessionReport struct {
	Session string `json:"session"`
	Backend string `json:"backend"`
	// Status is one of the Status constants.
	Status string `json:"status"`
	// Note says why a session is unchanged, busy or in error.
	Note string `json:"note,omitempty"`
	// Reason says why nothing was written to the session (busy, nothing
	// qualifies, below min_saving_tokens, a dry run, an error); it is
	// empty when the transcript was rewritten.
	Reason string `json:"reason,omitempty"`
	// IdleAt is when a session that is busy only because it was modified
	// within the quiet period (idle_seconds) will be idle, unless the host
	// writes to it again; nil otherwise.
	IdleAt *time.Time `json:"idle_at,omitempty"`
	// WriteBacks counts the queued restore write-backs applied to the
	// session before the extraction: every one of them, so the sessions'
	// figures add up to Report.WriteBacks.
	WriteBacks int `json:"write_backs"`
	// Result is the extraction's result, when it ran.
	Result *extract.Result `json:"result,omitempty"`
	// ref is the session, for Report.Session.
	ref bs.SessionRef
}

// Report is the outcome of a pass.
type Report struct {
	Sessions []SessionReport `json:"sessions"`
	// WriteBacks counts the queued write-backs applied; WriteBackError
	// says what failed while applying them.
	WriteBacks int `json:"write_backs"`
	// PendingWriteBacks counts, in a dry run, the queued restore
	// write-backs (the real pass applies those of idle sessions first);
	// zero in a real pass.
	PendingWriteBacks int    `json:"pending_write_backs,omitempty"`
	WriteBackError    string `json:"write_back_error,omitempty"`
	// Unlisted says, one message each, which parts of the store could
	// not be listed (the parts the store's Sessions skipped: an agent's
	// SQLite store locked by another connection, corrupt or of another
	// schema version): their sessions are missing from Sessions, and the
	// next pass tries them again. Only a pass over every session lists.
	Unlisted []string `json:"unlisted,omitempty"`
	// Failed counts sessions in error.
	Failed int `json:"failed"`
	// NotAttempted counts the sessions the pass did not attempt
	// (StatusNotAttempted) because the side store could not be reached;
	// Unavailable is then that error's message (the session it failed
	// for is in error), else empty.
	NotAttempted int    `json:"not_attempted"`
	Unavailable  string `json:"unavailable,omitempty"`
	// Written counts the sessions whose transcript was rewritten (by the
	// extraction or by queued write-backs); Busy counts the sessions left
	// alone because the host is using them.
	Written int `json:"written"`
	Busy    int `json:"busy"`
	// Reason says, when no transcript was written, why (a dry run, every
	// session busy, nothing to extract, …); empty when one was.
	Reason string `json:"reason,omitempty"`
	// Elapsed is the pass's duration.
	Elapsed time.Duration `json:"elapsed_ns"`
}

// New returns the pass over store and side with its state in stateDir
// (the queue of restore write-backs, the audit log) and the runtime config
// c; log receives its records (nil discards). Callers that open an
// installation pass the stores it opened.
func New(store bs.Store, side bs.SideStore, stateDir string, c config.Config, log bs.Logger) *Pass {
	return &Pass{Store: store, Side: side, StateDir: stateDir, Config: c, Logger: log}
}

// Restorer returns the Restorer the pass uses for queued write-backs.
func (p *Pass) Restorer() *restore.Restorer {
	r := restore.New(p.Store, p.Side, p.StateDir)
	r.Policy = extract.FromConfig(p.Config)
	r.KeepPurgeControlCalls = p.Config.KeepPurgeControlCalls
	r.Logger, r.Clock = p.Logger, p.Clock
	r.Restores = p.Restores
	return r
}

// Run makes one pass over refs, or over every session when refs is nil.
// It returns ErrDisabled (and does nothing) when pruning is disabled and
// the pass is not forced, a dry run included (it reports what the real
// pass would do, and that pass would do nothing). Errors of single
// sessions are in the report, not returned, but for one: a session whose
// extraction fails because the side store cannot be reached (an error
// wrapping brainsurgeon.ErrUnavailable) stops the pass, rather than have
// every other session fail on a store that is down. That session is in
// error, the sessions after it are StatusNotAttempted, the sessions
// already written stay written, and Run returns the report with an error
// wrapping brainsurgeon.ErrUnavailable (a *StoppedError). A cancelled ctx also stops the
// pass between sessions: Run returns the report so far and ctx's error.
func (p *Pass) Run(ctx context.Context, refs []bs.SessionRef) (*Report, error) {
	start := time.Now()
	if p == nil || p.Store == nil || p.Side == nil {
		return nil, fmt.Errorf("prune: the Pass needs a Store and a Side store (backend.Open gives both): %w", bs.ErrInvalid)
	}
	if !p.Config.Enabled && !p.Force {
		return nil, ErrDisabled
	}
	if p.Now {
		ctx = bs.ExplicitWrite(ctx)
	}
	log := bs.LoggerOrDiscard(p.Logger)
	rep := &Report{Sessions: []SessionReport{}}
	applied := map[string]int{}
	if p.DryRun && !p.SkipPending && p.StateDir != "" {
		if reqs, err := p.Restorer().Pending(); err == nil {
			rep.PendingWriteBacks = len(reqs)
		}
	}
	if !p.DryRun && !p.SkipPending {
		n, done, err := p.applyPending(ctx)
		rep.WriteBacks = n
		if err != nil {
			rep.WriteBackError = err.Error()
			log.Warn("pending restore write-backs", "error", err)
		}
		for _, r := range done { // one ref per write-back applied
			applied[r.Identity()]++
		}
	}
	if refs == nil {
		var skipped []error
		var err error
		refs, skipped, err = p.Store.Sessions(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range skipped {
			rep.Unlisted = append(rep.Unlisted, e.Error())
			log.Warn("sessions not listed", "error", e)
		}
	}
	policy := extract.FromConfig(p.Config)
	policy.Enabled = true
	x := &extract.Extractor{Policy: policy, Store: p.Store, Side: p.Side, Tokenizer: p.Tokenizer,
		Logger: p.Logger, Clock: p.Clock, DryRun: p.DryRun, Restores: p.Restores}
	var bytes int64
	var down error    // the error of the side store that stopped the pass
	var downAt string // the session it failed for
	for i, ref := range refs {
		if down != nil {
			rep.Sessions = append(rep.Sessions, SessionReport{Session: ref.String(), Backend: ref.Backend, Status: StatusNotAttempted,
				Note: NotAttemptedReason, Reason: NotAttemptedReason, WriteBacks: applied[ref.Identity()], ref: ref})
			rep.NotAttempted++
			continue
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if p.Progress != nil {
			p.Progress(Progress{Done: i, Total: len(refs), Session: ref.String(), Bytes: bytes, Elapsed: time.Since(start)})
		}
		sr := SessionReport{Session: ref.String(), Backend: ref.Backend, WriteBacks: applied[ref.Identity()], ref: ref}
		res, err := x.Run(ctx, ref)
		sr.Result = res
		if res != nil {
			bytes += res.BytesBefore
		}
		switch {
		case err == nil && res.Written:
			sr.Status = StatusExtracted
		case err == nil && p.DryRun && res.SkipCode == extract.SkipDryRun:
			sr.Status = StatusWouldExtract
			sr.Reason = "dry run: nothing is written"
		case err == nil && sr.WriteBacks > 0:
			sr.Status, sr.Note = StatusWrittenBack, res.Skipped
		case err == nil:
			sr.Status, sr.Note = StatusUnchanged, res.Skipped
		case errors.Is(err, bs.ErrBusy), errors.Is(err, bs.ErrChanged):
			sr.Status, sr.Note = StatusBusy, err.Error()
			if at, ok := bs.IdleAt(err); ok {
				at = at.UTC().Round(time.Second)
				sr.IdleAt = &at
			}
			rep.Busy++
		default:
			sr.Status, sr.Note = StatusError, err.Error()
			rep.Failed++
			log.Error("extraction pass failed", "session", ref.String(), "error", err)
			if errors.Is(err, bs.ErrUnavailable) {
				down, downAt = err, ref.String()
				rep.Unavailable = bs.ErrorMessage(err)
			}
		}
		if sr.Status != StatusExtracted && sr.Reason == "" {
			sr.Reason = sr.Note
			if sr.Status == StatusWrittenBack {
				sr.Reason = ""
			}
		}
		if sr.Status == StatusExtracted || sr.Status == StatusWrittenBack {
			rep.Written++
		}
		rep.Sessions = append(rep.Sessions, sr)
	}
	if p.Progress != nil {
		p.Progress(Progress{Done: len(refs), Total: len(refs), Bytes: bytes, Elapsed: time.Since(start)})
	}
	rep.Reason = rep.reason(p.DryRun)
	rep.Elapsed = time.Since(start)
	if down != nil {
		return rep, &StoppedError{Session: downAt, NotAttempted: rep.NotAttempted, Err: down}
	}
	return rep, nil
}

// reason says why a pass wrote no transcript, or "" when it wrote one.
func (r *Report) reason(dry bool) string {
	if r.Written > 0 {
		return ""
	}
	n, would := len(r.Sessions), 0
	for _, s := range r.Sessions {
		if s.Status == StatusWouldExtract {
			would++
		}
	}
	var why string
	switch {
	case r.Unavailable != "":
		why = fmt.Sprintf("the side store cannot be reached (see unavailable): the pass stopped, %d failed, %d not attempted", r.Failed, r.NotAttempted)
	case n == 0:
		why = "there are no sessions"
	case r.Busy == n:
		why = fmt.Sprintf("every session (%d) is busy; busy sessions are tried again on the next pass", n)
	case r.Failed == n:
		why = fmt.Sprintf("every session (%d) failed", n)
	case r.Busy+r.Failed > 0:
		why = fmt.Sprintf("%s busy, %d failed, %d with nothing to extract", plural.Count(r.Busy, "session", "sessions"), r.Failed, n-r.Busy-r.Failed-would)
	default:
		why = "no session has anything to extract"
	}
	if dry {
		if would > 0 {
			return fmt.Sprintf("dry run: nothing was written; the same pass without the dry run would write %d of %s", would, plural.Count(n, "session", "sessions"))
		}
		return "dry run: nothing was written, and the same pass without the dry run would write nothing either: " + why
	}
	return "nothing was written: " + why
}

// Session returns the report of the session ref (matched by its
// identity, agent and session id), or nil when the pass did not run on
// it.
func (r *Report) Session(ref bs.SessionRef) *SessionReport {
	if r == nil {
		return nil
	}
	for i := range r.Sessions {
		if r.Sessions[i].ref.Same(ref) {
			return &r.Sessions[i]
		}
	}
	return nil
}

// applyPending applies the queued restore write-backs of idle sessions.
func (p *Pass) applyPending(ctx context.Context) (int, []bs.SessionRef, error) {
	return p.Restorer().ApplyPending(ctx)
}
