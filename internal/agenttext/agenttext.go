// Package agenttext is the one home of the text an agent reads from
// BrainSurgeon's tools: purge_control's get_context, restore and
// set_extractable, and the recall tools (grep, describe, expand), and of
// the paging of long values. It is the wording of package agenttools,
// which runs the tools: the purge_control command, the brainsurgeon CLI
// and the REST API's plugin endpoints all print through it, so the wording
// is the same everywhere. It knows no storage: it formats the results of
// packages restore and recall.
package agenttext

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// ShortKey is a value's key as an agent would write it: the JSON Pointer
// without its leading "/" and, for the values of a message, without
// "message/".
func ShortKey(path string) string {
	k := strings.TrimPrefix(path, "/")
	if s, ok := strings.CutPrefix(k, "message/"); ok && s != "" {
		return s
	}
	return k
}

// Stamp formats a time as get_context prints it: "2026-03-04 15:35Z".
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

// Num writes n with thousands separators: 145,230.
func Num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Context writes get_context's text for a session named name.
func Context(w io.Writer, name string, cx *restore.Context) {
	fmt.Fprintf(w, "Session %s\n", name)
	fmt.Fprintf(w, "%s, %s in the model context, %s\n", plural.Count(cx.Entries, "entry", "entries"), plural.Count(cx.ContextMessages, "message", "messages"), plural.Count(cx.Bytes, "byte", "bytes"))
	fmt.Fprintf(w, "Extracted: %s placeholders (%s out of context); %d more extractable now",
		plural.Count(cx.EntriesWithPlaceholders, "entry holds", "entries hold"), plural.Count(cx.ExtractedBytes, "byte", "bytes"), cx.ExtractableNow)
	if cx.Pending > 0 {
		fmt.Fprintf(w, "; %s waiting for the session to be idle", plural.Count(cx.Pending, "write-back", "write-backs"))
	}
	if cx.LostValues > 0 {
		fmt.Fprintf(w, "; %s lost", plural.Count(cx.LostValues, "value", "values"))
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
			keys[i] = ShortKey(k)
			n += x.SizesBytes[k]
		}
		line := fmt.Sprintf("entry %s: %s (%d bytes)", x.EntryID, strings.Join(keys, ", "), n)
		if len(x.Keys) == 0 {
			line = fmt.Sprintf("entry %s: no stored values", x.EntryID)
		}
		if !x.ExtractedAt.IsZero() {
			line += " extracted " + Stamp(x.ExtractedAt)
		}
		if x.RestoredAt != "" {
			if t, err := time.Parse(time.RFC3339Nano, x.RestoredAt); err == nil {
				line += ", restored " + Stamp(t)
			} else {
				line += ", restored " + x.RestoredAt
			}
		}
		var notes []string
		if x.Placeholders == 0 && len(x.Lost) == 0 {
			notes = append(notes, "in context now")
		}
		if x.ProtectedUntil != nil {
			notes = append(notes, "protected until "+Stamp(*x.ProtectedUntil))
		}
		if x.Extractable != "" {
			notes = append(notes, "_extractable "+x.Extractable)
		}
		for _, l := range x.Lost {
			notes = append(notes, "lost "+ShortKey(l))
		}
		if len(notes) > 0 {
			line += " [" + strings.Join(notes, "; ") + "]"
		}
		fmt.Fprintln(w, line)
	}
}

// Restore writes purge_control restore's text, as the command prints it:
// the values, then a blank line and the notes (RestoreNotes). The plugin's
// tool answers with the values alone and keeps the notes apart.
func Restore(w io.Writer, res *restore.Result) {
	keys := res.Keys()
	if len(keys) == 1 {
		text := res.Content[keys[0]]
		io.WriteString(w, text)
		if !strings.HasSuffix(text, "\n") {
			io.WriteString(w, "\n")
		}
	} else {
		for _, k := range keys {
			text := res.Content[k]
			fmt.Fprintf(w, "== %s (%d bytes) ==\n%s\n", ShortKey(k), len(text), text)
		}
	}
	fmt.Fprintln(w)
	RestoreNotes(w, res)
}

// RestoreNotes writes what a restore did, one line each: the keys
// restored and whether they were written back (now, queued, already
// restored, not at all), the warning, when the entry was restored before
// and the suggestion that goes with it. It never repeats a value.
func RestoreNotes(w io.Writer, res *restore.Result) {
	if res.Restored {
		short := make([]string, len(res.KeysRestored))
		n := 0
		for i, k := range res.KeysRestored {
			short[i] = ShortKey(k)
			n += res.SizesBytes[k]
		}
		status := "Written back now."
		if res.AlreadyRestored {
			status = "Already restored: this is the entry's current content; nothing was written."
		} else if res.Queued {
			status = "Queued: will be written back when the session is idle."
		} else if !res.Applied {
			status = "Not written back."
		}
		fmt.Fprintf(w, "Restored keys: %s (%d bytes). %s\n", strings.Join(short, ", "), n, status)
	} else {
		fmt.Fprintf(w, "Nothing restored from entry %s.\n", res.EntryID)
	}
	if res.Warning != "" {
		fmt.Fprintf(w, "Warning: %s\n", res.Warning)
	}
	if res.AlreadyRestored && res.PreviousRestoredAt != "" {
		fmt.Fprintf(w, "Restored at %s.\n", res.PreviousRestoredAt)
	}
	if res.Suggestion != "" {
		fmt.Fprintf(w, "Previously restored at %s. %s\n", res.PreviousRestoredAt, res.Suggestion)
	}
}

// ReadOnlyRestoreNote is the line a restore's note ends with when the
// server is in read-only mode and values came back: nothing was written.
const ReadOnlyRestoreNote = "The server is in read-only mode: nothing was written back.\n"

// LaterPageNote says what a restore of a later page of an entry's value
// did: nothing, the first page's restore wrote the value back or queued it.
func LaterPageNote(entryID string) string {
	return "A later page of entry " + entryID + ": the restore of its first page wrote the value back (or queued it); this call wrote nothing."
}

// RestoreWarning is the text block the plugin's restore adds after the
// values when not everything asked for came back as it should (Result's
// Warning): the model must know.
func RestoreWarning(res *restore.Result) string {
	return "BrainSurgeon restore of " + res.EntryID + ": warning: " + res.Warning
}

// Source writes purge_control restore's text for a tool result stored
// at the source: its text blocks as they are, then what was returned.
func Source(w io.Writer, sv *restore.SourceValue) {
	text := strings.Join(sv.Texts, "")
	io.WriteString(w, text)
	if !strings.HasSuffix(text, "\n") {
		io.WriteString(w, "\n")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Restored %s (%d bytes of content", sv.Key, sv.Bytes)
	if sv.OtherBlocks > 0 {
		fmt.Fprintf(w, ", %d non-text blocks not shown", sv.OtherBlocks)
	}
	fmt.Fprintln(w, "): the tool result as stored; the transcript keeps its placeholder.")
}

// ExtractableMeaning says what an "_extractable" value means.
func ExtractableMeaning(v string) string {
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

// Set writes purge_control set_extractable's text.
func Set(w io.Writer, res *restore.SetResult) {
	prev := res.Previous
	if prev == "" {
		prev = "unset"
	}
	switch {
	case !res.Changed:
		fmt.Fprintf(w, "Entry %s: _extractable is already %s: %s.\n", res.EntryID, res.Value, ExtractableMeaning(res.Value))
	case res.Queued:
		fmt.Fprintf(w, "Entry %s: _extractable %s (was %s): %s. Queued: will be written when the session is idle.\n", res.EntryID, res.Value, prev, ExtractableMeaning(res.Value))
	default:
		fmt.Fprintf(w, "Entry %s: _extractable set to %s (was %s): %s. Written now.\n", res.EntryID, res.Value, prev, ExtractableMeaning(res.Value))
	}
}

// GrepHit is the line context grep prints for one hit (without its line
// break).
func GrepHit(h recall.Hit) string {
	id := h.EntryID
	if id == "" {
		id = "-"
	}
	where := string(h.Where)
	if h.Where == recall.Extracted && h.EntryWhere != "" {
		where += "(" + string(h.EntryWhere) + ")"
	}
	line := fmt.Sprintf("line %-6d", h.Line)
	if h.Line <= 0 {
		line = fmt.Sprintf("%-11s", "no line") // an extracted value whose entry left the transcript
	}
	return fmt.Sprintf("%-20s %-10s %s %s", where, id, line, h.Snippet)
}

// GrepSummary writes the line context grep ends with: no match, the hits
// counted, or that it stopped at max hits.
func GrepSummary(w io.Writer, out recall.Report, pattern string, max int) {
	switch {
	case out.Count == 0:
		fmt.Fprintf(w, "no match for %q in %s\n", pattern, out.Session)
	case out.Truncated:
		fmt.Fprintf(w, "%s (stopped at --max %d; there are more)\n", plural.Count(out.Count, "hit", "hits"), max)
	case out.Count == 1:
		fmt.Fprintf(w, "%d hit\n", out.Count)
	default:
		fmt.Fprintf(w, "%s\n", plural.Count(out.Count, "hit", "hits"))
	}
}

func field(w io.Writer, label, format string, args ...any) {
	fmt.Fprintf(w, "%-21s%s\n", label+":", fmt.Sprintf(format, args...))
}

// Description writes context describe's text for one entry.
func Description(w io.Writer, d *recall.Description) {
	field(w, "Entry", "%s (line %d)", d.EntryID, d.Line)
	typ := d.Type
	if d.Role != "" {
		typ += ", role " + d.Role
	}
	field(w, "Type", "%s", typ)
	if d.ParentID != "" {
		field(w, "Parent", "%s", d.ParentID)
	}
	if !d.Time.IsZero() {
		field(w, "Time", "%s", d.Time.UTC().Format("2006-01-02 15:04:05Z"))
	}
	field(w, "Size", "%s bytes", Num(d.Bytes))
	field(w, "Where", "%s", d.Where)
	if d.Extracted {
		field(w, "Extracted", "yes: some values are in side files (brainsurgeon restore)")
	}
	cp := d.Compaction
	if cp == nil {
		return
	}
	kind := "by the host"
	if cp.Layer != "" {
		kind = fmt.Sprintf("%s, layer %s", cp.Trigger, cp.Layer)
	}
	field(w, "Compaction", "%s, level %d, %s tokens before", kind, cp.Level, Num(int(cp.TokensBefore)))
	if cp.Degraded {
		field(w, "Degraded", "yes (summary made without a model)")
	}
	if cp.Previous != "" {
		field(w, "Previous", "%s", cp.Previous)
	}
	if len(cp.Covers) > 0 {
		field(w, "Condenses", "%s", strings.Join(cp.Covers, ", "))
	}
	if cp.Span.Count > 0 {
		field(w, "Stands for", "%s (%s), %s (line %d) … %s (line %d)", plural.Count(cp.Span.Count, "entry", "entries"), plural.Count(cp.Span.Messages, "message", "messages"),
			cp.Span.FirstID, cp.Span.FirstLine, cp.Span.LastID, cp.Span.LastLine)
	} else {
		field(w, "Stands for", "no entries")
	}
	field(w, "First kept", "%s", cp.FirstKeptEntryID)
	fmt.Fprintf(w, "\nSummary:\n%s\n", cp.Summary)
}

// ExpansionHeader is the line context expand starts with (the CLI prints
// it on stderr): what the compaction stands for and whether the output
// was cut at max entries.
func ExpansionHeader(x *recall.Expansion, max int) string {
	cp := x.Compaction
	s := fmt.Sprintf("compaction %s (line %d) stands for %s", cp.EntryID, cp.Line, plural.Count(x.Total, "entry", "entries"))
	if len(x.Covers) > 0 {
		s += fmt.Sprintf(" and condenses %s (expand them in turn)", plural.Count(len(x.Covers), "earlier summary", "earlier summaries"))
	}
	if x.Truncated {
		s += fmt.Sprintf("; showing the first %d (--max %d)", len(x.Entries), max)
	}
	return s
}

// ExpansionBody writes context expand's output: the summaries the
// compaction condenses, then the raw lines of the entries it stands for.
// expandCmd returns the call that expands a covered summary ("brainsurgeon
// context expand <id>" for the CLI).
func ExpansionBody(w io.Writer, x *recall.Expansion, expandCmd func(id string) string) {
	for _, cv := range x.Covers {
		if cv.Found {
			fmt.Fprintf(w, "covers %s (line %d, level %d, %s chars): %s\n", cv.ID, cv.Line, cv.Level, Num(cv.SummaryChars), expandCmd(cv.ID))
		} else {
			fmt.Fprintf(w, "covers %s (no longer in the transcript)\n", cv.ID)
		}
	}
	for _, e := range x.Entries {
		w.Write(bytes.TrimRight(e.Raw, "\n"))
		fmt.Fprintln(w)
	}
}
