package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

const inspectUsage = `Usage: brainsurgeon inspect <file|session> [--agents-dir DIR] [--json]

Shows what a transcript holds: the header and format version, entries by type,
messages by role, content blocks, the active path, branch points, compactions,
malformed lines and the bytes of extractable values by trigger type. Reads only;
never writes.

Examples:
  brainsurgeon inspect ~/.openclaw/agents/main/sessions/1d9efd24-3d45-430b-a703-e713c1679ce1.jsonl
  brainsurgeon inspect agent:main:main --json
  brainsurgeon inspect main/1d9efd24-3d45-430b-a703-e713c1679ce1 --agents-dir /srv/openclaw/agents

Flags:
`

type inspectCommand struct {
	m *Main
}

func (c *inspectCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon inspect", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (or pi sessions dir) to look sessions up in")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, inspectUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("inspect takes one transcript file or session name, got %s", plural.Count(len(pos), "argument", "arguments")), Try: "brainsurgeon inspect --help"}
	}
	tr, err := openSession(ctx, *agentsDir, pos[0])
	if err != nil {
		return err
	}
	rep, err := compact.InspectTranscript(ctx, tr)
	if err != nil {
		return err
	}
	out := inspectReport{TranscriptReport: rep}
	// The context's tokens as context status counts them by default.
	if tok, err := compactwire.TokenOptions(""); err == nil {
		if st, err := compact.Status(ctx, tr, compact.Settings{}, tok); err == nil {
			out.Tokens, out.LastUsageTokens = st.Tokens, st.LastUsageTokens
		}
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	printReport(c.m.Stdout, out, tr.Location())
	return nil
}

// inspectReport is what inspect prints: the transcript's report and the
// size of its context.
type inspectReport struct {
	*compact.TranscriptReport
	// Tokens is the size of the current context, calibrated by the
	// recorded usage (context status's figure with the default
	// tokenizer); LastUsageTokens the usage the latest assistant turn
	// recorded. 0 when there is none.
	Tokens          int `json:"tokens"`
	LastUsageTokens int `json:"last_usage_tokens"`
}

func counts(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].v != l[j].v {
			return l[i].v > l[j].v
		}
		return l[i].k < l[j].k
	})
	var parts []string
	for _, e := range l {
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func printReport(w io.Writer, out inspectReport, where string) {
	r := out.TranscriptReport
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	name := r.Session.String()
	if r.Session.Key != "" {
		name += "  (" + r.Session.Key + ")"
	}
	fmt.Fprintf(tw, "Session\t%s\n", name)
	what := "File"
	if r.Session.Backend == bs.BackendSQLite {
		what = "Store"
	}
	fmt.Fprintf(tw, "%s\t%s  (%s, %s)\n", what, where, plural.Count(r.Bytes, "byte", "bytes"), plural.Count(r.Lines, "line", "lines"))
	if r.Header.Line > 0 {
		fmt.Fprintf(tw, "Header\tline %d, format v%d, id %s, cwd %s\n", r.Header.Line, r.Header.Version, r.Header.ID, r.Header.Cwd)
	} else {
		fmt.Fprintf(tw, "Header\tnone (the host treats a file without a header as empty)\n")
	}
	if !r.FirstTime.IsZero() {
		fmt.Fprintf(tw, "Time\t%s … %s\n", r.FirstTime.Format("2006-01-02 15:04"), r.LastTime.Format("2006-01-02 15:04"))
	}
	fmt.Fprintf(tw, "Entries\t%d: %s\n", r.Entries, counts(r.EntryTypes))
	fmt.Fprintf(tw, "Roles\t%s\n", counts(r.Roles))
	fmt.Fprintf(tw, "Blocks\t%s\n", counts(r.BlockTypes))
	fmt.Fprintf(tw, "Active path\t%s, leaf %s, %s, %s\n", plural.Count(r.ActivePath, "entry", "entries"), r.Leaf, plural.Count(r.ContextMessages, "context message", "context messages"), plural.Count(r.BranchPoints, "branch point", "branch points"))
	active := ""
	for _, c := range r.Compactions {
		if c.Active {
			active = fmt.Sprintf(" (active: line %d, id %s, first kept %s)", c.Line, c.ID, c.FirstKept)
		}
	}
	fmt.Fprintf(tw, "Compactions\t%d%s\n", len(r.Compactions), active)
	last := "none recorded"
	if out.LastUsageTokens > 0 {
		last = agenttext.Num(out.LastUsageTokens)
	}
	fmt.Fprintf(tw, "Tokens\t%s in the current context (calibrated by the recorded usage, as context status counts); last recorded usage %s\n", agenttext.Num(out.Tokens), last)
	if r.MalformedTotal == 0 {
		fmt.Fprintf(tw, "Malformed\tnone\n")
	} else {
		fmt.Fprintf(tw, "Malformed\t%s (kept as they are)\n", plural.Count(r.MalformedTotal, "line", "lines"))
		for _, m := range r.Malformed {
			fmt.Fprintf(tw, "\tline %d (%d bytes): %s\n", m.Line, m.Bytes, m.Error)
		}
		if more := r.MalformedTotal - len(r.Malformed); more > 0 {
			fmt.Fprintf(tw, "\t… and %d more\n", more)
		}
	}
	if r.IDLessEntries > 0 {
		fmt.Fprintf(tw, "Without ids\t%s (%s of extractable values) %s no id (a v1 transcript): %s be extracted\n", plural.Count(r.IDLessEntries, "entry", "entries"), plural.Count(r.IDLessBytes, "byte", "bytes"),
			plural.Noun(r.IDLessEntries, "has", "have"), plural.Noun(r.IDLessEntries, "it cannot", "they cannot"))
	}
	if r.Blank > 0 {
		fmt.Fprintf(tw, "Blank lines\t%d\n", r.Blank)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "trigger\tvalues\tbytes\tin context\tcontext bytes\t")
	for _, t := range bs.TriggerTypes() {
		s := r.Triggers[t]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", t, s.Values, s.Bytes, s.ContextValues, s.ContextBytes)
	}
	tw.Flush()
}
