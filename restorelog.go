package brainsurgeon

import (
	"context"
	"errors"
	"time"
)

// RestoreLog records the values the agent restored, by any path, so that
// every pass protects them for keep_after_restore_seconds: the extraction
// pass (package extract, through prune and compaction's prune layer),
// retention, the restore of a side-store value, and the context engine's
// view. A restore that writes nothing to the host's transcript (a value
// the engine's view had collapsed, a write-back queued while the session
// is busy, a tool result stored at the source) is known only here.
//
// The context engine's *engine.Engine implements it over its per-session
// state. An error wrapping ErrUnsupported or ErrInvalid means the log
// keeps nothing for that session (a pi session, which has no agent and no
// engine state): callers go on without it (RestoresOf and RecordRestoreIn
// do so).
type RestoreLog interface {
	// RecordRestore notes that the agent restored entry entryID of ref at
	// the time at. entryID is an entry id, or the side key of a tool
	// result stored at the source ("tc-<toolCallId>"), which stands for
	// the tool result entry of that call.
	RecordRestore(ctx context.Context, ref SessionRef, entryID string, at time.Time) error
	// Restores returns the newest recorded restore time of each entry of
	// ref (empty, never nil, when none), keyed as RecordRestore was
	// called. Times older than the protection window may be left out.
	Restores(ctx context.Context, ref SessionRef) (map[string]time.Time, error)
}

// NoRestoreLog reports whether err, returned by a RestoreLog, means that
// the log keeps nothing for the session (it wraps ErrUnsupported or
// ErrInvalid): not a failure, the caller goes on without the log.
func NoRestoreLog(err error) bool {
	return errors.Is(err, ErrUnsupported) || errors.Is(err, ErrInvalid)
}

// RestoresOf returns log's restores of ref. It returns an empty map (never
// nil) when log is nil or keeps nothing for ref (NoRestoreLog); any other
// error is returned with a nil map.
func RestoresOf(ctx context.Context, log RestoreLog, ref SessionRef) (map[string]time.Time, error) {
	if log == nil {
		return map[string]time.Time{}, nil
	}
	m, err := log.Restores(ctx, ref)
	if err != nil {
		if NoRestoreLog(err) {
			return map[string]time.Time{}, nil
		}
		return nil, err
	}
	if m == nil {
		m = map[string]time.Time{}
	}
	return m, nil
}

// RecordRestoreIn records a restore in log: nothing when log is nil, and
// no error when the log keeps nothing for ref (NoRestoreLog).
func RecordRestoreIn(ctx context.Context, log RestoreLog, ref SessionRef, entryID string, at time.Time) error {
	if log == nil {
		return nil
	}
	if err := log.RecordRestore(ctx, ref, entryID, at); err != nil && !NoRestoreLog(err) {
		return err
	}
	return nil
}
