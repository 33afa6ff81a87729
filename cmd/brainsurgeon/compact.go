package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

const compactUsage = `Usage: brainsurgeon compact [--session S] [--focus TEXT] [--layer prune|summarize|full] [--dry-run] [--yes] [--tokenizer T] [--json] [--agents-dir DIR]

Compacts one session's context now, in the host's own format, so the host
applies it on its next turn:
  prune (layer 1)      moves old tool output and thinking out to side files
                       (the extraction engine), protecting the most recent
                       40,000 tokens;
  summarize (layer 2)  appends a compaction entry whose summary replaces
                       everything but the most recent 25,000 tokens;
  full (layer 3)       the same, keeping only the last turn.
Without --layer the thresholds of the config's "compaction" object choose
(80% / 88% / 95% of the window by default), and nothing happens below them.
Entries marked _extractable: false are never compacted away: their lines are
carried into the summary verbatim. Prints the tokens before and after.

Summaries come from the model of compaction.summarizer in the config (or
BRAINSURGEON_SUMMARY_MODEL / _BASE_URL, key from BRAINSURGEON_SUMMARY_API_KEY,
OPENAI_API_KEY or OPENROUTER_API_KEY), with a normal then an aggressive
prompt; if that fails, or no model is configured, the deterministic
extractive summary is used and the result says "degraded".

When BrainSurgeon's context engine serves the session (it sent the model a
view within the last 24 hours), its summaries live in the model's view and
/compact in the chat is answered by it: here only the prune layer runs
(without --layer it is the one chosen), and --layer summarize or full is
refused (exit 1).

A session in use (a run in flight, a live lock, or modified within
idle_seconds) is refused. Asks for confirmation on a terminal; elsewhere
--yes is required. --dry-run previews with the deterministic summarizer and
writes nothing. --session defaults to the most recently modified session of
agent main.

Exit status: 0 done (or nothing to do), 1 refused or failed, 2 usage.

Examples:
  brainsurgeon compact --dry-run
  brainsurgeon compact --session agent:main:main --focus "keep the API design decisions" --yes
  brainsurgeon compact --layer prune --yes --json

Flags:
`

type compactCommand struct{ m *Main }

// compactOutput is the JSON output of compact: the library's result and
// how the summary was made.
type compactOutput struct {
	compact.Result
	// Summarizer names what wrote the summary ("" when none was made).
	Summarizer    string           `json:"summarizer"`
	SummarySteps  []summarize.Step `json:"summary_steps"`
	SessionChosen bool             `json:"session_chosen"`
}

func (c *compactCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon compact", flag.ContinueOnError)
	var sf sessionFlags
	sf.register(fs)
	focus := fs.String("focus", "", "what the summary must keep (goes into the summarizer's prompt)")
	layerName := fs.String("layer", "", "force a layer: prune, summarize or full (default: chosen by the thresholds)")
	dry := fs.Bool("dry-run", false, "preview the compaction (deterministic summarizer), write nothing")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	tokName := fs.String("tokenizer", "", "token counting: calibrated, o200k or chars/4 (default: the config's, else calibrated)")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, compactUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon compact --help"
	if len(pos) > 0 {
		return &cli.UsageError{Msg: fmt.Sprintf("compact takes no arguments, got %q (name the session with --session)", pos), Try: try}
	}
	layer, err := compact.ParseLayer(*layerName)
	if err != nil {
		return &cli.UsageError{Msg: "--layer: " + bs.ErrorMessage(err), Try: try}
	}
	if err := checkTokenizer(*tokName, try); err != nil {
		return err
	}
	if err := sf.checkAgentsDir(); err != nil {
		return err
	}
	confirm := !*dry && !*yes
	if confirm && !isTerminalReader(c.m.Stdin) {
		return &cli.UsageError{Msg: "compact writes into the session's transcript and needs confirmation: stdin is not a terminal, so pass --yes (or --dry-run to preview)", Try: try}
	}
	t, err := c.m.openTarget(ctx, &sf)
	if err != nil {
		return err
	}
	tok, err := tokenOptions(*tokName, t.cfg, t.set.AgentsDir, c.m.logger())
	if err != nil {
		return err
	}
	log := c.m.logger()
	// The summarizer of the config's compaction object and the
	// environment, as the API and the daemon build it: the model with the
	// normal prompt, then the aggressive one, then the deterministic
	// summarizer (alone, and the summary degraded, when no model is
	// configured).
	tools, err := compactwire.New(t.cfg.Compaction, log)
	if err != nil {
		return err
	}
	sum, model := tools.Summarizer(), tools.Model
	o := compact.Options{
		Layer: layer, Focus: *focus, Trigger: compact.TriggerManual, DryRun: *dry,
		Summarizer: sum, Settings: compact.FromConfig(t.cfg.Compaction), Tokens: tok,
		Side: t.set.Side, Policy: extract.FromConfig(t.cfg), Logger: log,
	}
	// A session the context engine serves: only the prune layer runs on
	// its transcript, as through the API (engine.CompactLayer).
	if o.Layer, err = engine.CompactLayer(t.ref, o.Layer, engineStatus(ctx, t, o.Settings, log), time.Now()); err != nil {
		return err
	}
	// The prune layer uses the config's extraction policy, without its age
	// protection: the recent tokens are protected instead.
	o.Policy.Enabled, o.Policy.AgeThreshold = true, 0
	if *dry || confirm {
		// Previews never call a model: the deterministic summary is free.
		o.Summarizer = compactwire.Deterministic()
		o.DryRun = true
	}
	if confirm {
		if err := t.set.Store.CheckIdle(ctx, t.ref); err != nil {
			return fmt.Errorf("compact %s: refused, the session is in use: %w", t.ref, err)
		}
		prev, err := compact.Compact(ctx, t.set.Store, t.ref, o)
		if err != nil {
			return err
		}
		if prev.Layer == compact.LayerNone || strings.HasPrefix(prev.Warning, "not written") || (prev.Layer != compact.LayerPrune && prev.FirstKeptEntryID == "") ||
			(prev.Layer == compact.LayerPrune && (prev.Prune == nil || prev.Prune.Entries == 0)) {
			printCompact(c.m.Stdout, prev, o.Summarizer.(*compactwire.Summarizer), true)
			return nil
		}
		fmt.Fprintf(c.m.Stderr, "Compact %s with layer %d (%s): %s → ~%s tokens, %s messages summarized",
			t.ref, layerNumber(prev.Layer), prev.Layer, agenttext.Num(prev.TokensBefore), agenttext.Num(prev.TokensAfter), agenttext.Num(prev.MessagesCompacted))
		if prev.Layer == compact.LayerPrune && prev.Prune != nil {
			fmt.Fprintf(c.m.Stderr, " (%s extracted)", plural.Count(prev.Prune.Entries, "entry", "entries"))
		}
		fmt.Fprint(c.m.Stderr, ". Proceed? [y/N] ")
		line, _ := bufio.NewReader(c.m.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return fmt.Errorf("compact %s: not confirmed (answered %q, expected y): nothing written", t.ref, strings.TrimSpace(line))
		}
		o.Summarizer, o.DryRun = sum, false
	}
	res, err := compact.Compact(ctx, t.set.Store, t.ref, o)
	used := o.Summarizer.(*compactwire.Summarizer)
	if sf.json {
		out := compactOutput{Result: res, SummarySteps: used.Last().Steps, SessionChosen: t.chosen}
		if res.Summary != "" {
			out.Summarizer = used.Name()
		}
		if out.SummarySteps == nil {
			out.SummarySteps = []summarize.Step{}
		}
		return cli.WriteJSON(c.m.Stdout, out, err)
	}
	if err != nil {
		return err
	}
	printCompact(c.m.Stdout, res, used, *dry)
	if *dry && model != "" {
		fmt.Fprintf(c.m.Stdout, "Note:       the preview used the deterministic summarizer; the model (%s) writes the real summary\n", model)
	}
	return nil
}

// layerNumber is a layer's number as the messages write it ("Layer 2").
func layerNumber(l compact.Layer) int {
	switch l {
	case compact.LayerPrune:
		return 1
	case compact.LayerSummarize:
		return 2
	case compact.LayerFull:
		return 3
	}
	return 0
}

func printCompact(w io.Writer, r compact.Result, s *compactwire.Summarizer, dry bool) {
	if r.Layer == compact.LayerNone {
		fmt.Fprintf(w, "Nothing to do for %s: %s\n", r.Session, strings.TrimPrefix(r.Warning, "nothing to do: "))
		fmt.Fprintf(w, "Tokens:     %s\n", agenttext.Num(r.TokensBefore))
		fmt.Fprintln(w, "Force a layer with --layer prune|summarize|full.")
		return
	}
	if r.Layer == compact.LayerPrune && (r.Prune == nil || r.Prune.Entries == 0) {
		why := strings.TrimPrefix(r.Warning, "prune: ")
		if why == "" {
			why = "nothing to extract"
		}
		fmt.Fprintf(w, "Nothing pruned in %s with layer 1 (prune): %s\n", r.Session, why)
		fmt.Fprintf(w, "Tokens:     %s\n", agenttext.Num(r.TokensBefore))
		return
	}
	if r.Layer != compact.LayerPrune && r.FirstKeptEntryID == "" {
		fmt.Fprintf(w, "Nothing to compact in %s with layer %d (%s): %s\n", r.Session, layerNumber(r.Layer), r.Layer, strings.TrimPrefix(r.Warning, "nothing to compact: "))
		fmt.Fprintf(w, "Tokens:     %s\n", agenttext.Num(r.TokensBefore))
		return
	}
	head := "Compacted"
	if dry {
		head = "Dry run (nothing written): would compact"
	}
	written := r.EntryID != "" || (r.Layer == compact.LayerPrune && r.Prune != nil && r.Prune.Entries > 0 && !dry)
	if !dry && !written && r.Layer != compact.LayerPrune {
		head = "Not compacted"
	}
	fmt.Fprintf(w, "%s %s — layer %d (%s)\n", head, r.Session, layerNumber(r.Layer), r.Layer)
	saved := r.TokensBefore - r.TokensAfter
	pct := 0.0
	if r.TokensBefore > 0 {
		pct = float64(saved) * 100 / float64(r.TokensBefore)
	}
	fmt.Fprintf(w, "Tokens:     %s → %s (−%s, %.1f%%)\n", agenttext.Num(r.TokensBefore), agenttext.Num(r.TokensAfter), agenttext.Num(saved), pct)
	if r.Layer == compact.LayerPrune {
		if r.Prune != nil {
			fmt.Fprintf(w, "Extracted:  %s, %s, %s bytes out of the transcript\n", plural.Count(r.Prune.Entries, "entry", "entries"), plural.Count(r.Prune.Values, "value", "values"), agenttext.Num(int(r.Prune.BytesSaved)))
		}
	} else {
		fmt.Fprintf(w, "Compacted:  %s messages; first kept entry %s\n", agenttext.Num(r.MessagesCompacted), r.FirstKeptEntryID)
		if r.EntryID != "" {
			fmt.Fprintf(w, "Entry:      compaction %s appended\n", r.EntryID)
		}
		sum := s.Name()
		if r.Degraded {
			sum += " (degraded: " + r.DegradedReason + ")"
		}
		fmt.Fprintf(w, "Summary:    %s characters by %s\n", agenttext.Num(len([]rune(r.Summary))), sum)
		if r.Pinned > 0 {
			fmt.Fprintf(w, "Pinned:     %s carried into the summary verbatim\n", plural.Count(r.Pinned, "entry", "entries"))
		}
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "Warning:    %s\n", x)
	}
}
