package main

import (
	"context"
	"flag"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
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
		return &cli.UsageError{Msg: fmt.Sprintf("set_extractable takes an entry id and true, false or a number, got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	if _, err := restore.ParseExtractableValue(pos[1]); err != nil {
		return &cli.UsageError{Msg: bs.ErrorMessage(err), Try: try}
	}
	t, ref, err := c.m.setup(ctx, &com)
	if err != nil {
		return err
	}
	res, err := t.SetExtractable(ctx, ref, pos[0], pos[1])
	if err != nil {
		return err
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, cli.NewSetResult(res), nil)
	}
	agenttext.Set(c.m.Stdout, res)
	return nil
}
