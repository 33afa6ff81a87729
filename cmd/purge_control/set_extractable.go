package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

const setExtractableUsage = `Usage: purge_control set_extractable <entry> <true|false|N> --agent A --session S [--json] [--agents-dir DIR]

Sets the entry's "_extractable" member:
  false  never extract it (skill content, critical references)
  N      keep it for N messages from the end before it may be extracted
         (its own window instead of keep_recent)
  true   extract it even if it is short or of another type (still not
         within the last keep_recent messages)
Written now if the session is idle, else as soon as it is.

Examples:
  purge_control set_extractable msg-abc123 false --agent crix-claub --session direct:123
  purge_control set_extractable msg-abc123 10 --agent crix-claub --session direct:123

Flags:
`

type setExtractableCommand struct{ m *Main }

func (c *setExtractableCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("purge_control set_extractable", flag.ContinueOnError)
	var com common
	com.register(fs)
	pos, err := c.m.parse(fs, &com, setExtractableUsage, args)
	if err != nil {
		return err
	}
	try := "purge_control set_extractable --help"
	if len(pos) != 2 {
		return &cli.UsageError{Msg: fmt.Sprintf("set_extractable takes an entry id and true, false or a number, got %d arguments", len(pos)), Try: try}
	}
	if _, err := restore.ParseExtractableValue(pos[1]); err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: try}
	}
	r, ref, err := c.m.setup(ctx, &com)
	if err != nil {
		return err
	}
	res, err := r.SetExtractable(ctx, ref, pos[0], pos[1])
	if err != nil {
		return err
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, cli.NewSetResult(res), nil)
	}
	printSet(c.m.Stdout, res)
	return nil
}

func meaning(v string) string {
	switch v {
	case "true":
		return "it may be extracted even if short (not within the last keep_recent messages)"
	case "false":
		return "it will never be extracted"
	case "1":
		return "it stays for 1 message from the end"
	}
	return "it stays for " + v + " messages from the end"
}

func printSet(w io.Writer, res *restore.SetResult) {
	prev := res.Previous
	if prev == "" {
		prev = "unset"
	}
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "Entry %s: _extractable is already %s: %s.\n", res.EntryID, res.Value, meaning(res.Value))
	case res.Queued:
		fmt.Fprintf(w, "Entry %s: _extractable %s (was %s): %s. Queued: will be written when the session is idle.\n", res.EntryID, res.Value, prev, meaning(res.Value))
	default:
		fmt.Fprintf(w, "Entry %s: _extractable set to %s (was %s): %s. Written now.\n", res.EntryID, res.Value, prev, meaning(res.Value))
	}
}
