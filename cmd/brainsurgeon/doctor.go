package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

const doctorUsage = `Usage: brainsurgeon doctor [--session S] [--fix] [--collect] [--include-unique] [--yes] [--json] [--agents-dir DIR]

Diagnoses every session of every backend (or the one --session names), then
reports the host's leftover files per agent.

A session is "broken" when the messages the host sends from its active path
hold an unpaired tool block: a tool call with no result after it, a tool
result that answers an earlier call but comes after a user message or an
assistant message without tool calls (displaced), or a tool result whose call
is not in the assistant message before it (a duplicate, a call on another
branch, or the result of an assistant message that ended with stopReason
error/aborted, which the host drops). It
"warns" for placeholders without a value, queued write-backs and malformed
lines. Text output lists the sessions with problems, one line each with the
problems below it, and counts the sessions that are ok. A session the host is
using (a run in flight, its lock held, or written to within idle_seconds) is
listed as "busy: last turn may still be running; not judged": the tool calls of
its last turn may still be waiting for their results, so they are not judged
(its health counts only what was judged; --json has "busy": true). With --fix
the quiet period does not count (the user asks now): only a run in flight or a
held lock make a session busy, so the calls a crash left a minute ago are
judged and fixed.

The leftovers report counts, per agent and kind (deleted, reset, bak, tmp,
corrupt, checkpoint, trajectory, orphan_transcript, import_archive), the files,
their bytes and disk bytes, the oldest, and how many still hold unique history
(entries no live session has, or placeholders whose values are in the side
store).

--fix repairs the unpaired tool blocks on disk the way the host repairs them in
memory: the host's own synthetic error result (OpenClaw's text for OpenClaw
sessions, pi's for pi sessions) for every call without one, inserted after the
call's results; every displaced result moved back right after its call's
results (by re-parenting, as the host's repair moves it in memory); and every
orphan result taken off the active path by re-parenting the entry after it
(the result stays in the file). It never
deletes an entry, writes each session in one rewrite under the host's lock, and
"brainsurgeon restore <session> --all --pristine" takes it back. It does not
wait for idle_seconds, but a session the host is using (a run in flight, its
lock held) is skipped with a message. OpenClaw's SQLite store is never
repaired (the host owns its event sequence): the fix is refused with the reason.

--collect shows the leftovers it would move into the trash, file by file
(path, kind, bytes, whether it still holds unique history and why; the first
50 of each list), and the bytes that frees (a dry run); with --yes it moves
them, as one trash item that expires with the trash and that the trash
restores byte for byte. Files that still hold unique history are skipped unless
--include-unique. With --session, the leftovers report and --collect cover only
the leftovers of that session's agent (for a pi session, of its project dir),
not only those of the session itself.

When the OpenClaw plugin is installed (or OpenClaw's config names it), doctor
also runs the end-to-end checks of "brainsurgeon openclaw status" (the daemon
at the plugin's daemonUrl, its key, the context engine, the plugin's recent
calls) and lists them with their fixes (--json: "openclaw").

Exit status: 0 when the diagnosis ran (even when it found problems), 1 when a
session could not be read, when --fix skipped, refused or left a broken
session, when --collect failed, or when an end-to-end check of the OpenClaw
plugin failed, 2 on a usage error.

Examples:
  brainsurgeon doctor
  brainsurgeon doctor --session agent:main:main --json
  brainsurgeon doctor --fix
  brainsurgeon doctor --collect
  brainsurgeon doctor --collect --yes

Flags:
`

type doctorCommand struct{ m *Main }

// doctorOutput is the JSON output of doctor.
type doctorOutput struct {
	Sessions  []*doctor.Report      `json:"sessions"`
	Errors    []sessionError        `json:"errors,omitempty"`
	Leftovers doctor.LeftoverReport `json:"leftovers"`
	// Fixes is there with --fix ([] when nothing needed fixing).
	Fixes   []*fixOutput   `json:"fixes,omitzero"`
	Collect *collectOutput `json:"collect,omitempty"`
	// OpenClaw is the end-to-end check of the OpenClaw plugin and the
	// daemon (as brainsurgeon openclaw status), when the plugin is
	// installed or OpenClaw's config names it.
	OpenClaw *openclawStatus `json:"openclaw,omitempty"`
}

// sessionError is a session the doctor could not read or fix.
type sessionError struct {
	Session string `json:"session"`
	Error   string `json:"error"`
}

// fixOutput is one session's FixResult, named.
type fixOutput struct {
	Session string `json:"session"`
	*doctor.FixResult
}

type collectOutput struct {
	DryRun        bool   `json:"dry_run"`
	Files         int    `json:"files"`
	Bytes         int64  `json:"bytes"`
	SkippedUnique int    `json:"skipped_unique"`
	TrashID       string `json:"trash_id,omitempty"`
	// take and unique are the files moved (or to move) and those skipped
	// for their unique history, for the text output (--json has them in
	// leftovers.files).
	take, unique []bs.Leftover
}

func (c *doctorCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon doctor", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	name := fs.String("session", "", "diagnose (and fix) only this session")
	fix := fs.Bool("fix", false, "repair the unpaired tool blocks of every fixable session")
	collect := fs.Bool("collect", false, "show (with --yes: move into the trash) the host's leftovers")
	unique := fs.Bool("include-unique", false, "with --collect: also take leftovers that still hold unique history")
	yes := fs.Bool("yes", false, "with --collect: move the files (default: a dry run)")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, doctorUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("doctor takes no arguments (name a session with --session), got %q", pos), Try: "brainsurgeon doctor --help"}
	}
	if (*unique || *yes) && !*collect {
		return &cli.UsageError{Msg: "--include-unique and --yes go with --collect", Try: "brainsurgeon doctor --help"}
	}
	r, set, err := c.m.restorer(ctx, *agentsDir)
	if err != nil {
		return err
	}
	doc := &doctor.Doctor{Store: set.Store, Side: set.Side, Restorer: r, Logger: c.m.logger()}

	var refs []bs.SessionRef
	if *name != "" {
		ref, err := resolveRef(ctx, set, *name)
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	} else if refs, err = bs.ListSessions(ctx, set.Store, c.m.logger()); err != nil {
		return err
	}

	out := doctorOutput{Sessions: []*doctor.Report{}}
	var failures []string
	// With --fix the diagnosis judges as the fix does: the user asks now,
	// so the quiet period does not make a session busy (a crash a minute
	// ago leaves calls the fix must repair); a run in flight or a held
	// lock still does.
	diagCtx := ctx
	if *fix {
		diagCtx = bs.ExplicitWrite(ctx)
	}
	prog := newProgress(c.m.Stderr)
	for i, ref := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		prog.step(i, len(refs), ref.String())
		rep, err := doc.Diagnose(diagCtx, ref)
		if err != nil {
			out.Errors = append(out.Errors, sessionError{Session: ref.String(), Error: bs.ErrorMessage(err)})
			failures = append(failures, ref.String()+" could not be read")
			continue
		}
		out.Sessions = append(out.Sessions, rep)
	}
	prog.done()

	if *fix {
		out.Fixes = []*fixOutput{}
		for _, rep := range out.Sessions {
			if rep.Unpaired() == 0 {
				continue
			}
			ref := refOf(refs, rep)
			// The user asks for the fix now: no quiet period, but a run in
			// flight or a held lock still makes the session busy.
			res, err := doc.Fix(bs.ExplicitWrite(ctx), ref)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				out.Fixes = append(out.Fixes, &fixOutput{Session: rep.Session, FixResult: &doctor.FixResult{Before: rep, Refused: bs.ErrorMessage(err)}})
				what := "skipped"
				if !errors.Is(err, bs.ErrBusy) {
					what = "failed"
				}
				failures = append(failures, fmt.Sprintf("the fix of %s %s", rep.Session, what))
				continue
			}
			out.Fixes = append(out.Fixes, &fixOutput{Session: rep.Session, FixResult: res})
			switch {
			case res.Refused != "":
				failures = append(failures, fmt.Sprintf("the fix of %s was refused", rep.Session))
			case res.After != nil && res.After.Health == doctor.HealthBroken:
				failures = append(failures, fmt.Sprintf("%s is still broken after the fix", rep.Session))
			case res.After == nil && res.Before.Health == doctor.HealthBroken:
				failures = append(failures, fmt.Sprintf("%s is broken and nothing of it is fixable", rep.Session))
			}
		}
	}

	agent := ""
	if *name != "" && len(refs) == 1 {
		agent = leftoverAgent(refs[0])
	}
	var keep func(string) bool
	if *name != "" {
		keep = func(a string) bool { return a == agent }
	}
	if out.Leftovers, err = doctor.ScanLeftovers(ctx, set.Store, keep); err != nil {
		return err
	}
	if *collect {
		bin := trash.For(set.Installation)
		co, err := collectLeftovers(ctx, bin, &out.Leftovers, *unique, !*yes)
		out.Collect = co
		if err != nil {
			failures = append(failures, "collect: "+bs.ErrorMessage(err))
		}
	}

	if out.OpenClaw = checkOpenClaw(ctx, *agentsDir, agentsDirArg(fs, *agentsDir)); out.OpenClaw != nil && !out.OpenClaw.Healthy {
		failures = append(failures, "the OpenClaw plugin and the daemon are not working together (brainsurgeon openclaw status lists the checks and their fixes)")
	}

	if len(failures) > 0 {
		err = fmt.Errorf("doctor: %s", strings.Join(failures, "; "))
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, out, err)
	}
	printDoctor(c.m.Stdout, &out)
	return err
}

// refOf returns the ref a report was made for.
func refOf(refs []bs.SessionRef, rep *doctor.Report) bs.SessionRef {
	for _, r := range refs {
		b := r.Backend
		if b == "" {
			b = bs.BackendJSONL
		}
		if r.Agent == rep.Agent && r.ID == rep.SessionID && b == rep.Backend {
			return r
		}
	}
	return bs.SessionRef{Backend: rep.Backend, Agent: rep.Agent, ID: rep.SessionID}
}

// leftoverAgent returns the agent field of the leftovers beside ref's
// transcript: its agent, or for a pi session (which has none) its project
// dir, which the store gives as its Label.
func leftoverAgent(ref bs.SessionRef) string {
	if ref.Agent == "" && ref.Backend != bs.BackendSQLite {
		return ref.Label
	}
	return ref.Agent
}

// collectLeftovers moves the scanned leftovers into the trash (or, for a
// dry run, only counts what it would move).
func collectLeftovers(ctx context.Context, t *trash.Trash, rep *doctor.LeftoverReport, includeUnique, dryRun bool) (*collectOutput, error) {
	co := &collectOutput{DryRun: dryRun}
	if !rep.Available {
		return co, fmt.Errorf("no store of this agents dir knows its leftovers: %w", bs.ErrUnsupported)
	}
	var take []bs.Leftover
	for _, f := range rep.Files {
		if f.Unique && !includeUnique {
			co.SkippedUnique++
			co.unique = append(co.unique, f)
			continue
		}
		take = append(take, f)
		co.Files++
		co.Bytes += f.Bytes
	}
	co.take = take
	if dryRun || len(take) == 0 {
		return co, nil
	}
	item, err := t.Collect(ctx, take, trash.CollectOptions{IncludeUnique: includeUnique})
	if err != nil {
		co.Files, co.Bytes = 0, 0
		return co, err
	}
	if item != nil {
		co.TrashID = item.ID
	}
	return co, nil
}

func printDoctor(w io.Writer, out *doctorOutput) {
	ok, busy := 0, 0
	for _, r := range out.Sessions {
		if r.Busy {
			busy++
			fmt.Fprintf(w, "%-6s  %s [%s]: busy: last turn may still be running; not judged\n", "busy", r.Session, r.Backend)
			if len(r.Problems) == 0 {
				continue
			}
		}
		if len(r.Problems) == 0 {
			ok++
			continue
		}
		var counts []string
		add := func(n int, one, many string) {
			if n > 0 {
				counts = append(counts, plural.Count(n, one, many))
			}
		}
		add(r.MissingResults, "missing tool result", "missing tool results")
		add(r.OrphanResults, "orphan tool result", "orphan tool results")
		add(r.DisplacedResults, "displaced tool result", "displaced tool results")
		add(r.MissingValues, "placeholder without value", "placeholders without value")
		add(r.Pending, "pending write-back", "pending write-backs")
		add(r.Malformed, "malformed line", "malformed lines")
		note := ""
		switch {
		case r.FixRefused != "":
			note = " (not fixable here: " + r.FixRefused + ")"
		case r.Fixable:
			note = " (fixable: brainsurgeon doctor --fix)"
		}
		fmt.Fprintf(w, "%-6s  %s [%s]: %s%s\n", r.Health, r.Session, r.Backend, strings.Join(counts, ", "), note)
		for _, p := range r.Problems {
			fmt.Fprintf(w, "        line %d: %s: %s\n", p.Line, p.Kind, p.Detail)
		}
	}
	for _, e := range out.Errors {
		fmt.Fprintf(w, "error   %s: %s\n", e.Session, e.Error)
	}
	if busy > 0 {
		fmt.Fprintf(w, "ok: %d of %s (%d busy: the tool calls of their last turn were not judged; run doctor again when the host leaves them idle)\n", ok, plural.Count(len(out.Sessions), "session", "sessions"), busy)
	} else {
		fmt.Fprintf(w, "ok: %d of %s\n", ok, plural.Count(len(out.Sessions), "session", "sessions"))
	}

	if out.Fixes != nil && len(out.Fixes) == 0 {
		if busy > 0 {
			fmt.Fprintln(w, "fix: no session judged has unpaired tool blocks; the busy ones were not judged, nothing to fix")
		} else {
			fmt.Fprintln(w, "fix: no session has unpaired tool blocks; nothing to fix")
		}
	}
	for _, f := range out.Fixes {
		switch {
		case f.Applied:
			fmt.Fprintf(w, "fixed %s: inserted %s, moved %s back after their calls, took %s off the active path", f.Session, plural.Count(f.Inserted, "synthetic tool result", "synthetic tool results"), plural.Count(f.Moved, "displaced result", "displaced results"), plural.Count(f.Detached, "orphan result", "orphan results"))
			if f.After != nil {
				fmt.Fprintf(w, "; now %s", f.After.Health)
			}
			fmt.Fprintln(w)
		case f.Refused != "":
			fmt.Fprintf(w, "not fixed %s: %s\n", f.Session, f.Refused)
		default:
			fmt.Fprintf(w, "not fixed %s: nothing fixable\n", f.Session)
		}
	}

	fmt.Fprintln(w)
	lo := &out.Leftovers
	switch {
	case !lo.Available:
		fmt.Fprintln(w, "Leftovers: no store of this agents dir knows its host's leftovers.")
	case len(lo.Files) == 0:
		fmt.Fprintln(w, "Leftovers: none.")
	default:
		fmt.Fprintln(w, "Leftovers:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  AGENT\tKIND\tFILES\tBYTES\tDISK BYTES\tOLDEST\tUNIQUE\tUNIQUE BYTES\t")
		for _, a := range lo.Agents {
			for _, k := range a.Kinds {
				fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%s\t%d\t%d\t\n", a.Agent, k.Kind, k.Count, k.Bytes, k.DiskBytes,
					k.Oldest.UTC().Format("2006-01-02 15:04"), k.Unique, k.UniqueBytes)
			}
		}
		tw.Flush()
	}
	for _, s := range lo.Skipped {
		fmt.Fprintf(w, "  not read: %s\n", s)
	}
	if out.OpenClaw != nil {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "OpenClaw plugin (daemon %s):\n", out.OpenClaw.DaemonURL)
		printChecks(w, out.OpenClaw)
	}
	if co := out.Collect; co != nil {
		switch {
		case co.DryRun:
			fmt.Fprintf(w, "collect (dry run): would move %s (%s) into the trash; %d holding unique history skipped. Add --yes to move them.\n",
				plural.Count(co.Files, "file", "files"), plural.Count(co.Bytes, "byte", "bytes"), co.SkippedUnique)
			printLeftoverFiles(w, "would move", co.take)
			printLeftoverFiles(w, "would skip (unique history; --include-unique takes it)", co.unique)
		case co.TrashID != "":
			fmt.Fprintf(w, "collect: moved %s (%s) into trash item %s; %d holding unique history skipped.\n", plural.Count(co.Files, "file", "files"), plural.Count(co.Bytes, "byte", "bytes"), co.TrashID, co.SkippedUnique)
		default:
			fmt.Fprintf(w, "collect: nothing moved; %d holding unique history skipped.\n", co.SkippedUnique)
		}
	}
}

// maxListed caps the files the collect lists per group.
const maxListed = 50

// printLeftoverFiles lists files under a heading: path, kind, bytes, and
// whether it still holds unique history (and why), at most maxListed.
func printLeftoverFiles(w io.Writer, heading string, files []bs.Leftover) {
	if len(files) == 0 {
		return
	}
	fmt.Fprintf(w, "  %s:\n", heading)
	for i, f := range files {
		if i == maxListed {
			fmt.Fprintf(w, "    … and %d more\n", len(files)-maxListed)
			break
		}
		what := "copy"
		if f.Unique {
			what = "unique"
		}
		if f.Why != "" {
			what += ": " + f.Why
		}
		fmt.Fprintf(w, "    %s  %s  %d bytes  (%s)\n", f.Path, f.Kind, f.Bytes, what)
	}
}
