package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/session"
)

const pruneUsage = `Usage: brainsurgeon prune [--agents-dir DIR] [--session S]... [--dry-run] [--force] [--json]

Runs one extraction pass now: in every session (or the ones named with
--session), large old values (by default thinking blocks and tool results of
500+ bytes, older than 24 h, outside the last 3 messages) move to
<sessions>/extracted/<sessionId>/ and leave [[extracted-<entryId>]] placeholders.
The settings come from .brainsurgeon/config.json beside the agents dir.

Sessions in use are left alone (a run in flight, a live lock, or modified within
idle_seconds) and reported as busy. Pending restore write-backs are applied first.

Smart pruning is off until enabled in the config ("enabled": true); --force runs
this one pass anyway.

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

type pruneReport struct {
	Session string          `json:"session"`
	Status  string          `json:"status"` // extracted, unchanged, busy, error
	Error   string          `json:"error,omitempty"`
	Result  *extract.Result `json:"result,omitempty"`
}

func (c *pruneCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", session.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	var sessions multiFlag
	fs.Var(&sessions, "session", "a session to prune (repeatable; default: all sessions)")
	dry := fs.Bool("dry-run", false, "decide and report, write nothing")
	force := fs.Bool("force", false, "run even when smart pruning is disabled in the config")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, pruneUsage)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("prune takes no arguments, got %q (name sessions with --session)", pos), Try: "brainsurgeon prune --help"}
	}
	cfg, err := config.Load(ctx, *agentsDir, c.m.logger())
	if err != nil {
		return fmt.Errorf("config %s: %w", config.Path(*agentsDir), err)
	}
	if !cfg.Enabled && !*force && !*dry {
		return fmt.Errorf("smart pruning is disabled (\"enabled\": false in %s); enable it there, or pass --force to run this pass anyway", config.Path(*agentsDir))
	}
	policy := extract.FromConfig(cfg)
	policy.Enabled = true
	st := session.NewStore(*agentsDir)
	st.Logger = c.m.logger()
	st.Writer.Idle = cfg.Idle()
	if cfg.IdleSeconds == 0 {
		st.Writer.Idle = session.NoIdleWait
	}
	st.Writer.Logger = c.m.logger()
	if *dry {
		// A dry run writes nothing, queued write-backs included.
	} else if err := c.m.applyPending(ctx, st, cfg); err != nil {
		fmt.Fprintf(c.m.Stderr, "warning: pending restore write-backs: %v\n", err)
	}
	var refs []bs.SessionRef
	if len(sessions) == 0 {
		refs, err = st.Sessions(ctx)
		if err != nil {
			return err
		}
	} else {
		for _, s := range sessions {
			ref, err := st.Resolve(ctx, s)
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
	}
	x := &extract.Extractor{Policy: policy, Editor: st, Logger: c.m.logger(), DryRun: *dry}
	prog := newProgress(c.m.Stderr, len(refs))
	var reports []pruneReport
	failed := 0
	for i, ref := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		prog.step(i, ref.String())
		res, err := x.Run(ctx, ref)
		r := pruneReport{Session: ref.String(), Result: res}
		switch {
		case err == nil && res.Written:
			r.Status = "extracted"
		case err == nil:
			r.Status = "unchanged"
		case errors.Is(err, bs.ErrBusy), errors.Is(err, bs.ErrChanged):
			r.Status, r.Error = "busy", err.Error()
		default:
			r.Status, r.Error = "error", err.Error()
			failed++
		}
		reports = append(reports, r)
	}
	prog.done()
	if *asJSON {
		enc := json.NewEncoder(c.m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	} else {
		printPrune(c.m.Stdout, reports, *dry)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d sessions failed", failed, len(refs))
	}
	return nil
}

func printPrune(w io.Writer, reports []pruneReport, dry bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATUS\tENTRIES\tVALUES\tBYTES BEFORE\tBYTES SAVED\tSIDE FILES\tNOTE")
	var entries, values int
	var saved, before int64
	for _, r := range reports {
		res := r.Result
		if res == nil {
			res = &extract.Result{}
		}
		note := r.Error
		if note == "" {
			note = res.Skipped
		}
		status := r.Status
		if dry && status == "unchanged" && res.Entries > 0 {
			status = "would extract"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Session, status, res.Entries, res.Values, res.BytesBefore, res.BytesSaved, res.SideBytes, note)
		before += res.BytesBefore
		if res.Written || dry {
			entries += res.Entries
			values += res.Values
			saved += res.BytesSaved
		}
	}
	tw.Flush()
	verb := "saved"
	if dry {
		verb = "would save"
	}
	fmt.Fprintf(w, "\n%d sessions, %d entries, %d values: %s %d of %d bytes\n", len(reports), entries, values, verb, saved, before)
}

// progress shows "[i/n] name" on a terminal and nothing in a pipe.
type progress struct {
	w  io.Writer
	n  int
	on bool
}

func newProgress(w io.Writer, n int) *progress {
	on := false
	if f, ok := w.(*os.File); ok && n > 1 {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progress{w: w, n: n, on: on}
}

func (p *progress) step(i int, name string) {
	if p.on {
		fmt.Fprintf(p.w, "\r\033[K[%d/%d] %s", i+1, p.n, name)
	}
}

func (p *progress) done() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
