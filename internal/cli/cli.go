// Package cli holds what the brainsurgeon and purge_control commands share:
// flag parsing that accepts flags before and after positional arguments,
// usage errors and exit codes.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Exit codes, the same for every command: 0 success, 1 a problem found, 2 a
// usage error. A failure that may pass when tried later (a busy or changed
// session, a side store that cannot be reached now) is a problem, 1: its
// message says so, and Kind tells it apart under --json.
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

// StatusError gives an error an exit status of its own, for a command
// whose statuses differ from the usual ones (context grep: 1 for no match,
// 2 for any error). Err is reported as Exit reports it; a nil Err reports
// nothing (the command has said what there was to say) and, under --json,
// adds no error to the output.
type StatusError struct {
	Err  error
	Code int
}

// Error returns Err's message, or "exit status N" when Err is nil.
func (e *StatusError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *StatusError) Unwrap() error { return e.Err }

// ErrHelp is returned by Parse when -h or --help was given; the usage has
// been printed.
var ErrHelp = flag.ErrHelp

// Parse parses args with fs, accepting flags before, between and after
// positional arguments ("--" ends flag parsing). It returns the positional
// arguments in order. A flag error is a *UsageError whose Try is
// "<fs.Name()> --help": name the flag set with the program and the
// command ("brainsurgeon inspect").
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

// ParseHelp is Parse that, when -h or --help is given, prints usage and
// the flag defaults to stdout and returns ErrHelp.
func ParseHelp(fs *flag.FlagSet, args []string, stdout io.Writer, usage string) ([]string, error) {
	pos, err := Parse(fs, args)
	if err == ErrHelp {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	return pos, err
}

// Exit reports err on stderr in the commands' form ("Error: …" and an
// optional "Try: …"; the text is brainsurgeon.ErrorMessage's) and returns the exit status: a *StatusError's Code,
// 0 for nil or ErrHelp, 2 for a *UsageError, 1 otherwise.
func Exit(stderr io.Writer, err error) int {
	var ue *UsageError
	var se *StatusError
	switch {
	case errors.As(err, &se):
		if se.Err != nil {
			Exit(stderr, se.Err)
		}
		return se.Code
	case err == nil, errors.Is(err, ErrHelp):
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "Error: %s\n", ue.Msg)
		if ue.Try != "" {
			fmt.Fprintf(stderr, "Try: %s\n", ue.Try)
		}
		return ExitUsage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "Error: interrupted")
		return ExitProblem
	default:
		fmt.Fprintf(stderr, "Error: %s\n", bs.ErrorMessage(err))
		return ExitProblem
	}
}

// EnvLogger returns the logger BRAINSURGEON_LOG asks for ("debug", "info",
// …), writing to stderr, or a logger that discards when it is unset or
// not a level.
func EnvLogger(stderr io.Writer) bs.Logger {
	if lvl := os.Getenv("BRAINSURGEON_LOG"); lvl != "" {
		var l slog.Level
		if err := l.UnmarshalText([]byte(lvl)); err == nil {
			return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l}))
		}
	}
	return bs.DiscardLogger()
}

// JoinMax joins up to max names, saying how many there are in all; no
// names is "none".
func JoinMax(names []string, max int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > max {
		return strings.Join(names[:max], ", ") + fmt.Sprintf(", … (%d in all)", len(names))
	}
	return strings.Join(names, ", ")
}

// AgentSessions returns the sessions of agent among the n sessions st
// knows, and the sorted names of every agent seen, for an error that says
// what exists when agent has none. The parts of the store it could not
// list are logged on log (see brainsurgeon.ListSessions).
func AgentSessions(ctx context.Context, st bs.Store, agent string, log bs.Logger) (mine []bs.SessionRef, agents []string, n int, err error) {
	all, err := bs.ListSessions(ctx, st, log)
	if err != nil {
		return nil, nil, 0, err
	}
	seen := map[string]bool{}
	for _, r := range all {
		if !seen[r.Agent] {
			seen[r.Agent] = true
			agents = append(agents, r.Agent)
		}
		if r.Agent == agent {
			mine = append(mine, r)
		}
	}
	sort.Strings(agents)
	return mine, agents, len(all), nil
}
