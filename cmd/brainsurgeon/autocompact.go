package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
)

const autocompactUsage = `Usage: brainsurgeon autocompact [on|off] [--json] [--agents-dir DIR]

Turns the daemon's automatic compaction on or off (compaction.auto_enabled in
.brainsurgeon/config.json beside the agents dir, saved atomically), and
prints the new state. Without an argument, prints the state. When on, the
daemon (brainsurgeon serve), after each scheduled pass (auto_cron), checks
every session that changed and has been left alone for
compaction.auto_quiet_seconds (300), and compacts those above the thresholds
(prune 80%, summarize 88%, full 95% of the window by default).

Examples:
  brainsurgeon autocompact
  brainsurgeon autocompact on
  brainsurgeon autocompact off --json

Flags:
`

type autocompactCommand struct{ m *Main }

// autocompactOutput is the JSON output of autocompact.
type autocompactOutput struct {
	AutoEnabled             bool    `json:"auto_enabled"`
	Changed                 bool    `json:"changed"`
	Config                  string  `json:"config"`
	PruneTriggerPercent     float64 `json:"prune_trigger_percent"`
	SummarizeTriggerPercent float64 `json:"summarize_trigger_percent"`
	FullTriggerPercent      float64 `json:"full_trigger_percent"`
	AutoQuietSeconds        int     `json:"auto_quiet_seconds"`
}

func (c *autocompactCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("brainsurgeon autocompact", flag.ContinueOnError)
	agentsDir := fs.String("agents-dir", config.DefaultAgentsDir(), "OpenClaw agents dir (the config is beside it)")
	asJSON := fs.Bool("json", false, "print the state as JSON")
	pos, err := cli.ParseHelp(fs, args, c.m.Stdout, autocompactUsage)
	if err != nil {
		return err
	}
	try := "brainsurgeon autocompact --help"
	want := -1
	switch {
	case len(pos) > 1:
		return &cli.UsageError{Msg: fmt.Sprintf("autocompact takes on, off or nothing, got %q", pos), Try: try}
	case len(pos) == 1 && pos[0] == "on":
		want = 1
	case len(pos) == 1 && pos[0] == "off":
		want = 0
	case len(pos) == 1:
		return &cli.UsageError{Msg: fmt.Sprintf("autocompact takes on or off, got %q", pos[0]), Try: try}
	}
	cfg, _, err := c.m.loadConfig(ctx, *agentsDir, false)
	if err != nil {
		return err
	}
	out := autocompactOutput{Config: config.Path(*agentsDir)}
	if want >= 0 && cfg.Compaction.AutoEnabled != (want == 1) {
		cfg.Compaction.AutoEnabled = want == 1
		if err := config.Save(*agentsDir, cfg); err != nil {
			return err
		}
		out.Changed = true
	}
	cp := cfg.Compaction
	out.AutoEnabled = cp.AutoEnabled
	out.PruneTriggerPercent, out.SummarizeTriggerPercent, out.FullTriggerPercent = cp.PruneTriggerPercent, cp.SummarizeTriggerPercent, cp.FullTriggerPercent
	out.AutoQuietSeconds = cp.AutoQuietSeconds
	if *asJSON {
		return cli.WriteJSON(c.m.Stdout, out, nil)
	}
	state := "off"
	if out.AutoEnabled {
		state = fmt.Sprintf("on (prune at %s, summarize at %s, full at %s; after %d s idle)", pct(cp.PruneTriggerPercent), pct(cp.SummarizeTriggerPercent), pct(cp.FullTriggerPercent), cp.AutoQuietSeconds)
	}
	verb := "is"
	if out.Changed {
		verb = "is now"
	}
	fmt.Fprintf(c.m.Stdout, "Auto-compaction %s %s (%s)\n", verb, state, out.Config)
	return nil
}
