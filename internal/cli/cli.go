// Package cli holds what the brainsurgeon and purge_control commands share:
// flag parsing that accepts flags before and after positional arguments,
// usage errors and exit codes.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit codes (DESIGN decision 14).
const (
	// ExitOK means success.
	ExitOK = 0
	// ExitProblem means the command ran and found a problem, or failed.
	ExitProblem = 1
	// ExitUsage means the command line was wrong.
	ExitUsage = 2
)

// UsageError is a wrong command line. Try is an optional hint.
type UsageError struct {
	Msg string
	Try string
}

// Error returns the message.
func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// ErrHelp is returned by Parse when -h or --help was given; the usage has
// been printed.
var ErrHelp = flag.ErrHelp

// Parse parses args with fs, accepting flags before, between and after
// positional arguments ("--" ends flag parsing). It returns the positional
// arguments in order.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, ErrHelp
			}
			return nil, &UsageError{Msg: err.Error(), Try: fs.Name() + " --help"}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Lines joins lines with "\n" and adds a final newline; a helper for help
// texts.
func Lines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
