package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Main runs one brainsurgeon command line.
type Main struct {
	Stdout, Stderr io.Writer
	// Stdin answers compact's confirmation question when it is a
	// terminal; nil means no terminal.
	Stdin io.Reader
	// Logger, when not nil, receives the library's log records (the
	// commands log nothing by default; BRAINSURGEON_LOG=debug turns on
	// debug records on stderr).
	Logger bs.Logger
	// wrapSide, when not nil, wraps the side store of every installation
	// the commands open (a test's faulty store).
	wrapSide func(bs.SideStore) bs.SideStore
}

func (m *Main) logger() bs.Logger {
	if m.Logger == nil {
		m.Logger = cli.EnvLogger(m.Stderr)
	}
	return m.Logger
}

const mainUsage = `brainsurgeon keeps OpenClaw and pi agent transcripts lean without losing a byte.

Usage:
  brainsurgeon <command> [arguments] [flags]

Commands:
  inspect   show what a transcript holds (entries, tree, compactions, extractable bytes)
  prune     run one extraction pass now (large old values → side store + placeholders)
  restore   bring extracted values back (one entry, or --all [--pristine])
  extractable  set an entry's _extractable (true, false or N messages)
  verify    check that every placeholder has its side value (lists orphans)
  doctor    diagnose sessions (unpaired tool blocks, lost values) and host leftovers; --fix, --collect
  compact   compact a session's context now (prune, summarize or full layer)
  context   status, inspect, history, grep, describe, expand, export, import
  session   branch: copy a session's path into a new session
  autocompact  turn the daemon's automatic compaction on or off
  serve     run the daemon: scheduled pruning and retention, REST API and web UI
  service   install, uninstall, status: run serve as a user service (systemd, launchd)
  openclaw  install, uninstall, status: BrainSurgeon's plugin inside OpenClaw
  pi        install, uninstall, status: BrainSurgeon's extension inside pi
  side      status, migrate: where the extracted values are kept (local or S3)
  version   print the version
  help      show this help, or a command's help: brainsurgeon help inspect,
            brainsurgeon help context grep

Sessions are named by path, as agent/sessionId, by session id, or by session key
(agent:main:main, or a unique suffix such as direct:123). --agents-dir defaults to
$BRAINSURGEON_AGENTS_DIR, then $AGENTS_DIR, then $OPENCLAW_STATE_DIR/agents, then
~/.openclaw/agents. Commands that take --session default to the most recently
modified session of agent main.
`

const versionUsage = `Usage: brainsurgeon version

Prints the version: the one set at build time, else the module version or the
VCS revision (with "+dirty" for uncommitted changes, and the commit's time)
that Go recorded in the binary, then the Go version.
`

// commands are the subcommands, for "help <command>".
var commands = map[string]bool{"inspect": true, "prune": true, "restore": true, "extractable": true, "verify": true, "doctor": true, "serve": true, "version": true,
	"compact": true, "context": true, "session": true, "autocompact": true,
	"service": true, "openclaw": true, "pi": true, "side": true}

// Run executes args and returns the exit status. With --json, an error is
// also written to stdout as JSON.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, mainUsage)
		return cli.ExitUsage
	}
	err := m.run(ctx, args)
	if cli.WantsJSON(args) {
		return cli.ExitJSON(m.Stdout, m.Stderr, err)
	}
	return cli.Exit(m.Stderr, err)
}

func (m *Main) run(ctx context.Context, args []string) error {
	switch cmd, rest := args[0], args[1:]; cmd {
	case "inspect":
		return (&inspectCommand{m: m}).Run(ctx, rest)
	case "prune":
		return (&pruneCommand{m: m}).Run(ctx, rest)
	case "restore":
		return (&restoreCommand{m: m}).Run(ctx, rest)
	case "extractable":
		return (&extractableCommand{m: m}).Run(ctx, rest)
	case "verify":
		return (&verifyCommand{m: m}).Run(ctx, rest)
	case "doctor":
		return (&doctorCommand{m: m}).Run(ctx, rest)
	case "serve":
		return (&serveCommand{m: m}).Run(ctx, rest)
	case "compact":
		return (&compactCommand{m: m}).Run(ctx, rest)
	case "context":
		return (&contextCommand{m: m}).Run(ctx, rest)
	case "session":
		return (&sessionCommand{m: m}).Run(ctx, rest)
	case "autocompact":
		return (&autocompactCommand{m: m}).Run(ctx, rest)
	case "openclaw":
		return (&openclawCommand{m: m}).Run(ctx, rest)
	case "pi":
		return (&piCommand{m: m}).Run(ctx, rest)
	case "side":
		return (&sideCommand{m: m}).Run(ctx, rest)
	case "service":
		return (&serviceCommand{m: m}).Run(ctx, rest)
	case "version", "--version":
		fmt.Fprintf(m.Stdout, "brainsurgeon %s\n", cli.Version(version))
		return nil
	case "help", "-h", "--help", "-help":
		// "help <command>" shows the command's help; "help help",
		// "help --help", "-h -h" and the like show this one.
		for i, a := range rest {
			if commands[a] {
				if (a == "context" || a == "session" || a == "openclaw" || a == "pi" || a == "service" || a == "side") && i+1 < len(rest) && !isHelp(rest[i+1]) {
					// "help context grep" is "context grep --help".
					return m.run(ctx, []string{a, rest[i+1], "--help"})
				}
				if a == "version" {
					fmt.Fprint(m.Stdout, versionUsage)
					return nil
				}
				return m.run(ctx, []string{a, "--help"})
			}
		}
		if len(rest) > 0 && !isHelp(rest[0]) {
			return &cli.UsageError{Msg: fmt.Sprintf("no help for %q: not a command", rest[0]), Try: "brainsurgeon help"}
		}
		fmt.Fprint(m.Stdout, mainUsage)
		return nil
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("unknown command %q", cmd), Try: "brainsurgeon help"}
	}
}

// isHelp reports whether a is a word that asks for help.
func isHelp(a string) bool {
	return a == "help" || a == "-h" || a == "--help" || a == "-help"
}

// openSession opens a session named by a transcript path or by a name
// that the stores under agentsDir resolve. A transcript file outside any
// agents dir is read as it is.
func openSession(ctx context.Context, agentsDir, name string) (bs.Transcript, error) {
	set, err := cli.Open(ctx, agentsDir, backend.Options{})
	if err != nil {
		if fi, serr := os.Stat(name); serr == nil && fi.Mode().IsRegular() {
			return session.Open(ctx, name, bs.SessionRef{}, nil)
		} else if looksLikePath(name) && serr != nil {
			return nil, fmt.Errorf("transcript %s: %w", name, serr)
		}
		return nil, fmt.Errorf("%q is not a transcript file, and looking it up as a session name failed: %w", name, err)
	}
	ref, err := resolveRef(ctx, set, name)
	if err != nil {
		return nil, err
	}
	return set.Store.Open(ctx, ref, nil)
}

// looksLikePath reports whether a session name can only be a file path.
func looksLikePath(name string) bool {
	return strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "/") ||
		strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "~")
}
