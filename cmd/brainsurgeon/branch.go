package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/portable"
)

const sessionUsage = `Usage: brainsurgeon session branch [--at ENTRY] [--session S] [--json] [--agents-dir DIR]

branch copies the raw lines of the session's path from its root to ENTRY
(default: the active leaf), byte for byte, into a new session of the same
agent, under a new session id and a header whose parentSession names the
source. The host loads the new session with ENTRY as its leaf, so its context
is the source's as it stood at that entry; other branches are not copied.
An unknown ENTRY is an error that lists nearby ids. The source is not
changed; OpenClaw's SQLite store never gets new sessions (refused).

Examples:
  brainsurgeon session branch
  brainsurgeon session branch --at 881ed162 --session agent:main:main --json

Flags:
`

type sessionCommand struct{ m *Main }

func (c *sessionCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.m.Stderr, sessionUsage)
		return &cli.UsageError{Msg: "session needs a subcommand: branch", Try: "brainsurgeon help session"}
	}
	switch args[0] {
	case "branch":
		return c.branch(ctx, args[1:])
	case "help", "-h", "--help", "-help":
		fmt.Fprint(c.m.Stdout, sessionUsage)
		return nil
	}
	return &cli.UsageError{Msg: fmt.Sprintf("unknown session subcommand %q (expected branch)", args[0]), Try: "brainsurgeon help session"}
}

func (c *sessionCommand) branch(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon session branch", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	at := fs.String("at", "", "the entry id to branch at (default: the active leaf)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, sessionUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("session branch takes no arguments, got %q (name the session with --session, the entry with --at)", pos), Try: "brainsurgeon session branch --help"}
	}
	t, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	ns, err := portable.Branch(ctx, tr, *at, portable.BranchOptions{})
	if err != nil {
		return err
	}
	ref, err := portable.Create(ctx, t.set.Store, t.ref.Agent, ns)
	if err != nil {
		return err
	}
	out := createdOutput{Session: ref.String(), Agent: ref.Agent, SessionID: ref.ID, Path: t.set.Store.Location(ref), ParentSession: t.ref.ID, Lines: len(ns.Lines), At: *at}
	if out.At == "" {
		if p := tr.ActivePath(); len(p) > 0 {
			out.At = tr.Nodes()[p[len(p)-1]].ID
		}
	}
	if sf.json {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	fmt.Fprintf(c.m.Stdout, "branched %s at %s into %s (parentSession %s, %d lines) at %s\n", t.ref, out.At, out.Session, out.ParentSession, out.Lines, out.Path)
	return nil
}
