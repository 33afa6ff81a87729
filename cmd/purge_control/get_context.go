package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/restore"
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
	r, ref, err := c.m.setup(ctx, &com)
	if err != nil {
		return err
	}
	cx, err := r.GetContext(ctx, ref)
	if err != nil {
		return err
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, cx, nil)
	}
	name := cx.Session
	if ref.Key != "" {
		name += " (" + ref.Key + ")"
	}
	printContext(c.m.Stdout, name, cx)
	return nil
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

func printContext(w io.Writer, name string, cx *restore.Context) {
	fmt.Fprintf(w, "Session %s\n", name)
	fmt.Fprintf(w, "%d entries, %d messages in the model context, %d bytes\n", cx.Entries, cx.ContextMessages, cx.Bytes)
	fmt.Fprintf(w, "Extracted: %d entries hold placeholders (%d bytes out of context); %d more extractable now",
		cx.EntriesWithPlaceholders, cx.ExtractedBytes, cx.ExtractableNow)
	if cx.Pending > 0 {
		fmt.Fprintf(w, "; %d write-backs waiting for the session to be idle", cx.Pending)
	}
	if cx.LostValues > 0 {
		fmt.Fprintf(w, "; %d values lost", cx.LostValues)
	}
	fmt.Fprintln(w)
	if len(cx.Extracted) == 0 {
		fmt.Fprintln(w, "Nothing has been extracted.")
		return
	}
	for _, x := range cx.Extracted {
		keys := make([]string, len(x.Keys))
		var n int
		for i, k := range x.Keys {
			keys[i] = shortKey(k)
			n += x.SizesBytes[k]
		}
		line := fmt.Sprintf("entry %s: %s (%d bytes)", x.EntryID, strings.Join(keys, ", "), n)
		if len(x.Keys) == 0 {
			line = fmt.Sprintf("entry %s: no stored values", x.EntryID)
		}
		if !x.ExtractedAt.IsZero() {
			line += " extracted " + stamp(x.ExtractedAt)
		}
		if x.RestoredAt != "" {
			if t, err := time.Parse(time.RFC3339Nano, x.RestoredAt); err == nil {
				line += ", restored " + stamp(t)
			} else {
				line += ", restored " + x.RestoredAt
			}
		}
		var notes []string
		if x.Placeholders == 0 && len(x.Lost) == 0 {
			notes = append(notes, "in context now")
		}
		if x.ProtectedUntil != nil {
			notes = append(notes, "protected until "+stamp(*x.ProtectedUntil))
		}
		if x.Extractable != "" {
			notes = append(notes, "_extractable "+x.Extractable)
		}
		for _, l := range x.Lost {
			notes = append(notes, "lost "+shortKey(l))
		}
		if len(notes) > 0 {
			line += " [" + strings.Join(notes, "; ") + "]"
		}
		fmt.Fprintln(w, line)
	}
}
