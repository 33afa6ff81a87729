package brainsurgeon_test

import (
	"errors"
	"fmt"
	"log/slog"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Sentinel errors are wrapped with context; test them with errors.Is, and
// reach the line of a malformed-line error with errors.As.
func ExampleLineError() {
	var err error = &bs.LineError{Path: "s.jsonl", Line: 440, Err: fmt.Errorf("%w: two JSON values glued on one line", bs.ErrMalformed)}
	err = fmt.Errorf("inspect: %w", err)
	var le *bs.LineError
	fmt.Println(errors.Is(err, bs.ErrMalformed), errors.As(err, &le), le.Line)
	fmt.Println(err)
	// Output:
	// true true 440
	// inspect: s.jsonl:440: malformed line: two JSON values glued on one line
}

// A *slog.Logger is a Logger; a nil one means discard.
func ExampleLoggerOrDiscard() {
	var l *slog.Logger
	log := bs.LoggerOrDiscard(l) // safe to call
	log.Info("dropped")
	fmt.Println(bs.SessionRef{Agent: "main", ID: "1d9efd24"})
	// Output:
	// main/1d9efd24
}
