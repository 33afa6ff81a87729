package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

const contextUsage = `Usage: brainsurgeon context <subcommand> [arguments] [flags]

Shows and moves a session's context: what the model sees, what was compacted
away, and what was extracted. All but import read only.

Subcommands:
  status    tokens against the window, auto-compaction, compactions, risk
  inspect   where the tokens are: conversation, tool output, system prompt,
            what the summarize layer keeps and replaces, each layer's savings
  history   the compactions on the active path, newest first [--depth N]
  grep      search the active path, compacted-away entries and extracted values
  describe  one entry or compaction summary, with what it stands for
  expand    the original entries a compaction summary stands for
  export    write the context as portable JSON (facts, summary, kept tail)
  import    create a new session from an export

Every subcommand but import takes --session S (default: the most recently
modified session of agent main); all take --agents-dir DIR and --json.

Examples:
  brainsurgeon context status
  brainsurgeon context inspect --session agent:main:main --json
  brainsurgeon context history --depth 5
  brainsurgeon context grep "connection refused" --max 20
  brainsurgeon context export /tmp/ctx.json && brainsurgeon context import /tmp/ctx.json

Run "brainsurgeon help context <subcommand>" for a subcommand's flags.
`

type contextCommand struct{ m *Main }

func (c *contextCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(c.m.Stderr, contextUsage)
		return &cli.UsageError{Msg: "context needs a subcommand: status, inspect, history, grep, describe, expand, export or import", Try: "brainsurgeon help context"}
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "status", "inspect", "history":
		return c.report(ctx, sub, rest)
	case "grep":
		return c.grep(ctx, rest)
	case "describe":
		return c.describe(ctx, rest)
	case "expand":
		return c.expand(ctx, rest)
	case "export":
		return c.export(ctx, rest)
	case "import":
		return c.importSession(ctx, rest)
	case "help", "-h", "--help", "-help":
		if len(rest) > 0 && !isHelp(rest[0]) {
			return c.Run(ctx, []string{rest[0], "--help"})
		}
		fmt.Fprint(c.m.Stdout, contextUsage)
		return nil
	}
	return &cli.UsageError{Msg: fmt.Sprintf("unknown context subcommand %q (expected status, inspect, history, grep, describe, expand, export or import)", sub), Try: "brainsurgeon help context"}
}

const statusUsage = `Usage: brainsurgeon context status [--session S] [--tokenizer T] [--json] [--agents-dir DIR]

Shows the predicted size of the session's next context against the window
(compaction.context_window in the config), whether the daemon compacts it
automatically and at which thresholds, the compactions on its active path,
the degradation risk (low below compaction.warn_at compactions, medium from
it, high from hard_warn_at) and what to do; when BrainSurgeon's OpenClaw
context engine has served the session, what the model was sent (the size of
the last view, predicted and measured, beside the stored transcript's), what
the engine did to the view (values collapsed, summaries, compactions, the
warning), and the compactions and risk counted with the engine's (--json:
"engine", "view_tokens", "engine_compactions", "layers", "compact_hint").
Reads only.

Tokens are counted by --tokenizer: calibrated (default: chars/4 scaled by the
transcript's own recorded usage, plus the system prompt and tool definitions
it implies), o200k (exact BPE, transcript only) or chars/4.

Examples:
  brainsurgeon context status
  brainsurgeon context status --session agent:main:main --json

Flags:
`

const inspectCtxUsage = `Usage: brainsurgeon context inspect [--session S] [--tokenizer T] [--json] [--agents-dir DIR]

Shows where the tokens of the session's context are: conversation messages
(and the tool outputs among them), the system prompt (inferred from the recorded usage), the recent
part the summarize layer keeps and the part it would replace, pinned entries
(_extractable: false), and what each layer would save. Reads only.

Examples:
  brainsurgeon context inspect
  brainsurgeon context inspect --session agent:main:main --tokenizer o200k --json

Flags:
`

const historyUsage = `Usage: brainsurgeon context history [--depth N] [--session S] [--json] [--agents-dir DIR]

Lists the compactions on the session's active path, newest first: when, who
(AUTO, MANUAL, or HOST for the host's own), the layer, tokens before and
after, messages compacted, focus, and whether the summary is degraded; then
the total and the risk level. Reads only.

Examples:
  brainsurgeon context history
  brainsurgeon context history --depth 0 --session agent:main:main --json

Flags:
`

// report runs status, inspect or history.
func (c *contextCommand) report(ctx context.Context, sub string, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon context "+sub, flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	usage := map[string]string{"status": statusUsage, "inspect": inspectCtxUsage, "history": historyUsage}[sub]
	var tokName *string
	var depth *int
	if sub == "history" {
		depth = fs.Int("depth", 10, "show at most N compactions, newest first (0: all)")
	} else {
		tokName = fs.String("tokenizer", "", "token counting: calibrated, o200k or chars/4 (default: the config's, else calibrated)")
	}
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, usage)
	if err != nil {
		return err
	}
	try := fs.Name() + " --help"
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("context %s takes no arguments, got %q (name the session with --session)", sub, pos), Try: try}
	}
	if depth != nil && *depth < 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("--depth must be 0 (all) or more, got %d", *depth), Try: try}
	}
	if tokName != nil {
		if err := checkTokenizer(*tokName, try); err != nil {
			return err
		}
	}
	t, tr, err := c.m.openTranscript(ctx, &sf)
	if err != nil {
		return err
	}
	s := compact.FromConfig(t.cfg.Compaction)
	now := time.Now()
	if sub == "history" {
		rep, err := compact.History(ctx, tr, *depth)
		if err != nil {
			return err
		}
		rep.Risk = compact.RiskOf(rep.Compactions, s.WarnAt, s.HardWarnAt)
		if sf.json {
			return cli.WriteJSON(c.m.Stdout, rep, nil)
		}
		printHistory(c.m.Stdout, rep, s, now)
		return nil
	}
	tok, err := tokenOptions(*tokName, t.cfg, t.set.AgentsDir, c.m.logger())
	if err != nil {
		return err
	}
	if sub == "status" {
		rep, err := compact.Status(ctx, tr, s, tok)
		if err != nil {
			return err
		}
		fig := engine.Join(rep, engineStatus(ctx, t, s, c.m.logger()), s, now)
		if sf.json {
			return cli.WriteJSON(c.m.Stdout, fig, nil)
		}
		printStatus(c.m.Stdout, fig, s, now)
		printEngineStatus(c.m.Stdout, fig.Engine)
		return nil
	}
	rep, err := compact.Inspect(ctx, tr, s, tok)
	if err != nil {
		return err
	}
	if sf.json {
		return cli.WriteJSON(c.m.Stdout, rep, nil)
	}
	printInspect(c.m.Stdout, rep)
	return nil
}

// engineStatus returns the context engine's status of the target's
// session (its state under the state dir; nothing is written), nil when
// the engine never served it or its state cannot be read (logged).
func engineStatus(ctx context.Context, t *target, s compact.Settings, log bs.Logger) *engine.Status {
	e := &engine.Engine{Store: t.set.Store, StateDir: t.set.StateDir, Policy: extract.FromConfig(t.cfg), Settings: s, Logger: log}
	defer e.Close()
	st, err := e.Status(ctx, t.ref)
	if err != nil {
		if !errors.Is(err, bs.ErrNotFound) && !errors.Is(err, bs.ErrUnsupported) && log != nil {
			log.Warn("context engine state not read", "session", t.ref.String(), "error", err.Error())
		}
		return nil
	}
	if !st.Active {
		return nil
	}
	return &st
}

// printEngineStatus prints what the context engine did to the model's
// view of the session (nothing when it never served it).
func printEngineStatus(w io.Writer, e *engine.Status) {
	if e == nil {
		return
	}
	fmt.Fprintln(w)
	field(w, "Context Engine", "%s values collapsed (%s chars), %s summaries (levels %d), %s compactions",
		agenttext.Num(e.Collapsed), agenttext.Num(e.CollapsedChars), agenttext.Num(e.Summaries), e.Levels, agenttext.Num(e.Compactions))
	took := ""
	if e.Last != nil && e.Last.ElapsedMS > 0 {
		took = fmt.Sprintf("; the last took %.1f ms", e.Last.ElapsedMS)
	}
	field(w, "Engine Turns", "%s served, %s changed the cached prefix%s", agenttext.Num(e.Turns), agenttext.Num(e.PrefixChanges), took)
	if e.Warning != "" {
		fmt.Fprintf(w, "  ! %s\n", e.Warning)
	}
}

// viewOf returns the last view of the figures' engine status, nil when
// the engine never served the session.
func viewOf(f engine.Figures) *engine.ViewSize {
	if f.Engine == nil {
		return nil
	}
	return f.Engine.View
}

// viewChars says how many characters the view sent against the host's
// messages ("" parts left out when the state predates them).
func viewChars(v *engine.ViewSize) string {
	if v.Passthrough != "" {
		return "the host's messages passed through unchanged (" + v.Passthrough + ")"
	}
	s := fmt.Sprintf("%s of the host's %s messages", agenttext.Num(v.Messages), agenttext.Num(v.HostMessages))
	if v.HostChars > 0 {
		s += fmt.Sprintf(", %s of their %s characters", agenttext.Num(v.Chars), agenttext.Num(v.HostChars))
	}
	return s
}

// windowWords says where the context window of r comes from.
func windowWords(r compact.StatusReport) string {
	src := map[string]string{compact.WindowHostConfig: "from the host config", compact.WindowModelTable: "from the model table",
		compact.WindowConfig: "from the config"}[r.WindowSource]
	if src == "" {
		src = "from " + r.WindowSource
	}
	if r.WindowFrom != "" {
		src += " (" + r.WindowFrom + ")"
	}
	return src
}

// pct prints a percentage without a needless ".0".
func pct(p float64) string {
	return strconv.FormatFloat(p, 'f', -1, 64) + "%"
}

// field prints one "Label:   value" line with the value at column 22.
func field(w io.Writer, label, format string, args ...any) {
	fmt.Fprintf(w, "%-21s%s\n", label+":", fmt.Sprintf(format, args...))
}

func title(w io.Writer, s string) {
	fmt.Fprintln(w, s)
	fmt.Fprintln(w, rule)
}

func printStatus(w io.Writer, f engine.Figures, s compact.Settings, now time.Time) {
	r := f.StatusReport
	title(w, "Context Status")
	field(w, "Session", "%s (%s)", r.Session, r.Backend)
	if v := viewOf(f); v != nil {
		sent := fmt.Sprintf("%s / %s tokens (%s) predicted", agenttext.Num(v.PredictedTokens), agenttext.Num(r.Window), pct(f.ViewPercent))
		if v.MeasuredTurn > 0 {
			sent += fmt.Sprintf(", %s measured (view %d)", agenttext.Num(v.MeasuredTokens), v.MeasuredTurn)
		}
		field(w, "Sent to the Model", "%s: the last view (%d, %s), %s", sent, v.Turn, ago(now, v.At), viewChars(v))
		field(w, "Stored Transcript", "%s / %s tokens (%s): the next turn's context without the engine", agenttext.Num(r.Tokens), agenttext.Num(r.Window), pct(r.Percent))
	} else {
		field(w, "Total Tokens", "%s / %s (%s)", agenttext.Num(r.Tokens), agenttext.Num(r.Window), pct(r.Percent))
	}
	field(w, "Context Window", "%s tokens, %s", agenttext.Num(r.Window), windowWords(r))
	if r.LastUsageTokens > 0 {
		field(w, "Last Usage", "%s tokens (recorded by the latest turn; the total adds what came after it)", agenttext.Num(r.LastUsageTokens))
	} else {
		field(w, "Last Usage", "none recorded")
	}
	field(w, "Tokenizer", "%s", r.Tokenizer)
	field(w, "Tool Outputs", "%s tokens", agenttext.Num(r.ToolOutputTokens))
	thresholds := fmt.Sprintf("prune at %s, summarize at %s, full at %s", pct(s.PruneTriggerPercent), pct(s.SummarizeTriggerPercent), pct(s.FullTriggerPercent))
	if r.AutoEnabled {
		field(w, "Auto-Compaction", "Enabled (%s)", thresholds)
	} else {
		field(w, "Auto-Compaction", "Disabled (turn on with: brainsurgeon autocompact on)")
	}
	if f.EngineCompactions > 0 {
		field(w, "Compaction Count", "%d (%d by the context engine, %d in the transcript)", r.Compactions, f.EngineCompactions, f.TranscriptCompactions)
	} else {
		field(w, "Compaction Count", "%d", r.Compactions)
	}
	if r.LastCompactionAt != nil {
		field(w, "Last Compaction", "%s (%s)", ago(now, *r.LastCompactionAt), r.LastCompactionAt.UTC().Format("2006-01-02 15:04Z"))
	} else {
		field(w, "Last Compaction", "never")
	}
	field(w, "Degradation Risk", "%s", riskWord(r.Risk))
	switch {
	case f.EngineServes:
		field(w, "Compaction", "by the context engine: %s", strings.TrimPrefix(f.CompactHint, "BrainSurgeon's context engine serves this session: "))
	case !r.CanCompact:
		field(w, "Compaction", "only the prune layer runs here: %s", r.Refusal)
	case r.Layer == compact.LayerNone:
		field(w, "Compaction", "not needed now (%s)", thresholds)
	default:
		field(w, "Compaction", "layer %d (%s) is due", layerNumber(r.Layer), r.Layer)
	}
	fmt.Fprintln(w)
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "Warnings:")
		for _, x := range r.Warnings {
			fmt.Fprintf(w, "  ! %s\n", x)
		}
	}
	fmt.Fprintln(w, "Recommendations:")
	if len(r.Warnings) == 0 {
		fmt.Fprintln(w, "  ✓ Context healthy")
	}
	for _, x := range r.Recommendations {
		fmt.Fprintf(w, "  → %s\n", x)
	}
	if len(r.Recommendations) == 0 && len(r.Warnings) > 0 {
		fmt.Fprintln(w, "  → none")
	}
}

// riskWord capitalizes a risk level for people.
func riskWord(r compact.Risk) string {
	s := string(r)
	if s == "" {
		return "Unknown"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func printInspect(w io.Writer, r compact.InspectReport) {
	title(w, "Context Inspection")
	field(w, "Session", "%s (%s)", r.Session, r.Backend)
	field(w, "Total", "%s tokens (%s of %s, tokenizer %s)", agenttext.Num(r.Tokens), pct(r.Percent), agenttext.Num(r.Window), r.Tokenizer)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Breakdown:")
	field(w, "  Conversation", "%s tokens (%s messages)", agenttext.Num(r.Conversation.Tokens), agenttext.Num(r.Conversation.Messages))
	field(w, "    Tool Outputs", "%s tokens in %s outputs (part of the conversation)", agenttext.Num(r.Conversation.ToolOutputs.Tokens), agenttext.Num(r.Conversation.ToolOutputs.Count))
	field(w, "  System Prompt", "%s tokens", agenttext.Num(r.SystemPrompt.Tokens))
	fmt.Fprintln(w)
	field(w, "Protected", "%s tokens (%s recent messages)", agenttext.Num(r.Protected.Tokens), agenttext.Num(r.Protected.Messages))
	field(w, "Compactable", "%s tokens (%s messages)", agenttext.Num(r.Compactable.Tokens), agenttext.Num(r.Compactable.Messages))
	if len(r.Pinned) > 0 {
		n := 0
		ids := make([]string, 0, len(r.Pinned))
		for _, p := range r.Pinned {
			n += p.Tokens
			ids = append(ids, p.ID)
		}
		field(w, "Pinned", "%s, %s tokens (never compacted): %s", plural.Count(len(r.Pinned), "entry", "entries"), agenttext.Num(n), cli.JoinMax(ids, 8))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Potential Savings:")
	fmt.Fprintf(w, "  %-23s~%s tokens\n", "Layer 1 (prune):", agenttext.Num(r.Savings.Prune))
	fmt.Fprintf(w, "  %-23s~%s tokens\n", "Layer 2 (summarize):", agenttext.Num(r.Savings.Summarize))
	fmt.Fprintf(w, "  %-23s~%s tokens\n", "Layer 3 (full):", agenttext.Num(r.Savings.Full))
}

func printHistory(w io.Writer, r compact.HistoryReport, s compact.Settings, now time.Time) {
	title(w, "Compaction History")
	fmt.Fprintf(w, "Session: %s\n\n", r.Session)
	if len(r.Events) == 0 {
		fmt.Fprintln(w, "No compactions on the active path.")
		fmt.Fprintln(w)
	}
	for _, e := range r.Events {
		when := "unknown time"
		if !e.At.IsZero() {
			when = ago(now, e.At)
		}
		switch {
		case !e.BrainSurgeon:
			who := "HOST"
			fmt.Fprintf(w, "[%s] %s - compaction by the host\n", when, who)
			fmt.Fprintf(w, "  %s tokens before\n", agenttext.Num(e.TokensBefore))
		default:
			fmt.Fprintf(w, "[%s] %s - Layer %d (%s)\n", when, strings.ToUpper(string(e.Trigger)), layerNumber(e.Layer), e.Layer)
			fmt.Fprintf(w, "  %s → %s tokens\n", agenttext.Num(e.TokensBefore), agenttext.Num(e.TokensAfter))
			fmt.Fprintf(w, "  Compacted: %s messages\n", agenttext.Num(e.MessagesCompacted))
			if e.Trigger == compact.TriggerAuto {
				fmt.Fprintf(w, "  Trigger:   threshold reached\n")
			}
			if e.Focus != "" {
				fmt.Fprintf(w, "  Focus:     %q\n", e.Focus)
			}
			if e.Degraded {
				fmt.Fprintf(w, "  Degraded:  yes (summary made without a model)\n")
			}
		}
		fmt.Fprintf(w, "  Entry:     %s, summary %s chars, first kept %s\n\n", e.ID, agenttext.Num(e.SummaryChars), e.FirstKeptEntryID)
	}
	if more := r.Compactions - len(r.Events); more > 0 {
		fmt.Fprintf(w, "(%d older not shown; --depth 0 shows all)\n", more)
	}
	fmt.Fprintf(w, "Total Compactions: %d", r.Compactions)
	if r.OffPath > 0 {
		fmt.Fprintf(w, " (and %d off the active path)", r.OffPath)
	}
	fmt.Fprintln(w)
	var note string
	switch r.Risk {
	case compact.RiskLow:
		note = fmt.Sprintf("recommend fresh start at %d", s.WarnAt)
	case compact.RiskMedium:
		note = fmt.Sprintf("soft limit %d reached; consider a fresh start from brainsurgeon context export", s.WarnAt)
	case compact.RiskHigh:
		note = fmt.Sprintf("hard limit %d reached; start fresh from brainsurgeon context export", s.HardWarnAt)
	}
	fmt.Fprintf(w, "Risk Level:        %s (%s)\n", riskWord(r.Risk), note)
}
