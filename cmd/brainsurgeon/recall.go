package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

const grepUsage = `Usage: brainsurgeon context grep PATTERN [--session S] [--regex] [--ignore-case] [--max N] [--in W] [--json] [--agents-dir DIR]

Searches everything the session still holds for PATTERN: the entries on the
active path, the entries compacted away (the host keeps them in the file,
before the latest compaction's first kept entry), entries off the active path
(abandoned branches) and the values extraction moved to side files. Plain text
by default, RE2 with --regex. Each hit prints where it was found (active,
compacted, off_path, extracted), the entry id and line, and a snippet.
Streams; stops after --max hits (default 100). Reads only.

Exit status, as grep's: 0 when something matched, 1 when nothing did, 2 for
an error (a bad command line or pattern, a session that cannot be read).

Examples:
  brainsurgeon context grep "connection refused"
  brainsurgeon context grep 'TODO|FIXME' --regex --max 20 --session agent:main:main
  brainsurgeon context grep api_key --in extracted,compacted --json

Flags:
`

// grep runs context grep, whose exit status is grep's: 0 when something
// matched, 1 when nothing did, 2 for an error.
func (c *contextCommand) grep(ctx context.Context, args []string) error {
	err := c.grepRun(ctx, args)
	var se *cli.StatusError
	if err == nil || errors.Is(err, cli.ErrHelp) || errors.As(err, &se) {
		return err
	}
	return &cli.StatusError{Err: err, Code: cli.ExitUsage}
}

func (c *contextCommand) grepRun(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context grep", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	regex := fs.Bool("regex", false, "PATTERN is a regular expression (RE2)")
	icase := fs.Bool("ignore-case", false, "match letters of either case")
	max := fs.Int("max", recall.DefaultMaxHits, "stop after N hits")
	in := fs.String("in", "", "search only these places, comma-separated: active, compacted, off_path, extracted (default: all)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, grepUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon context grep --help"
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("context grep takes one non-empty PATTERN, got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	if *max < 1 {
		return &cli.UsageError{Msg: fmt.Sprintf("--max must be 1 or more, got %d", *max), Try: try}
	}
	where, err := parseWhere(*in)
	if err != nil {
		return &cli.UsageError{Msg: err.Error(), Try: try}
	}
	t, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	o := recall.GrepOptions{Regexp: *regex, IgnoreCase: *icase, MaxHits: *max, In: where, Logger: c.m.logger()}
	return runGrep(ctx, c.m.Stdout, tr, t.set.Side, pos[0], o, sf.json)
}

// parseWhere reads --in.
func parseWhere(s string) ([]recall.Where, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []recall.Where
	for _, p := range strings.Split(s, ",") {
		switch w := recall.Where(strings.TrimSpace(p)); w {
		case recall.Active, recall.Compacted, recall.OffPath, recall.Extracted:
			out = append(out, w)
		default:
			return nil, fmt.Errorf("--in %q: expected active, compacted, off_path or extracted, comma-separated", p)
		}
	}
	return out, nil
}

// runGrep streams the hits of pattern in tr to w: one line per hit, or
// one JSON document at the end. No match returns a *cli.StatusError of
// status 1 that reports nothing more.
func runGrep(ctx context.Context, w io.Writer, tr bs.Transcript, side bs.SideStore, pattern string, o recall.GrepOptions, asJSON bool) error {
	out, err := recall.Search(ctx, tr, side, pattern, o, asJSON, func(h recall.Hit) {
		if asJSON {
			return
		}
		fmt.Fprintln(w, agenttext.GrepHit(h))
	})
	if errors.Is(err, bs.ErrInvalid) {
		return cli.Usagef("bad --regex pattern %q: %v", pattern, err)
	}
	if err != nil {
		return err
	}
	var none error
	if out.Count == 0 {
		none = &cli.StatusError{Code: cli.ExitProblem}
	}
	if asJSON {
		if err := cli.WriteJSON(w, out, nil); err != nil {
			return err
		}
		return none
	}
	agenttext.GrepSummary(w, out, pattern, o.MaxHits)
	return none
}

const describeUsage = `Usage: brainsurgeon context describe ID [--session S] [--json] [--agents-dir DIR]

Shows one entry of the session: its type, role, time, size, where it is
(active, compacted away, off the active path) and whether values were
extracted from it. For a compaction entry also the summary, its layer,
trigger and level, the summaries it condenses, and the span of entries it
stands for (see "context expand"). An unknown ID lists nearby ids. Reads only.

Examples:
  brainsurgeon context describe 95e761d1
  brainsurgeon context describe 95e761d1 --session agent:main:main --json

Flags:
`

func (c *contextCommand) describe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context describe", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, describeUsage)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("context describe takes one entry ID, got %s", plural.Count(len(pos), "argument", "arguments")), Try: "brainsurgeon context describe --help"}
	}
	_, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	d, err := recall.Describe(ctx, tr, pos[0])
	if err != nil {
		return err
	}
	if sf.json {
		return cli.WriteJSON(c.m.Stdout, d, nil)
	}
	agenttext.Description(c.m.Stdout, d)
	return nil
}

const expandUsage = `Usage: brainsurgeon context expand ID [--session S] [--resolve] [--max N] [--json] [--agents-dir DIR]

Prints the original entries the compaction summary ID stands for, as raw
JSON lines, one per line (from the previous compaction's first kept entry,
or the start, up to this one's first kept entry). A summary that condenses
earlier summaries lists them first ("covers ..."): expand those in turn to
drill down level by level. --resolve puts extracted values back in place of their
placeholders in the output (the transcript is not changed). Reads only.

Examples:
  brainsurgeon context expand 95e761d1
  brainsurgeon context expand 95e761d1 --resolve --max 50 --json

Flags:
`

func (c *contextCommand) expand(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context expand", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	resolve := fs.Bool("resolve", false, "replace placeholders with the extracted values in the output")
	max := fs.Int("max", 0, "print at most N entries (0: all)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, expandUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon context expand --help"
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("context expand takes one compaction entry ID, got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	if *max < 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("--max must be 0 (all) or more, got %d", *max), Try: try}
	}
	t, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	x, err := recall.Expand(ctx, tr, pos[0], recall.ExpandOptions{Resolve: *resolve, Side: t.set.Side, MaxEntries: *max, Logger: c.m.logger()})
	if err != nil {
		return err
	}
	if sf.json {
		if x.Entries == nil {
			x.Entries = []recall.RawEntry{}
		}
		return cli.WriteJSON(c.m.Stdout, x, nil)
	}
	fmt.Fprintln(c.m.Stderr, agenttext.ExpansionHeader(x, *max))
	agenttext.ExpansionBody(c.m.Stdout, x, func(id string) string { return "brainsurgeon context expand " + id })
	return nil
}

const exportUsage = `Usage: brainsurgeon context export FILE [--session S] [--resolve=false] [--force] [--json] [--agents-dir DIR]

Writes the session's context as one portable JSON document to FILE ("-" for
stdout): the source session, the latest compaction summary, structured facts
of the active path (entities, files read and modified, tool operations,
commands, errors, findings, decisions, user requests, next steps) and the kept
tail (the raw lines the host loads after the summary). Extracted values are
put back into the tail unless --resolve=false (the side files do not travel).
"brainsurgeon context import FILE" makes a new session from it. An existing
FILE is not replaced without --force. Reads the session only.

Examples:
  brainsurgeon context export /tmp/ctx.json
  brainsurgeon context export - --session agent:main:main > ctx.json

Flags:
`

// exportOutput is what export prints with --json.
type exportOutput struct {
	Session   string `json:"session"`
	File      string `json:"file"`
	Bytes     int    `json:"bytes"`
	TailLines int    `json:"tail_lines"`
	Summary   bool   `json:"summary"`
}

func (c *contextCommand) export(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context export", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	resolve := fs.Bool("resolve", true, "put extracted values back into the exported tail")
	force := fs.Bool("force", false, "replace FILE when it exists")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, exportUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon context export --help"
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("context export takes one FILE (or - for stdout), got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	file := pos[0]
	if file != "-" && !*force {
		if _, err := os.Lstat(file); err == nil {
			return fmt.Errorf("export: %s exists (expected a new file; pass --force to replace it): %w", file, bs.ErrInvalid)
		}
	}
	t, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	doc, err := portable.Export(ctx, tr, t.set.Side, portable.ExportOptions{
		Facts:   func(lines [][]byte) any { return summarize.ExtractFacts(lines) },
		Resolve: *resolve, Logger: c.m.logger(),
	})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := doc.Encode(&buf); err != nil {
		return err
	}
	if file == "-" {
		_, err := c.m.Stdout.Write(buf.Bytes())
		return err
	}
	write := atomicfile.WriteNew // never replace a file by accident
	if *force {
		write = atomicfile.WriteFile
	}
	if err := write(file, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("export %s: %w", file, err)
	}
	out := exportOutput{Session: t.ref.String(), File: file, Bytes: buf.Len(), TailLines: len(doc.Tail), Summary: doc.Summary != nil}
	if sf.json {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	sum := "no compaction summary"
	if doc.Summary != nil {
		sum = "summary of compaction " + doc.Summary.EntryID
	}
	fmt.Fprintf(c.m.Stdout, "exported %s to %s: %s bytes, %s, %d tail lines\n", out.Session, file, agenttext.Num(out.Bytes), sum, out.TailLines)
	return nil
}

const importUsage = `Usage: brainsurgeon context import FILE [--agent A] [--json] [--agents-dir DIR]

Creates a new session of agent A (default main) from an export ("-" reads
stdin): a new session id, a header whose parentSession names the exported
session, the kept tail byte for byte, and the summary as a compaction entry,
so the host builds the same context as in the source. The document is
validated strictly first: a malformed export is an error and nothing is
written. OpenClaw's SQLite store never gets new sessions (refused).

Examples:
  brainsurgeon context import /tmp/ctx.json
  brainsurgeon context import /tmp/ctx.json --agent research --json

Flags:
`

// maxImport bounds the size of an export read by import.
const maxImport = 512 << 20

// createdOutput is the JSON output of import and session branch.
type createdOutput struct {
	Session       string `json:"session"`
	Agent         string `json:"agent"`
	SessionID     string `json:"session_id"`
	Path          string `json:"path"`
	ParentSession string `json:"parent_session"`
	Lines         int    `json:"lines"`
	At            string `json:"at,omitempty"`
}

func (c *contextCommand) importSession(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context import", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir")
	agent := fs.String("agent", defaultAgent, "the agent the new session belongs to")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, importUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon context import --help"
	if len(pos) != 1 || pos[0] == "" {
		return &cli.UsageError{Msg: fmt.Sprintf("context import takes one FILE (or - for stdin), got %s", plural.Count(len(pos), "argument", "arguments")), Try: try}
	}
	if err := backend.CheckAgentsDir(*agentsDir); err != nil {
		return err
	}
	var data []byte
	if pos[0] == "-" {
		if c.m.Stdin == nil {
			return fmt.Errorf("import: no stdin to read the export from: %w", bs.ErrInvalid)
		}
		data, err = io.ReadAll(io.LimitReader(c.m.Stdin, maxImport+1))
	} else {
		data, err = readBounded(pos[0], maxImport)
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if len(data) > maxImport {
		return fmt.Errorf("import %s: larger than %d bytes, expected an export document: %w", pos[0], maxImport, bs.ErrInvalid)
	}
	// Validate before touching the installation: a malformed export
	// writes nothing.
	doc, err := portable.Decode(data)
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	cfg, _, err := c.m.loadConfig(ctx, *agentsDir, true)
	if err != nil {
		return err
	}
	set, err := c.m.open(ctx, *agentsDir, cfg)
	if err != nil {
		return err
	}
	// The store creates the session in the store that serves the agent.
	ref, err := portable.Import(ctx, set.Store, *agent, data, portable.ImportOptions{})
	if err != nil {
		return fmt.Errorf("import %s: %w", pos[0], err)
	}
	out := createdOutput{Session: ref.String(), Agent: ref.Agent, SessionID: ref.ID, Path: set.Store.Location(ref), ParentSession: doc.Source.SessionID}
	out.Lines = len(doc.Tail) + 1
	if doc.Summary != nil {
		out.Lines++
	}
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	fmt.Fprintf(c.m.Stdout, "created session %s (parentSession %s, %d lines) at %s\n", out.Session, out.ParentSession, out.Lines, out.Path)
	return nil
}

// readBounded reads path, failing on a file larger than max.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (expected an export document): %w", path, bs.ErrInvalid)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s holds %d bytes, more than the %d an export may have: %w", path, fi.Size(), max, bs.ErrInvalid)
	}
	return io.ReadAll(io.LimitReader(f, max+1))
}
