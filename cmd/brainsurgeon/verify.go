package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

const verifyUsage = `Usage: brainsurgeon verify [session] [--json] [--agents-dir DIR]

Checks extracted values in one session, or in every session: each placeholder
[[extracted-<id>]] (or "… [[extracted-<id>]]" with a preview) must have a side
file holding a value at its path whose sha256 matches. Problems (missing side
file, missing value, hash mismatch, corrupt side file) are listed with the
session, entry, line and path. Orphans — side files and values no placeholder
points to, such as values already restored — are listed too but are not
problems. Reads only; never writes.

Exit status: 0 when every placeholder has its value, 1 when there are problems.

Examples:
  brainsurgeon verify
  brainsurgeon verify agent:main:main --json
  brainsurgeon verify --agents-dir /srv/openclaw/agents

Flags:
`

type verifyCommand struct{ m *Main }

// verifySummary is the JSON output of verify.
type verifySummary struct {
	OK           bool                    `json:"ok"`
	Sessions     int                     `json:"sessions"`
	Placeholders int                     `json:"placeholders"`
	Verified     int                     `json:"verified"`
	Problems     int                     `json:"problems"`
	Orphans      int                     `json:"orphans"`
	SideFiles    int                     `json:"side_files"`
	Reports      []*restore.VerifyReport `json:"reports"`
}

func (c *verifyCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", session.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, verifyUsage)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("verify takes at most one session, got %d arguments", len(pos)), Try: "brainsurgeon verify --help"}
	}
	set, err := backend.Open(ctx, *agentsDir, backend.Options{Logger: c.m.logger()})
	if err != nil {
		return err
	}
	var refs []bs.SessionRef
	if len(pos) == 1 {
		ref, err := resolveRef(ctx, set, pos[0])
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	} else if refs, err = set.Store.Sessions(ctx); err != nil {
		return err
	}
	sum := verifySummary{Sessions: len(refs), Reports: []*restore.VerifyReport{}}
	prog := newProgress(c.m.Stderr)
	for i, ref := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		prog.step(i, len(refs), ref.String())
		rep, err := restore.Verify(ctx, set.Store, set.Side, ref)
		if err != nil {
			prog.done()
			return err
		}
		sum.Reports = append(sum.Reports, rep)
		sum.Placeholders += rep.Placeholders
		sum.Verified += rep.Verified
		sum.Problems += len(rep.Problems)
		sum.Orphans += len(rep.Orphans)
		sum.SideFiles += rep.SideFiles
	}
	prog.done()
	sum.OK = sum.Problems == 0
	if *asJSON {
		if err := writeJSON(c.m.Stdout, sum); err != nil {
			return err
		}
	} else {
		printVerify(c.m.Stdout, &sum)
	}
	if sum.Problems > 0 {
		return fmt.Errorf("%d placeholders have no intact value", sum.Problems)
	}
	return nil
}

func printVerify(w io.Writer, s *verifySummary) {
	if s.Problems > 0 {
		fmt.Fprintln(w, "Problems:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SESSION\tENTRY\tLINE\tPATH\tPROBLEM\tDETAIL")
		for _, r := range s.Reports {
			for _, p := range r.Problems {
				fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\t%s\n", p.Session, p.EntryID, p.Line, p.Path, p.Kind, p.Detail)
			}
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if s.Orphans > 0 {
		fmt.Fprintln(w, "Orphans (not problems; retention removes them):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  SESSION\tENTRY\tKIND\tPATH\tBYTES\tDETAIL")
		for _, r := range s.Reports {
			for _, o := range r.Orphans {
				path := o.Path
				if path == "" {
					path = "-"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", o.Session, o.EntryID, o.Kind, path, o.Bytes, o.Detail)
			}
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	verdict := "OK"
	if s.Problems > 0 {
		verdict = "PROBLEMS"
	}
	fmt.Fprintf(w, "%s: %d sessions, %d placeholders, %d verified, %d problems, %d side files, %d orphans\n",
		verdict, s.Sessions, s.Placeholders, s.Verified, s.Problems, s.SideFiles, s.Orphans)
}
