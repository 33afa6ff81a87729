package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

const verifyUsage = `Usage: brainsurgeon verify [session] [--verbose] [--json] [--agents-dir DIR]

Checks extracted values in one session, or in every session: each placeholder
[[extracted-<id>]] (or "… [[extracted-<id>]]" with a preview) must have a side
file holding a value at its path whose sha256 matches. Problems (missing side
file, missing value, hash mismatch, corrupt side file) are listed with the
session, entry, line and path. Orphans — side files and values no placeholder
points to, such as values already restored — are not problems: they are
counted per session (with their bytes), and listed one by one with --verbose.
They stay on disk. Malformed lines (not exactly one JSON object) are counted
per session: they are kept as they are. Reads only; never writes.

Exit status: 0 when every placeholder has its value, 1 when there are problems.

Examples:
  brainsurgeon verify
  brainsurgeon verify agent:main:main --verbose
  brainsurgeon verify agent:main:main --json
  brainsurgeon verify --agents-dir /srv/openclaw/agents

Flags:
`

type verifyCommand struct{ m *Main }

// verifySummary is the JSON output of verify.
type verifySummary struct {
	OK           bool  `json:"ok"`
	Sessions     int   `json:"sessions"`
	Placeholders int   `json:"placeholders"`
	Verified     int   `json:"verified"`
	Problems     int   `json:"problems"`
	Orphans      int   `json:"orphans"`
	OrphanBytes  int64 `json:"orphan_bytes"`
	SideFiles    int   `json:"side_files"`
	// MalformedLines counts the malformed lines of every session (kept
	// as they are); each report has its session's.
	MalformedLines int                     `json:"malformed_lines"`
	Reports        []*restore.VerifyReport `json:"reports"`
}

func (c *verifyCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon verify", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir)")
	asJSON := fs.Bool("json", false, "print the reports as JSON (orphans included)")
	verbose := fs.Bool("verbose", false, "list every orphan (default: counts and bytes per session)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, verifyUsage)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("verify takes at most one session, got %s", plural.Count(len(pos), "argument", "arguments")), Try: "brainsurgeon verify --help"}
	}
	set, err := cli.Open(ctx, *agentsDir, backend.Options{Logger: c.m.logger()})
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
	} else if refs, err = bs.ListSessions(ctx, set.Store, c.m.logger()); err != nil {
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
		for _, o := range rep.Orphans {
			sum.OrphanBytes += o.Bytes
		}
		sum.SideFiles += rep.SideFiles
		sum.MalformedLines += rep.MalformedLines
	}
	prog.done()
	sum.OK = sum.Problems == 0
	if sum.Problems > 0 {
		err = fmt.Errorf("%s no intact value", plural.Count(sum.Problems, "placeholder has", "placeholders have"))
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, sum, err)
	}
	printVerify(c.m.Stdout, &sum, *verbose)
	return err
}

func printVerify(w io.Writer, s *verifySummary, verbose bool) {
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
		fmt.Fprintln(w, "Orphans (side values no placeholder points to, such as values already restored;")
		fmt.Fprintln(w, "not problems, and kept on disk):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if verbose {
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
		} else {
			fmt.Fprintln(tw, "  SESSION\tORPHANS\tBYTES\t")
			for _, r := range s.Reports {
				if len(r.Orphans) == 0 {
					continue
				}
				var n int64
				for _, o := range r.Orphans {
					n += o.Bytes
				}
				fmt.Fprintf(tw, "  %s\t%d\t%d\t\n", r.Session, len(r.Orphans), n)
			}
		}
		tw.Flush()
		if !verbose {
			fmt.Fprintln(w, "  (list them with --verbose)")
		}
		fmt.Fprintln(w)
	}
	if s.MalformedLines > 0 {
		printVerifyMalformed(w, s.Reports)
		fmt.Fprintln(w)
	}
	verdict := "OK"
	if s.Problems > 0 {
		verdict = "PROBLEMS"
	}
	fmt.Fprintf(w, "%s: %s, %s, %d verified, %s, %s, %s (%s), %s\n",
		verdict, plural.Count(s.Sessions, "session", "sessions"), plural.Count(s.Placeholders, "placeholder", "placeholders"), s.Verified, plural.Count(s.Problems, "problem", "problems"), plural.Count(s.SideFiles, "side file", "side files"), plural.Count(s.Orphans, "orphan", "orphans"), plural.Count(s.OrphanBytes, "byte", "bytes"), plural.Count(s.MalformedLines, "malformed line", "malformed lines"))
}
