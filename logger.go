package brainsurgeon

import (
	"context"
	"log/slog"
)

// Logger receives the library's log records. A *slog.Logger satisfies it.
// Implementations must be safe for concurrent use. A nil Logger means
// discard; use [LoggerOrDiscard] to get one that is safe to call.
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Warn(msg string, args ...any)
	Error(msg string, args ...any)
}

type discard struct{}

func (discard) Debug(string, ...any) {}
func (discard) Info(string, ...any)  {}
func (discard) Warn(string, ...any)  {}
func (discard) Error(string, ...any) {}

// DiscardLogger returns a Logger that drops every record.
func DiscardLogger() Logger { return discard{} }

// LoggerOrDiscard returns l, or a Logger that drops every record when l is
// nil (including a nil pointer stored in the interface by a caller).
func LoggerOrDiscard(l Logger) Logger {
	if l == nil {
		return discard{}
	}
	if s, ok := l.(*slog.Logger); ok && s == nil {
		return discard{}
	}
	return l
}

// DebugEnabled reports whether l may record debug messages, so that a
// caller can skip building them: false for a discarding Logger and for a
// *slog.Logger that says debug is off,
// true otherwise.
func DebugEnabled(l Logger) bool {
	switch v := LoggerOrDiscard(l).(type) {
	case discard:
		return false
	case *slog.Logger:
		return v.Enabled(context.Background(), slog.LevelDebug)
	}
	return true
}
