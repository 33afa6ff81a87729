package brainsurgeon

import (
	"errors"
	"fmt"
	"strings"
	"time"
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
	// ErrCorrupt means stored side data cannot be trusted: a pack or a
	// per-entry file does not parse, or a record or a value in it does
	// not match its checksum.
	ErrCorrupt = errors.New("corrupt side file")
	// ErrUnavailable means a remote store (an object store holding side
	// values) cannot be reached now or answered with a server error: the
	// values it holds are kept, nothing was changed on their account, and
	// the operation may be retried later. It is never ErrNotFound: an
	// outage does not make a value missing.
	ErrUnavailable = errors.New("side store unavailable")
	// ErrNotTranscript means a file or a session holds no session header
	// and no entry: no line is a transcript line (only blank or malformed
	// ones). It wraps ErrInvalid.
	ErrNotTranscript = fmt.Errorf("not a transcript: %w", ErrInvalid)
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

// QuietError is the ErrBusy of a session that is busy only because it was
// modified too recently: it must be left alone for Quiet (the quiet period,
// idle_seconds) and was modified Age ago. It tells a caller when the
// session will be idle (IdleAt), unless the host writes to it again.
type QuietError struct {
	// Msg is the whole message (it names the session and the times).
	Msg string
	// Age is how long ago the session was modified; Quiet is the quiet
	// period it must have been left alone for.
	Age, Quiet time.Duration
	// At is when the store looked.
	At time.Time
}

// Error returns Msg followed by ": " and ErrBusy's text.
func (e *QuietError) Error() string { return e.Msg + ": " + ErrBusy.Error() }

// Unwrap returns ErrBusy.
func (e *QuietError) Unwrap() error { return ErrBusy }

// IdleAt returns when the quiet period ends: At plus what is left of it.
func (e *QuietError) IdleAt() time.Time { return e.At.Add(max(e.Quiet-e.Age, 0)) }

// IdleAt returns when a session that err calls busy will be idle, when err
// holds a *QuietError; ok is false for every other error (a run in flight
// or a live lock ends when the host is done, which no one can tell).
func IdleAt(err error) (at time.Time, ok bool) {
	var q *QuietError
	if errors.As(err, &q) {
		return q.IdleAt(), true
	}
	return time.Time{}, false
}

// sentinelWords are, for the sentinels whose text ErrorMessage may drop, words
// a message must contain to say what the sentinel says: the sentence
// before the sentinel then already names the absence or the expectation.
var sentinelWords = []struct {
	err   error
	words []string
}{
	{ErrNotFound, []string{"not found", "no ", "not exist", "unknown", "missing", "none", "never", "gone"}},
	{ErrInvalid, []string{"expected", "invalid", "not ", "no ", "must", "unknown", "empty", "only", "too ", "neither"}},
}

// ErrorMessage returns err's text for a person to read: err.Error(), without
// a trailing ": not found" or ": invalid input" (the text of ErrNotFound
// or ErrInvalid, which err wraps) when the sentence before it already says
// so, as in "entry "x" not found in session main/abc (…)". A short text
// such as "entry x: not found" keeps it. errors.Is still tells err's kind;
// the CLI and the API print ErrorMessage. A nil err gives "".
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, s := range sentinelWords {
		head, ok := strings.CutSuffix(msg, ": "+s.err.Error())
		if !ok || !errors.Is(err, s.err) || len(strings.Fields(head)) < 4 {
			continue
		}
		lower := strings.ToLower(head)
		for _, w := range s.words {
			if strings.Contains(lower, w) {
				return head
			}
		}
	}
	return msg
}
