package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

const restoreUsage = `Usage: brainsurgeon restore <session> <entry> [--keys a,b] [--json] [--agents-dir DIR]
       brainsurgeon restore <session> tc-<toolCallId> [--json] [--agents-dir DIR]
       brainsurgeon restore <session> --all [--pristine] [--json] [--agents-dir DIR]

Brings extracted values back. With an entry id (the <id> of a placeholder
[[extracted-<id>]]), prints the entry's values at once: one key prints its
text as it was (byte for byte), several print each under a
"== <key> (<n> bytes of text) ==" header.
The values are written back into the transcript now when the session is
idle, otherwise the write-back is queued and applied once it is (by the daemon
or the next prune). A status line goes to stderr. Restoring an entry that is
already restored prints its current content, says "already restored" and exits
0; nothing is written.

A key tc-<toolCallId> (a placeholder [[extracted-tc-<toolCallId>]] the
OpenClaw plugin left in place of a tool result it stored) prints the
result's text and writes the stored content back in place of the
placeholder, now or queued as above.

--keys selects values: a full JSON Pointer (/message/content/2/text), a
member on the path (content, details, arguments), the last segment (text,
thinking), a block path (content/2) or a block index (2).

--all restores every extracted value of the session in one rewrite (the
session must be idle). --pristine also undoes redactions and BrainSurgeon's
own members (_restored, _redacted, _extractable it set), giving back the
original file byte for byte. Side files are kept. A value the store does
not accept back (an OpenClaw SQLite store refuses edits its search index
would notice, such as a user message's text extracted before the session
was imported) stays extracted and is listed under "refused" by entry id,
with the reason and how to get it; every other value is restored, and the
exit status is 1. "restore <session> <entry>" prints such a value without
writing it back.

Examples:
  brainsurgeon restore agent:main:main 8797d4c7
  brainsurgeon restore main/1d9efd24-3d45-430b-a703-e713c1679ce1 8797d4c7 --keys text --json
  brainsurgeon restore direct:123 --all --pristine

Flags:
`

type restoreCommand struct{ m *Main }

func (c *restoreCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon restore", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	keys := fs.String("keys", "", "comma-separated keys of the values to restore (default: all)")
	all := fs.Bool("all", false, "restore every extracted value of the session")
	pristine := fs.Bool("pristine", false, "with --all: also undo redactions, bookkeeping members and repairs (original file byte for byte)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, restoreUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon restore --help"
	switch {
	case *all && len(pos) != 1:
		return &cli.UsageError{Msg: fmt.Sprintf("restore --all takes one session, got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	case *all && *keys != "":
		return &cli.UsageError{Msg: "--keys selects values of one entry; it does not go with --all", Try: try}
	case !*all && *pristine:
		return &cli.UsageError{Msg: "--pristine goes with --all", Try: try}
	case !*all && len(pos) != 2:
		return &cli.UsageError{Msg: fmt.Sprintf("restore takes a session and an entry id (or a session and --all), got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	r, set, err := c.m.restorer(ctx, *agentsDir)
	if err != nil {
		return err
	}
	ref, err := resolveRef(ctx, set, pos[0])
	if err != nil {
		return err
	}
	if *all {
		res, err := r.RestoreAll(ctx, ref, *pristine)
		if err != nil {
			if errors.Is(err, bs.ErrBusy) || errors.Is(err, bs.ErrChanged) {
				return fmt.Errorf("%w; --all is not queued: try again when the session is idle", err)
			}
			return err
		}
		err = restoreAllError(res)
		if *asJSON {
			return cli.WriteJSON(c.m.Stdout, res, err)
		}
		printRestoreAll(c.m.Stdout, res)
		return err
	}
	if extract.IsSourceKey(pos[1]) {
		if *keys != "" {
			return &cli.UsageError{Msg: fmt.Sprintf("--keys selects values of an entry; a tool result stored at the source (%s) comes back whole", pos[1]), Try: try}
		}
		return c.source(ctx, r, ref, pos[1], *asJSON)
	}
	res, err := r.Restore(ctx, ref, pos[1], splitKeys(*keys), restore.RestoreOptions{})
	if res == nil {
		return err
	}
	if err == nil {
		// The seeds' text stands in for a missing value, but the exit
		// status says that not everything asked for came back.
		err = cli.Unreturned(res)
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, res, err)
	}
	printContent(c.m.Stdout, res)
	fmt.Fprintln(c.m.Stderr, restoreStatus(res))
	return err
}

// restoreAllError is the error (exit 1) of a restore --all that left
// placeholders or could not undo all it was asked to, nil when nothing is
// left: what is lost, what the store refused (values, redactions and
// journaled changes, each counted apart), the lines a repair inserted that
// were kept, and the tool results stored at the source.
func restoreAllError(res *restore.AllResult) error {
	r := res.Remaining
	src := r.SourceValues
	lost := r.Placeholders - src - r.Refused
	redactions := len(res.Refused) - r.Refused - r.RefusedUndos
	kept := len(res.Lost) - r.Placeholders // inserted lines kept, listed under lost
	var parts []string
	if lost > 0 {
		parts = append(parts, fmt.Sprintf("%s could not be restored", plural.Count(lost, "placeholder", "placeholders")))
	}
	if r.Refused > 0 {
		parts = append(parts, fmt.Sprintf("%s the store does not accept back %s extracted (listed under refused; brainsurgeon restore <session> <entry> prints each without writing it back)", plural.Count(r.Refused, "value", "values"), plural.Noun(r.Refused, "stays", "stay")))
	}
	if redactions > 0 {
		parts = append(parts, fmt.Sprintf("%s the store does not accept back %s (listed under refused)", plural.Count(redactions, "redacted value", "redacted values"), plural.Noun(redactions, "keeps its stub", "keep their stub")))
	}
	if r.RefusedUndos > 0 {
		parts = append(parts, fmt.Sprintf("%s of a repair (doctor --fix) the store does not accept undone %s (listed under refused; nothing is lost)", plural.Count(r.RefusedUndos, "change", "changes"), plural.Noun(r.RefusedUndos, "stays", "stay")))
	}
	if kept > 0 {
		parts = append(parts, fmt.Sprintf("%s inserted by a repair kept (listed under lost)", plural.Count(kept, "line", "lines")))
	}
	if src > 0 {
		parts = append(parts, fmt.Sprintf("%s stored at the source %s: the session is not pristine (purge_control restore tc-<id> returns each)", plural.Count(src, "tool result", "tool results"), plural.Noun(src, "keeps its placeholder", "keep their placeholder")))
	}
	if len(parts) == 0 {
		return nil
	}
	return errors.New(strings.Join(parts, "; "))
}

// splitKeys splits a comma-separated list, dropping empty items.
func splitKeys(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// printContent prints the values: a single one exactly as it is, several
// each under a "== <key> (<n> bytes) ==" header and followed by a newline.
func printContent(w io.Writer, res *restore.Result) {
	keys := res.Keys()
	if len(keys) == 1 {
		// Byte-exact in a pipe; a final newline on a terminal only.
		text := res.Content[keys[0]]
		io.WriteString(w, text)
		if !strings.HasSuffix(text, "\n") && isTerminal(w) {
			io.WriteString(w, "\n")
		}
		return
	}
	for _, k := range keys {
		text := res.Content[k]
		fmt.Fprintf(w, "== %s (%d bytes) ==\n%s\n", k, len(text), text)
	}
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// restoreStatus is the one-line summary of a restore for stderr.
func restoreStatus(res *restore.Result) string {
	var parts []string
	if res.Restored {
		n := 0
		for _, k := range res.KeysRestored {
			n += res.SizesBytes[k]
		}
		s := fmt.Sprintf("restored %d values of entry %s (%d bytes)", len(res.KeysRestored), res.EntryID, n)
		if len(res.KeysRestored) == 1 {
			s = fmt.Sprintf("restored %s of entry %s (%d bytes)", res.KeysRestored[0], res.EntryID, n)
		}
		parts = append(parts, s)
		switch {
		case res.AlreadyRestored:
			parts = parts[:len(parts)-1]
			parts = append(parts, res.Note)
		case res.Applied && res.Redacted:
			parts = append(parts, "written back now, restore call redacted")
		case res.Applied:
			parts = append(parts, "written back now")
		case res.Queued:
			parts = append(parts, "queued: written back when the session is idle")
		default:
			parts = append(parts, "not written back")
		}
	} else {
		parts = append(parts, "entry "+res.EntryID+": nothing restored")
	}
	if res.Warning != "" {
		parts = append(parts, "warning: "+res.Warning)
	}
	if res.Suggestion != "" {
		parts = append(parts, fmt.Sprintf("previously restored at %s: %s", res.PreviousRestoredAt, res.Suggestion))
	}
	return strings.Join(parts, "; ")
}

func printRestoreAll(w io.Writer, res *restore.AllResult) {
	fmt.Fprintf(w, "Session     %s\n", res.Session)
	fmt.Fprintf(w, "Restored    %s (%s) in %s\n", plural.Count(res.Values, "value", "values"), plural.Count(res.Bytes, "byte", "bytes"), plural.Count(res.Entries, "entry", "entries"))
	if res.PristineMode {
		fmt.Fprintf(w, "Undone      %s, %s, %s, %s\n", plural.Count(res.Redactions, "redaction", "redactions"), plural.Count(res.Bookkeeping, "bookkeeping member", "bookkeeping members"), plural.Count(res.ParentsUndone, "re-parented entry", "re-parented entries"), plural.Count(res.LinesRemoved, "inserted line", "inserted lines"))
	}
	if res.Applied {
		fmt.Fprintln(w, "Written     yes")
	} else {
		fmt.Fprintln(w, "Written     no (nothing to change)")
	}
	if res.Pristine {
		fmt.Fprintln(w, "Pristine    yes: nothing of BrainSurgeon's is left in the transcript")
	} else {
		var why []string
		r := res.Remaining
		if n := r.Placeholders - r.SourceValues - r.Refused; n > 0 {
			why = append(why, fmt.Sprintf("%s could not be restored", plural.Count(n, "placeholder", "placeholders")))
		}
		if r.Refused > 0 {
			why = append(why, fmt.Sprintf("%s the store does not accept back %s extracted", plural.Count(r.Refused, "value", "values"), plural.Noun(r.Refused, "stays", "stay")))
		}
		if r.SourceValues > 0 {
			why = append(why, fmt.Sprintf("%s stored at the source %s (the host wrote it; purge_control restore tc-<id> returns each)", plural.Count(r.SourceValues, "tool result", "tool results"), plural.Noun(r.SourceValues, "keeps its placeholder", "keep their placeholder")))
		}
		if r.Bookkeeping > 0 {
			why = append(why, fmt.Sprintf("%s (_restored, _extractable, _redacted) %s", plural.Count(r.Bookkeeping, "bookkeeping member", "bookkeeping members"), plural.Noun(r.Bookkeeping, "remains", "remain")))
		}
		if r.Reparented > 0 {
			why = append(why, fmt.Sprintf("%s re-parented by a repair (doctor --fix) %s", plural.Count(r.Reparented, "entry", "entries"), plural.Noun(r.Reparented, "keeps its new parentId", "keep their new parentId")))
		}
		if r.Redactions > 0 {
			why = append(why, fmt.Sprintf("%s %s", plural.Count(r.Redactions, "redaction stub", "redaction stubs"), plural.Noun(r.Redactions, "remains", "remain")))
		}
		if r.Inserted > 0 {
			why = append(why, fmt.Sprintf("%s inserted by a repair (doctor --fix) %s", plural.Count(r.Inserted, "line", "lines"), plural.Noun(r.Inserted, "remains", "remain")))
		}
		if r.RefusedUndos > 0 {
			why = append(why, fmt.Sprintf("of these, the store does not accept %s undone (listed under refused)", plural.Count(r.RefusedUndos, "change", "changes")))
		}
		if r.UnreadableRecords > 0 {
			why = append(why, fmt.Sprintf("%s cannot be read", plural.Count(r.UnreadableRecords, "side record", "side records")))
		}
		hint := ""
		if !res.PristineMode && r.Placeholders == 0 && r.UnreadableRecords == 0 {
			hint = " (--pristine undoes them)"
		}
		fmt.Fprintf(w, "Pristine    no: %s%s\n", strings.Join(why, "; "), hint)
	}
	for _, l := range res.Lost {
		if l.Kind != restore.ProblemRefused {
			fmt.Fprintf(w, "  lost      %s\n", l)
		}
	}
	for _, f := range res.Refused {
		key := f.Key
		if key == "" {
			key = "(the whole line)"
		}
		fmt.Fprintf(w, "  refused   %s %s (line %d): %s\n", f.EntryID, key, f.Line, f.Reason)
		fmt.Fprintf(w, "            get it: %s\n", f.How)
	}
	for _, x := range res.Warnings {
		fmt.Fprintf(w, "  warning   %s\n", x)
	}
}
