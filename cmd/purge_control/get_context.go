package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
)

const getContextUsage = `Usage: purge_control get_context --agent A --session S [--json] [--agents-dir DIR]

Shows the session's size and what has been extracted from it: one line per
entry with extracted values,
  entry <id>: <keys> (<bytes>) extracted <time>[, restored <time>]
The keys can be passed to "purge_control restore <id> --keys …". Reads only.

Example:
  purge_control get_context --agent crix-claub --session direct:123

Flags:
`

type getContextCommand struct{ m *Main }

func (c *getContextCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("purge_control get_context", flag.ContinueOnError)
	var com common
	com.register(fs)
	pos, err := c.m.parse(fs, &com, getContextUsage, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("get_context takes no arguments, got %q", pos), Try: "purge_control get_context --help"}
	}
	t, ref, err := c.m.setup(ctx, &com)
	if err != nil {
		return err
	}
	cx, err := t.GetContext(ctx, ref)
	if err != nil {
		return agenttools.UnavailableError(err, "")
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, cx, nil)
	}
	agenttext.Context(c.m.Stdout, agenttools.ContextName(ref, cx), cx)
	return nil
}
