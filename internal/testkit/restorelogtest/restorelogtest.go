// Package restorelogtest has a brainsurgeon.RestoreLog for the tests of
// the passes that read one (extract, retention, compact).
package restorelogtest

import (
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Map is a restore log that answers Times and records nothing. When Err is
// set, every call fails with it.
type Map struct {
	// Times are the restore times by entry id (or source key).
	Times map[string]time.Time
	// Err is the error of every call, nil for none.
	Err error
}

var _ bs.RestoreLog = Map{}

// RecordRestore records nothing and returns Err.
func (l Map) RecordRestore(context.Context, bs.SessionRef, string, time.Time) error { return l.Err }

// Restores returns Times and Err.
func (l Map) Restores(context.Context, bs.SessionRef) (map[string]time.Time, error) {
	return l.Times, l.Err
}
