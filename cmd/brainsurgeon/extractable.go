package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

const extractableUsage = `Usage: brainsurgeon extractable <session> <entry> true|false|N [--json] [--agents-dir DIR]

Sets the entry's "_extractable" member, which overrides the extraction policy
for that entry:
  true    extract it even if its type or length would not qualify (it still
          waits until it is outside the last keep_recent messages)
  false   never extract it
  N       keep it for N messages from the end (its own keep_recent window)

The change is written now when the session is idle, else queued and applied
once it is (by the daemon or the next prune). RestoreAll --pristine undoes it.

Examples:
  brainsurgeon extractable agent:main:main 8797d4c7 false
  brainsurgeon extractable direct:123 8797d4c7 10 --json

Flags:
`

type extractableCommand struct{ m *Main }

func (c *extractableCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon extractable", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, extractableUsage)
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return &cli.UsageError{Msg: fmt.Sprintf("extractable takes a session, an entry id and true, false or a number, got %s", plural.Count(len(pos), "argument", "arguments")),
			Try: "brainsurgeon extractable --help"}
	}
	if _, err := restore.ParseExtractableValue(pos[2]); err != nil {
		return &cli.UsageError{Msg: bs.ErrorMessage(err), Try: "brainsurgeon extractable --help"}
	}
	r, set, err := c.m.restorer(ctx, *agentsDir)
	if err != nil {
		return err
	}
	ref, err := resolveRef(ctx, set, pos[0])
	if err != nil {
		return err
	}
	res, err := r.SetExtractable(ctx, ref, pos[1], pos[2])
	if err != nil {
		return err
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, cli.NewSetResult(res), nil)
	}
	printSet(c.m.Stdout, res)
	return nil
}

func printSet(w io.Writer, res *restore.SetResult) {
	prev := res.Previous
	if prev == "" {
		prev = "absent"
	}
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "entry %s: _extractable is already %s\n", res.EntryID, res.Value)
	case res.Applied:
		fmt.Fprintf(w, "entry %s: _extractable set to %s (was %s); written now\n", res.EntryID, res.Value, prev)
	default:
		fmt.Fprintf(w, "entry %s: _extractable %s (was %s) queued: written when the session is idle\n", res.EntryID, res.Value, prev)
	}
}
