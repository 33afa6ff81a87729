package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

const restoreUsage = `Usage: purge_control restore <entry> [--keys a,b] --agent A --session S [--tool-call-id ID] [--json] [--agents-dir DIR]
       purge_control restore tc-<toolCallId> [--offset N] [--max-chars M] --agent A --session S [--json] [--agents-dir DIR]

Prints the extracted values of an entry (the <entry> of [[extracted-<entry>]])
right away. A key "tc-<toolCallId>" (a tool result stored at the source by the
OpenClaw plugin) prints the stored result and writes nothing; --offset and
--max-chars print one page of its text instead (characters are code points;
the page starts with a line saying which characters follow and the call for
the next page). Entry values are written back into the session now if it is idle, or
queued and written back as soon as it is; either way you have the content now.
Asking again for an entry that is already restored prints its current content
and says "Already restored"; it is not an error.
Unless configured otherwise (keep_purge_control_calls), this restore call and
its output are later replaced by a short stub in the transcript, so the
content does not appear twice.

--keys restores some values only: "content/0/text", "thinking", "text", a
block index such as "2", or a full pointer; get_context lists each entry's
keys. --tool-call-id names the tool call running this command, so that it is
the one redacted.

Examples:
  purge_control restore msg-abc123 --agent crix-claub --session direct:123
  purge_control restore msg-abc123 --keys thinking --agent crix-claub --session direct:123

Flags:
`

type restoreCommand struct{ m *Main }

// sourcePage is restore --json's output for one page of a source value.
type sourcePage struct {
	Key    string `json:"key"`
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	*agenttext.Page
	Text string `json:"text"`
}

func (c *restoreCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("purge_control restore", flag.ContinueOnError)
	var com common
	com.register(fs)
	keys := fs.String("keys", "", "comma-separated keys of the values to restore (default: all)")
	callID := fs.String("tool-call-id", "", "id of the tool call running this command (the call to redact)")
	offset := fs.Int("offset", 0, "tc- keys only: print the page of the text that starts at this character")
	maxChars := fs.Int("max-chars", agenttext.DefaultPageChars, "tc- keys only: the page length in characters (1000 to 100000)")
	pos, err := c.m.parse(fs, &com, restoreUsage, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("restore takes one entry id, got %s", plural.Count(len(pos), "argument", "arguments")), Try: "purge_control restore --help"}
	}
	t, ref, err := c.m.setup(ctx, &com)
	if err != nil {
		return err
	}
	paged := false
	fs.Visit(func(f *flag.Flag) { paged = paged || f.Name == "offset" || f.Name == "max-chars" })
	if paged {
		if !extract.IsSourceKey(pos[0]) {
			return &cli.UsageError{Msg: fmt.Sprintf("--offset and --max-chars page a tool result stored at the source (a key %s<toolCallId>), found the entry %q", extract.SourceKeyPrefix, pos[0]), Try: "purge_control restore --help"}
		}
		if err := agenttext.CheckPage(*offset, *maxChars); err != nil {
			return &cli.UsageError{Msg: "--" + strings.Replace(err.Error(), "_", "-", 1), Try: "purge_control restore --help"}
		}
	}
	if extract.IsSourceKey(pos[0]) {
		sv, err := t.Source(ctx, ref, pos[0])
		if err != nil {
			return agenttools.UnavailableError(err, pos[0])
		}
		if paged {
			// Paged as the plugin's restore pages: on the stored JSON
			// literals (agenttools.PageOf).
			page, err := agenttools.PageOf(sv, *offset, *maxChars)
			if errors.Is(err, bs.ErrCorrupt) {
				return err
			}
			if err != nil {
				return &cli.UsageError{Msg: "--" + err.Error()}
			}
			if com.json {
				return cli.WriteJSON(c.m.Stdout, sourcePage{Key: sv.Key, Bytes: sv.Bytes, SHA256: sv.SHA256, Page: page, Text: page.Text}, nil)
			}
			agenttext.SourcePage(c.m.Stdout, sv.Key, page)
			return nil
		}
		if com.json {
			return cli.WriteJSON(c.m.Stdout, sv, nil)
		}
		agenttext.Source(c.m.Stdout, sv)
		return nil
	}
	var ks []string
	for _, k := range strings.Split(*keys, ",") {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, k)
		}
	}
	res, err := t.RestoreEntry(ctx, ref, pos[0], ks, *callID, 0)
	if res == nil {
		return agenttools.UnavailableError(err, pos[0])
	}
	if err == nil {
		// The seeds' text stands in for a missing value, but the exit
		// status says that not everything asked for came back.
		err = cli.Unreturned(res)
	}
	if com.json {
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	agenttext.Restore(c.m.Stdout, res)
	return err
}
