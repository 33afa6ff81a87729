package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// StateLockFile is the name of OpenClaw's process-level state lock, in
// <state>/tmp/openclaw-<uid>/.
const StateLockFile = "gateway.state.lock"

// CheckIdle returns nil when the session may be written now, else an error
// wrapping ErrBusy that says why. It applies these idle rules, in this
// order:
//
//   - a live process other than a gateway holds OpenClaw's state lock
//     (<state>/tmp/openclaw-<uid>/gateway.state.lock with a "role" other
//     than "gateway": an `agent --local` run, Doctor maintenance, a skill
//     workshop): nothing in the state dir is written while it runs. The
//     lock is only read, never taken or deleted;
//   - session_nodes.status or session_windows.status is "running", or the
//     node's entry_json carries a lifecycleRunId (a run in flight);
//   - the session or its key has queued session_pending_inputs;
//   - the session has a cold archive row (OpenClaw moved it out);
//   - the session's last run ended "timeout" or "killed" (session_windows,
//     session_nodes or the node's entry_json status), or ended with no
//     status but an endedAt: OpenClaw 2026.8+ starts a new session on the
//     next turn when the transcript changed after such a run
//     (transcript_updated_at newer than what its registry observed), and
//     every write of ours advances transcript_updated_at, so the session
//     is written again only after its next run;
//   - the session changed less than Options.Quiet ago: the newest of
//     session_windows.transcript_updated_at, session_windows.updated_at
//     and session_nodes.updated_at.
//
// It reads the store without creating or changing any file. Errors other
// than ErrBusy wrap ErrNotFound (no such session), ErrUnsupported (schema
// version) or ErrInvalid (bad ref, corrupt store).
func (s *Store) CheckIdle(ctx context.Context, ref bs.SessionRef) error {
	path, err := s.storeOf(ref)
	if err != nil {
		return err
	}
	if err := s.checkStateLock(ref); err != nil {
		return err
	}
	return s.readTx(ctx, path, func(tx *sql.Tx) error {
		return s.checkIdleIn(ctx, tx, path, ref, "")
	})
}

const idleQuery = `
SELECT coalesce(w.status, ''), coalesce(n.status, ''),
       json_extract(n.entry_json, '$.lifecycleRunId'),
       coalesce(json_extract(n.entry_json, '$.status'), ''), coalesce(json_extract(n.entry_json, '$.endedAt'), 0),
       w.transcript_updated_at, w.updated_at, n.updated_at, w.session_key,
       (SELECT count(*) FROM session_pending_inputs p
         WHERE (p.session_id = w.session_id OR p.session_key = w.session_key) AND p.state = 'queued'),
       (SELECT count(*) FROM session_transcript_cold_archives c WHERE c.session_id = w.session_id)
  FROM session_windows w LEFT JOIN session_nodes n ON n.session_key = w.session_key
 WHERE w.session_id = ?`

// checkIdleIn applies the stored idle rules in the current transaction.
// when is added to the reasons ("" or ", seen in the write transaction").
func (s *Store) checkIdleIn(ctx context.Context, q querier, path string, ref bs.SessionRef, when string) error {
	var winStatus, nodeStatus, entryStatus, key string
	var runID, endedAt any
	var tua, wUpd, nUpd sql.NullInt64
	var queued, cold int64
	err := q.QueryRowContext(ctx, idleQuery, ref.ID).Scan(&winStatus, &nodeStatus, &runID, &entryStatus, &endedAt, &tua, &wUpd, &nUpd, &key, &queued, &cold)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: no session window %q in %s: %w", ref, ref.ID, path, bs.ErrNotFound)
	}
	if err != nil {
		return storeError(path, "read the state of session "+ref.ID, err)
	}
	switch {
	case winStatus == "running":
		return fmt.Errorf("session %s: run in flight (session_windows.status running%s): %w", ref, when, bs.ErrBusy)
	case nodeStatus == "running":
		return fmt.Errorf("session %s: run in flight (session_nodes.status of %s is running%s): %w", ref, key, when, bs.ErrBusy)
	case runID != nil && fmt.Sprint(runID) != "":
		return fmt.Errorf("session %s: run in flight (entry_json.lifecycleRunId of %s is %v%s): %w", ref, key, runID, when, bs.ErrBusy)
	case queued > 0:
		return fmt.Errorf("session %s: %d queued input(s) in session_pending_inputs wait for a run%s: %w", ref, queued, when, bs.ErrBusy)
	case cold > 0:
		return fmt.Errorf("session %s: in cold storage (session_transcript_cold_archives has its row%s); skipped: %w", ref, when, bs.ErrBusy)
	}
	if st := abortedStatus(winStatus, nodeStatus, entryStatus, endedAt); st != "" {
		return fmt.Errorf("session %s: its last run ended %s%s; OpenClaw starts a new session on the next turn when the transcript changes after such a run, so it is written after its next run: %w",
			ref, st, when, bs.ErrBusy)
	}
	if s.opts.Quiet <= 0 {
		return nil
	}
	var last int64
	var what string
	for _, c := range []struct {
		v    sql.NullInt64
		name string
	}{{tua, "session_windows.transcript_updated_at"}, {wUpd, "session_windows.updated_at"}, {nUpd, "session_nodes.updated_at"}} {
		if c.v.Valid && c.v.Int64 > last {
			last, what = c.v.Int64, c.name
		}
	}
	if what == "" {
		return nil
	}
	now := bs.Now(s.opts.Clock)
	age := now.Sub(time.UnixMilli(last))
	if age < 0 {
		return fmt.Errorf("session %s: %s is %s in the future (clock skew?); wait until it has been idle for %s%s: %w",
			ref, what, (-age).Round(time.Second), s.opts.Quiet, when, bs.ErrBusy)
	}
	if age < s.opts.Quiet {
		return &bs.QuietError{Msg: fmt.Sprintf("session %s: changed %s ago (%s); it must be idle for %s, try again in %s%s",
			ref, age.Round(time.Second), what, s.opts.Quiet, (s.opts.Quiet - age).Round(time.Second), when), Age: age, Quiet: s.opts.Quiet, At: now}
	}
	return nil
}

// abortedStatus returns how the session's last run ended, quoted, when it
// ended in a way after which OpenClaw 2026.8+ takes a changed transcript
// for a reason to start a new session: "timeout" or "killed", or no status
// at all but an endedAt in the node's entry (OpenClaw's
// hasTerminalMainSessionTranscriptNewerThanRegistry). It returns "" for a
// session whose last run ended "done" or "failed", or that never ran.
func abortedStatus(window, node, entry string, endedAt any) string {
	for _, st := range []string{entry, node, window} {
		switch st {
		case "timeout", "killed":
			return strconv.Quote(st)
		case "done", "failed":
			return ""
		}
	}
	if entry == "" && node == "" && window == "" {
		if n, ok := endedAt.(int64); ok && n > 0 {
			return "with no status (entry_json.endedAt is set)"
		}
		if f, ok := endedAt.(float64); ok && f > 0 {
			return "with no status (entry_json.endedAt is set)"
		}
	}
	return ""
}

// stateLock is the part of OpenClaw's gateway.state.lock payload used
// here. A payload without "role" is a gateway's: OpenClaw writes the role
// only for the other owners and reads a missing one as "gateway".
type stateLock struct {
	PID  int    `json:"pid"`
	Role string `json:"role"`
}

// checkStateLock refuses to write while a live non-gateway process owns
// OpenClaw's state lock. A gateway's lock is fine: the gateway coordinates
// with outside SQLite writers through SQLite's own locks, and the stored
// run status tells whether it is using the session. A lock whose pid is
// dead is stale and ignored (logged); an unreadable one counts as held.
func (s *Store) checkStateLock(ref bs.SessionRef) error {
	_, state, err := dirs(s.root)
	if err != nil {
		return err
	}
	lockDirs := []string{filepath.Join(state, "tmp", "openclaw-"+strconv.Itoa(os.Getuid())), filepath.Join(state, "tmp", "openclaw")}
	for _, d := range lockDirs {
		p := filepath.Join(d, StateLockFile)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("session %s: cannot read OpenClaw's state lock %s (%v); not writing while it may be held: %w", ref, p, err, bs.ErrBusy)
		}
		var l stateLock
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("session %s: OpenClaw's state lock %s holds no JSON payload yet (%v); not writing while it is being taken: %w", ref, p, err, bs.ErrBusy)
		}
		role := l.Role
		if role == "" {
			role = "gateway"
		}
		if role == "gateway" {
			continue
		}
		if !pidAlive(l.PID) {
			s.log.Info("ignoring stale OpenClaw state lock", "path", p, "pid", l.PID, "role", role)
			continue
		}
		return fmt.Errorf("session %s: OpenClaw's state lock %s is held by pid %d with role %q (expected none, or a gateway); nothing is written while it runs: %w",
			ref, p, l.PID, role, bs.ErrBusy)
	}
	return nil
}

// pidAlive reports whether process pid runs, as OpenClaw's isPidAlive:
// kill(pid, 0) succeeds. EPERM counts as alive here (a process of another
// user holds the lock), the conservative choice for a writer.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
