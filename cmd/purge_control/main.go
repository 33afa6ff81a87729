// Command purge_control is the agent-facing tool of the smart-purge-control
// skill: an agent runs it (usually through its shell tool) to see what
// BrainSurgeon extracted from its session, to get extracted values back,
// and to mark entries as extractable or not. See `purge_control --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/session"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := (&Main{Stdout: os.Stdout, Stderr: os.Stderr}).Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

const mainUsage = `purge_control: see and control what BrainSurgeon extracted from your session.

Large old values (thinking, tool results) are moved out of the transcript and
replaced by [[extracted-<entryId>]] (or "<preview>… [[extracted-<entryId>]]").
Use this tool to list them, get them back, and say what may be extracted.

Usage:
  purge_control get_context --agent A --session S [--json] [--agents-dir DIR]
  purge_control restore <entry> [--keys a,b] --agent A --session S [--tool-call-id ID] [--json] [--agents-dir DIR]
  purge_control restore tc-<toolCallId> [--offset N] [--max-chars M] --agent A --session S [--json] [--agents-dir DIR]
  purge_control set_extractable <entry> <true|false|N> --agent A --session S [--json] [--agents-dir DIR]
  purge_control grep PATTERN --agent A --session S [--regex] [--ignore-case] [--max N] [--json] [--agents-dir DIR]
  purge_control version

Examples:
  # Check context stats
  purge_control get_context --agent crix-claub --session direct:123

  # Restore extracted content
  purge_control restore msg-abc123 --agent crix-claub --session direct:123

  # Mark content as never-extractable (for skills, critical refs)
  purge_control set_extractable msg-abc123 false --agent crix-claub --session direct:123

  # Set custom keep window (keep for 10 messages)
  purge_control set_extractable msg-abc123 10 --agent crix-claub --session direct:123

  # Search what was compacted away or extracted, too
  purge_control grep "connection refused" --agent crix-claub --session direct:123

--session is an agent/sessionId, a session id, or a session key or its unique
suffix (direct:123). --agents-dir defaults to $BRAINSURGEON_AGENTS_DIR, then
$AGENTS_DIR, then ~/.openclaw/agents. Flags may come before or after the
arguments. Exit status: 0 success, 1 problem, 2 usage.
Run "purge_control <command> --help" for a command's details.
`

// Main runs one purge_control command line.
type Main struct {
	Stdout, Stderr io.Writer
	// Logger receives the library's log records; nil means none, unless
	// BRAINSURGEON_LOG sets a level (records then go to stderr).
	Logger bs.Logger
	// wrapSide, when not nil, wraps the side store of the installation
	// the commands open (a test's faulty store).
	wrapSide func(bs.SideStore) bs.SideStore
}

func (m *Main) logger() bs.Logger {
	if m.Logger == nil {
		m.Logger = cli.EnvLogger(m.Stderr)
	}
	return m.Logger
}

// version may be set at build time with -ldflags "-X main.version=…";
// otherwise "version" reports the module version or the VCS revision
// recorded in the build information (see cli.Version).
var version = "dev"

// Run executes args and returns the exit status. With --json, an error is
// also written to stdout as JSON.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, mainUsage)
		return cli.ExitUsage
	}
	err := m.run(ctx, commandFirst(args))
	if cli.WantsJSON(args) {
		return cli.ExitJSON(m.Stdout, m.Stderr, err)
	}
	return cli.Exit(m.Stderr, err)
}

func (m *Main) run(ctx context.Context, args []string) error {
	switch cmd, rest := args[0], args[1:]; cmd {
	case "get_context":
		return (&getContextCommand{m: m}).Run(ctx, rest)
	case "restore":
		return (&restoreCommand{m: m}).Run(ctx, rest)
	case "set_extractable":
		return (&setExtractableCommand{m: m}).Run(ctx, rest)
	case "grep":
		return (&grepCommand{m: m}).Run(ctx, rest)
	case "version", "--version":
		fmt.Fprintf(m.Stdout, "purge_control %s\n", cli.Version(version))
		return nil
	case "help", "-h", "--help", "-help":
		// "help <command>" shows the command's help; "help help" and
		// "help --help" show this one.
		if len(rest) > 0 && commands[rest[0]] {
			return m.run(ctx, []string{rest[0], "--help"})
		}
		fmt.Fprint(m.Stdout, mainUsage)
		return nil
	default:
		return &cli.UsageError{Msg: fmt.Sprintf("unknown command %q (expected get_context, restore, set_extractable, grep or version)", cmd), Try: "purge_control --help"}
	}
}

var commands = map[string]bool{"get_context": true, "restore": true, "set_extractable": true, "grep": true}

// commandFirst moves the command name to the front when flags come before
// it ("purge_control --agent A --session S restore X"); "-h" or "--help"
// before any command asks for the main help.
func commandFirst(args []string) []string {
	if !strings.HasPrefix(args[0], "-") {
		return args
	}
	for i, a := range args {
		switch {
		case a == "--":
			return args
		case commands[a]:
			out := append([]string{a}, args[:i]...)
			return append(out, args[i+1:]...)
		case a == "-h" || a == "--help" || a == "-help":
			return []string{"--help"}
		}
	}
	return args
}

// common holds the flags every command takes.
type common struct {
	agent, session, agentsDir string
	json                      bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.agent, "agent", "", "the agent id (e.g. main)")
	fs.StringVar(&c.session, "session", "", "the session: agent/sessionId, a session id, or a session key or its suffix (direct:123)")
	fs.StringVar(&c.agentsDir, "agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON")
}

// parse parses args, printing usage on --help, and checks --session.
func (m *Main) parse(fs *flag.FlagSet, c *common, usage string, args []string) ([]string, error) {
	pos, err := cli.ParseHelp(fs, args, m.Stdout, usage)
	if err == cli.ErrHelp {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(c.session) == "" {
		return nil, &cli.UsageError{Msg: "--session is required", Try: fs.Name() + " --help"}
	}
	return pos, nil
}

// open loads the config beside the agents dir, opens the installation
// and resolves the session. A config that fails validation is reported on
// stderr and its valid fields are used.
func (m *Main) open(ctx context.Context, c *common) (config.Config, *backend.Set, bs.SessionRef, error) {
	cfg, _, err := cli.LoadConfig(ctx, m.Stderr, c.agentsDir, m.logger(), true)
	if err != nil {
		return config.Config{}, nil, bs.SessionRef{}, err
	}
	set, err := cli.Open(ctx, c.agentsDir, backend.FromConfig(cfg, m.logger()))
	if err != nil {
		return config.Config{}, nil, bs.SessionRef{}, err
	}
	if m.wrapSide != nil {
		set.Side = m.wrapSide(set.Side)
	}
	ref, err := resolve(ctx, set.Store, c.agent, c.session, m.logger())
	if err != nil {
		return config.Config{}, nil, bs.SessionRef{}, err
	}
	return cfg, set, ref, nil
}

// setup returns the agent's tools over the installation, with a
// Restorer set up from the config, and the session (see open). The
// tools run without the context engine's view: a restore reads the side
// store only (the plugin's restore also answers from the engine's view).
func (m *Main) setup(ctx context.Context, c *common) (*agenttools.Tools, bs.SessionRef, error) {
	cfg, set, ref, err := m.open(ctx, c)
	if err != nil {
		return nil, bs.SessionRef{}, err
	}
	p := prune.New(set.Store, set.Side, set.StateDir, cfg, m.logger())
	// The context engine's state is the restore log: the view shows a
	// restored value in full, and every pass protects it.
	p.Restores = &engine.Engine{Store: set.Store, StateDir: set.StateDir, Policy: extract.FromConfig(cfg), Logger: m.logger()}
	r := p.Restorer()
	r.Policy.Enabled = true
	return &agenttools.Tools{Store: set.Store, Side: set.Side, Restorer: r, Logger: m.logger()}, ref, nil
}

// resolve finds the session: "agent/session" first, then the session
// alone under the agent (a session id, or a session key or its suffix,
// also tried as "agent:<agent>:<session>"). Without an agent the session
// name is resolved on its own.
func resolve(ctx context.Context, st bs.Store, agent, name string, log bs.Logger) (bs.SessionRef, error) {
	if agent == "" {
		return st.Resolve(ctx, name)
	}
	if bs.CheckSegment(agent) != nil {
		return bs.SessionRef{}, fmt.Errorf("agent %q: expected an agent id such as main: %w", agent, bs.ErrInvalid)
	}
	mine, agents, _, err := cli.AgentSessions(ctx, st, agent, log)
	if err != nil {
		return bs.SessionRef{}, err
	}
	if len(mine) == 0 {
		return bs.SessionRef{}, fmt.Errorf("no sessions of agent %q (agents: %s): %w", agent, cli.JoinMax(agents, 10), bs.ErrNotFound)
	}
	if ref, err := st.Resolve(ctx, agent+"/"+name); err == nil {
		return ref, nil
	} else if errors.Is(err, session.ErrNotTranscript) {
		return bs.SessionRef{}, err // a file of that name that is not a transcript
	}
	if !strings.HasPrefix(name, "agent:") {
		if ref, err := st.Resolve(ctx, "agent:"+agent+":"+name); err == nil && ref.Agent == agent {
			return ref, nil
		}
	}
	ref, err := st.Resolve(ctx, name)
	if err == nil && ref.Agent == agent {
		return ref, nil
	}
	var names []string
	for _, s := range mine {
		n := s.ID
		if s.Key != "" {
			n += " (" + s.Key + ")"
		}
		names = append(names, n)
	}
	if err == nil {
		return bs.SessionRef{}, fmt.Errorf("session %q belongs to agent %q, not %q; sessions of %s: %s: %w", name, ref.Agent, agent, agent, cli.JoinMax(names, 10), bs.ErrNotFound)
	}
	if errors.Is(err, bs.ErrAmbiguous) {
		return bs.SessionRef{}, err
	}
	return bs.SessionRef{}, fmt.Errorf("no session %q under agent %q; its sessions: %s: %w", name, agent, cli.JoinMax(names, 10), bs.ErrNotFound)
}
