// Package compactwire builds what package compact needs from the runtime
// config and the environment: the thresholds, the token counting and the
// summarizer. The daemon and the REST API share it, so that a compaction
// asked for in the UI and one the daemon runs count and summarize alike.
package compactwire

import (
	"context"
	"fmt"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/hostconfig"
	"github.com/brainsurgeon/brainsurgeon/summarize"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// Tools are the pieces of one compaction setup.
type Tools struct {
	// Settings are the thresholds of the config's "compaction" object.
	Settings compact.Settings
	// Tokens say how tokens are counted (the config's "tokenizer").
	Tokens compact.TokenOptions
	// Escalate escalates from the configured model (when one is) to
	// the deterministic summarizer. Use Summarizer() per call: it
	// remembers why the last summary degraded.
	Escalate *summarize.Escalate
	// Model names the model summarizer ("" when only the deterministic
	// summarizer is used).
	Model string
	// first names what writes a summary when nothing fails: the model
	// summarizer's name, or "" for the deterministic summarizer.
	first string
}

// TokenOptions returns the token counting named name: "calibrated" (the
// default, also for ""): the transcript's own recorded usage learned over
// the chars/4 count; "o200k" (exact BPE, about 1.5 MB/s); "chars/4". An
// unknown name is an error wrapping bs.ErrInvalid.
//
// The calibrated count uses chars/4 as its base, not o200k: on the corpus
// both stay well inside the 5 % goal (TestAccuracy in package tokens, first
// turn after a compaction: median 2.96 % over chars/4, 0.65 % over o200k;
// next turn: 0.07 % and 0.05 %), while o200k takes seconds per 10 MB
// transcript, too slow for a gauge the UI asks for on every session view.
func TokenOptions(name string) (compact.TokenOptions, error) {
	switch name {
	case "", config.TokenizerCalibrated:
		return compact.Calibrated(tokens.CharsPer4{}), nil
	}
	t, err := tokens.New(name)
	if err != nil {
		return compact.TokenOptions{}, err
	}
	return compact.TokenOptions{Tokenizer: t}, nil
}

// New returns the tools of the config c. The summarizer's model comes
// from the config's summarizer object, else from the environment
// (summarize.FromEnv: BRAINSURGEON_SUMMARY_MODEL, _BASE_URL, and the key
// from BRAINSURGEON_SUMMARY_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY;
// the key never comes from the config). With no model named anywhere the
// summarizer is the deterministic one alone.
func New(c config.Compaction, log bs.Logger) (Tools, error) {
	tok, err := TokenOptions(c.Tokenizer)
	if err != nil {
		return Tools{}, fmt.Errorf("compaction tokenizer: %w", err)
	}
	// Without a model the deterministic summary is what was asked for:
	// the Escalate logs no warning then (the result still says degraded).
	t := Tools{Settings: compact.FromConfig(c), Tokens: tok,
		Escalate: &summarize.Escalate{Fallback: &summarize.Deterministic{}}}
	o := summarize.FromEnv()
	sc := c.Summarizer
	if sc.BaseURL != "" {
		o.BaseURL = sc.BaseURL
	}
	if sc.Model != "" {
		o.Model = sc.Model
	}
	if o.Model == "" {
		return t, nil
	}
	o.Temperature = sc.Temperature
	if sc.MaxTokens > 0 {
		o.MaxTokens = sc.MaxTokens
	}
	if sc.TimeoutSeconds > 0 {
		o.Timeout = time.Duration(sc.TimeoutSeconds) * time.Second
	}
	o.Retries = max(sc.Retries, 0)
	o.Logger = log
	t.Escalate.Model, t.Escalate.Logger, t.Model, t.first = o, log, o.Model, o.Name()
	return t, nil
}

// Summarizer returns a summarizer for one compaction: it summarizes with
// t.Escalate, whose Summary says why it degraded and what wrote it. The
// zero Tools gives the deterministic summarizer alone.
func (t Tools) Summarizer() *Summarizer {
	if t.Escalate == nil {
		return Deterministic()
	}
	return &Summarizer{e: t.Escalate, first: t.first}
}

// Deterministic returns a Summarizer that never calls a model: the
// deterministic summarizer alone (a preview's, or when no model is
// configured).
func Deterministic() *Summarizer {
	return &Summarizer{e: &summarize.Escalate{Fallback: &summarize.Deterministic{}}}
}

// Summarizer is a summarize.Escalate that remembers its last summary with
// the steps it took (Last), and names what writes its summaries (Name).
// Make one with Tools.Summarizer or Deterministic: the zero Summarizer has
// no escalation to call.
// The CLI, the REST API and the daemon all summarize through it. It is safe for concurrent use; Last describes the summary
// that finished last.
type Summarizer struct {
	e *summarize.Escalate
	// first is the model summarizer's name, or "" when there is none.
	first string
	mu    sync.Mutex
	s     summarize.Summary
}

var _ compact.Summarizer = (*Summarizer)(nil)

// Summarize summarizes messages through the escalation and remembers how
// (also when it fails: Last then tells the attempts made).
func (d *Summarizer) Summarize(ctx context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	s, err := d.e.SummarizeDetailed(ctx, messages, focus)
	d.mu.Lock()
	d.s = s
	d.mu.Unlock()
	if err != nil {
		return compact.Summary{}, err
	}
	return compact.Summary{Text: s.Text, Degraded: s.Degraded, Reason: s.Reason, Method: s.Summarizer}, nil
}

// Last returns the last summary with how it was made (the zero Summary
// before any).
func (d *Summarizer) Last() summarize.Summary {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.s
}

// Name names what wrote the last summary ("openai:<model>",
// "deterministic"); before any summary, the escalation's first choice: its
// model's name when it has a model, else the deterministic summarizer's.
func (d *Summarizer) Name() string {
	if n := d.Last().Summarizer; n != "" {
		return n
	}
	if d.first != "" {
		return d.first
	}
	if d.e.Fallback == nil {
		return (&summarize.Deterministic{}).Name()
	}
	return d.e.Fallback.Name()
}

// HostWindow returns the compact.WindowFunc that takes a session's context
// window from the host's config beside agentsDir (OpenClaw's
// openclaw.json and the agent's models.json; see internal/hostconfig),
// read only. A host config that cannot be read names no window (the model
// table and our config apply) and is logged to log, once per change of
// the message.
func HostWindow(agentsDir string, log bs.Logger) compact.WindowFunc {
	r := hostconfig.New(agentsDir)
	var mu sync.Mutex
	last := ""
	return func(ref bs.SessionRef, model string) (compact.Window, bool) {
		w, ok, err := r.Window(ref.Agent, model)
		if err != nil {
			mu.Lock()
			if err.Error() != last && log != nil {
				log.Warn("host config not read; the context window comes from the model table or the config", "error", err.Error())
			}
			last = err.Error()
			mu.Unlock()
			return compact.Window{}, false
		}
		if !ok {
			return compact.Window{}, false
		}
		return compact.Window{Tokens: w.Tokens, Source: compact.WindowHostConfig, From: w.From}, true
	}
}
