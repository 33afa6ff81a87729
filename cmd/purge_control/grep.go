package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

const grepUsage = `Usage: purge_control grep PATTERN --agent A --session S [--regex] [--ignore-case] [--max N] [--json] [--agents-dir DIR]

Searches everything your session still holds for PATTERN, including what is
no longer in your context: entries a compaction summarized away (compacted),
abandoned branches (off_path) and values BrainSurgeon extracted (extracted).
Plain text by default, a regular expression (RE2) with --regex. One line per
hit:
  <where> <entry> line <n>: <snippet>
Get an extracted value back with "purge_control restore <entry>". Stops after
--max hits (default 20). Reads only.

Examples:
  purge_control grep "connection refused" --agent crix-claub --session direct:123
  purge_control grep 'port [0-9]+' --regex --agent crix-claub --session direct:123

Flags:
`

type grepCommand struct{ m *Main }

func (c *grepCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("purge_control grep", flag.ContinueOnError)
	var com common
	com.register(fs)
	regex := fs.Bool("regex", false, "PATTERN is a regular expression (RE2)")
	icase := fs.Bool("ignore-case", false, "match letters of either case")
	max := fs.Int("max", 20, "stop after N hits")
	pos, err := c.m.parse(fs, &com, grepUsage, args)
	if err != nil {
		return err
	}
	try := "purge_control grep --help"
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("grep takes one non-empty PATTERN, got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	if *max < 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("--max must be 1 or more, got %d", *max), Try: try}
	}
	_, set, ref, err := c.m.open(ctx, &com)
	if err != nil {
		return err
	}
	t := &agenttools.Tools{Store: set.Store, Side: set.Side, Logger: c.m.logger()}
	o := recall.GrepOptions{Regexp: *regex, IgnoreCase: *icase, MaxHits: *max, Logger: c.m.logger()}
	out, err := t.Search(ctx, ref, pos[0], o, com.json, func(h recall.Hit) {
		if !com.json {
			printHit(c.m.Stdout, h)
		}
	})
	if errors.Is(err, bs.ErrInvalid) {
		return cli.Usagef("bad --regex pattern %q: %v", pos[0], err)
	}
	if err != nil {
		return err
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	switch {
	case out.Count == 0:
		fmt.Fprintf(c.m.Stdout, "no match for %q in %s\n", pos[0], out.Session)
	case out.Truncated:
		fmt.Fprintf(c.m.Stdout, "%s (stopped at --max %d; there are more)\n", plural.Count(out.Count, "hit", "hits"), *max)
	default:
		fmt.Fprintf(c.m.Stdout, "%d %s\n", out.Count, plural.Noun(out.Count, "hit", "hits"))
	}
	return nil
}

// printHit prints one hit on one line.
func printHit(w io.Writer, h recall.Hit) {
	id := h.EntryID
	if id == "" {
		id = "-"
	}
	fmt.Fprintf(w, "%s %s line %d: %s\n", h.Where, id, h.Line, h.Snippet)
}
