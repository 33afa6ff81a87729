package brainsurgeon

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions wrap them with context; test with errors.Is.
var (
	// ErrNotFound means a session, entry, key or file does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous means a name matched more than one session.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrBusy means the session is in use by the host (a run in flight, a
	// live lock holder, or a recent write) and nothing was written.
	ErrBusy = errors.New("session busy")
	// ErrChanged means the transcript changed after it was read; nothing
	// was written and the operation may be retried later.
	ErrChanged = errors.New("changed underneath us, try later")
	// ErrMalformed means a line is not a single JSON object.
	ErrMalformed = errors.New("malformed line")
	// ErrInvalid means an input (a name, an id, a path) is not acceptable.
	ErrInvalid = errors.New("invalid input")
	// ErrUnsupported means the store cannot do the operation (the SQLite
	// store never appends rows, for example); the error names it.
	ErrUnsupported = errors.New("not supported by this store")
)

// LineError reports a problem with one line of a transcript. It wraps Err,
// which for a malformed line wraps ErrMalformed.
type LineError struct {
	// Path is the transcript's path (or the store and session it is in).
	Path string
	// Line is the 1-based line number.
	Line int
	// Err is the underlying problem.
	Err error
}

// Error returns "path:line: err".
func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
}

// Unwrap returns e.Err.
func (e *LineError) Unwrap() error { return e.Err }
