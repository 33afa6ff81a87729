package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

const pruneUsage = `Usage: brainsurgeon prune [--session S]... [--dry-run] [--force] [--json] [--agents-dir DIR]

Runs one extraction pass now: in every session (or the ones named with
--session), large old values (by default thinking blocks and tool results of
500+ bytes, older than 24 h, outside the last 3 messages) move to
<sessions>/extracted/<sessionId>/ and leave [[extracted-<entryId>]] placeholders.
The settings come from .brainsurgeon/config.json beside the agents dir.

Sessions in use are left alone (a run in flight, a live lock, or modified within
idle_seconds) and reported as busy, with the time they will be idle. Pending
restore write-backs are applied first.

Smart pruning is off until enabled in the config ("enabled": true); --force runs
this one pass anyway and skips the quiet period (idle_seconds) of JSONL
transcripts (OpenClaw's SQLite store keeps its quiet period); a session with a run in flight or a live lock is still left alone.

--dry-run applies the same gates as the real run (enabled, busy sessions, what
the store accepts to edit) and writes nothing: its counts are what the same
command without --dry-run writes now. A run that writes nothing says why.
Exit status: 0 when every session was processed or left alone as busy (the
output then says nothing was written and why), 1 when a session failed.
When the side store cannot be reached (a remote store down or answering
server errors), the pass stops at the session that failed: the sessions
after it are reported "not attempted" (reason: side store unavailable), the
ones already written stay written, and the exit status is 1 (--json: kind
"unavailable"); run prune again later.

Examples:
  brainsurgeon prune --dry-run
  brainsurgeon prune --session agent:main:main --json
  brainsurgeon prune --agents-dir /srv/openclaw/agents --force

Flags:
`

type pruneCommand struct{ m *Main }

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (f *multiFlag) String() string     { return strings.Join(*f, ",") }
func (f *multiFlag) Set(v string) error { *f = append(*f, v); return nil }

func (c *pruneCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon prune", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	var sessions multiFlag
	fs.Var(&sessions, "session", "a session to prune (repeatable; default: all sessions)")
	dry := fs.Bool("dry-run", false, "decide and report, write nothing")
	force := fs.Bool("force", false, "run even when smart pruning is disabled in the config, and skip the quiet period (idle_seconds)")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, pruneUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("prune takes no arguments, got %q (name sessions with --session)", pos), Try: "brainsurgeon prune --help"}
	}
	cfg, info, err := c.m.loadConfig(ctx, *agentsDir, false)
	if err != nil {
		return err
	}
	var set *backend.Set
	var refs []bs.SessionRef
	if len(sessions) > 0 || cfg.Enabled || *force {
		// Named sessions are resolved first: a session that does not
		// exist is the first thing to say, before any gate.
		if set, err = c.m.open(ctx, *agentsDir, cfg); err != nil {
			return err
		}
		for _, s := range sessions {
			ref, err := resolveRef(ctx, set, s)
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
	}
	if !cfg.Enabled && !*force {
		// A dry run reports what the real run would do, and that refuses.
		if *dry {
			return fmt.Errorf("%w (a dry run applies the same gates as the real run; prune --dry-run --force shows what a forced pass would write)", cli.DisabledError(info))
		}
		return cli.DisabledError(info)
	}
	limitMemory(ctx, set.Store, refs)
	p := c.m.pass(set, cfg)
	p.Force, p.Now, p.DryRun = *force, *force, *dry
	prog := newProgress(c.m.Stderr)
	p.Progress = prog.show
	rep, err := p.Run(ctx, refs)
	prog.done()
	if err != nil && (rep == nil || !errors.Is(err, bs.ErrUnavailable)) {
		return err
	}
	if rep.WriteBacks > 0 {
		fmt.Fprintf(c.m.Stderr, "applied %d pending restore write-backs\n", rep.WriteBacks)
	}
	if rep.PendingWriteBacks > 0 {
		fmt.Fprintf(c.m.Stderr, "%s: the real run applies %s\n", plural.Count(rep.PendingWriteBacks, "restore write-back is queued", "restore write-backs are queued"),
			plural.Noun(rep.PendingWriteBacks, "it first (when its session is idle)", "them first (those of idle sessions)"))
	}
	if rep.WriteBackError != "" {
		fmt.Fprintf(c.m.Stderr, "warning: pending restore write-backs: %s\n", rep.WriteBackError)
	}
	for _, u := range rep.Unlisted {
		fmt.Fprintf(c.m.Stderr, "warning: %s\n", u)
	}
	if err == nil && rep.Failed > 0 {
		err = fmt.Errorf("%d of %s failed", rep.Failed, plural.Count(len(rep.Sessions), "session", "sessions"))
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, rep, err)
	}
	printPrune(c.m.Stdout, rep, *dry)
	printPruneMalformed(c.m.Stdout, rep)
	return err
}

func printPrune(w io.Writer, rep *prune.Report, dry bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tENTRIES\tVALUES\tBYTES BEFORE\tBYTES SAVED\tSIDE BYTES\tNOTE")
	var entries, values int
	var saved, before int64
	for _, r := range rep.Sessions {
		res := r.Result
		if res == nil {
			res = &extract.Result{}
		}
		note := r.Note
		if r.IdleAt != nil {
			note = strings.TrimSuffix(note, ": "+bs.ErrBusy.Error()) + "; idle at " + r.IdleAt.Format(time.RFC3339)
		}
		if r.WriteBacks > 0 {
			note = strings.TrimPrefix(fmt.Sprintf("%s; %s applied", note, plural.Count(r.WriteBacks, "write-back", "write-backs")), "; ")
		}
		// Only what was (or, in a dry run, would be) written counts.
		n, v, sv := 0, 0, int64(0)
		if r.Status == prune.StatusExtracted || r.Status == prune.StatusWouldExtract {
			n, v, sv = res.Entries, res.Values, res.BytesSaved
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Session, strings.ReplaceAll(r.Status, "_", " "), n, v, res.BytesBefore, sv, res.SideBytes, note)
		before += res.BytesBefore
		entries += n
		values += v
		saved += sv
	}
	tw.Flush()
	verb := "saved"
	if dry {
		verb = "would save"
	}
	fmt.Fprintf(w, "\n%s, %s, %s: %s %d of %d bytes\n", plural.Count(len(rep.Sessions), "session", "sessions"), plural.Count(entries, "entry", "entries"), plural.Count(values, "value", "values"), verb, saved, before)
	if rep.Reason != "" {
		fmt.Fprintln(w, rep.Reason)
	}
}

// progress shows "[i/n] name, MB, ETA" on a terminal and nothing in a
// pipe.
type progress struct {
	w  io.Writer
	on bool
}

func newProgress(w io.Writer) *progress {
	on := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progress{w: w, on: on}
}

// progressWidth bounds a progress line, so that it never wraps on an
// 80-column terminal ("\r\033[K" clears only the last line).
const progressWidth = 79

// show prints one progress line: "12/80 sessions done, 35.2 MB, ETA 9s:
// main/1d9efd24-…" (the session being worked on).
func (p *progress) show(pr prune.Progress) {
	if !p.on || pr.Total < 2 || pr.Done >= pr.Total {
		return
	}
	eta := ""
	if pr.Done > 0 {
		left := time.Duration(float64(pr.Elapsed) / float64(pr.Done) * float64(pr.Total-pr.Done))
		eta = ", ETA " + left.Round(time.Second).String()
	}
	p.line(fmt.Sprintf("%d/%d sessions done, %.2f MB%s: %s", pr.Done, pr.Total, float64(pr.Bytes)/1e6, eta, pr.Session))
}

// step shows "i/n sessions done: name" (for commands that loop themselves).
func (p *progress) step(i, n int, name string) {
	if p.on && n > 1 {
		p.line(fmt.Sprintf("%d/%d sessions done: %s", i, n, name))
	}
}

// line replaces the progress line with s, cut to progressWidth runes.
func (p *progress) line(s string) {
	if r := []rune(s); len(r) > progressWidth {
		s = string(r[:progressWidth-1]) + "…"
	}
	fmt.Fprint(p.w, "\r\033[K"+s)
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
