package engine_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestJoin joins a transcript's status report with the engine's status:
// the counts add up, the view's size is the one sent, and the layers and
// the hint are those that can run.
func TestJoin(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := compact.DefaultSettings()
	jsonl := compact.StatusReport{Tokens: 120_000, Window: 128_000, Percent: 93.8, Compactions: 1, Risk: compact.RiskLow, CanCompact: true, Layer: compact.LayerSummarize,
		Warnings:        []string{"context at 93.8% of the window, above the summarize threshold 88%"},
		Recommendations: []string{"brainsurgeon compact (summarizes all but the most recent tokens)"}}
	sqlite := jsonl
	sqlite.CanCompact, sqlite.Refusal = false, "the session is in OpenClaw's SQLite store; compact it with the host's own /compact"
	sqlite.Recommendations = []string{"brainsurgeon compact (summarizes all but the most recent tokens)", "compaction is not possible here: " + sqlite.Refusal}
	served := func(at time.Time, compactions int, warning string) *engine.Status {
		return &engine.Status{Active: true, Compactions: compactions, Warning: warning,
			View: &engine.ViewSize{Turn: 7, At: at, PredictedTokens: 32_000, MeasuredTokens: 30_500, MeasuredTurn: 6}}
	}
	for _, tc := range []struct {
		name        string
		r           compact.StatusReport
		st          *engine.Status
		compactions int
		risk        compact.Risk
		serves      bool
		layers      []compact.Layer
		viewTokens  int
		hint        string // a part of CompactHint, "" for none
		noAdvice    string // a text no warning or recommendation may hold
	}{
		{"no engine", jsonl, nil, 1, compact.RiskLow, false, []compact.Layer{"prune", "summarize", "full"}, 0, "", ""},
		{"no engine, SQLite", sqlite, nil, 1, compact.RiskLow, false, []compact.Layer{"prune"}, 0, "only the prune layer runs here", ""},
		{"engine serves", jsonl, served(now.Add(-time.Minute), 2, ""), 3, compact.RiskMedium, true, []compact.Layer{"prune"}, 32_000,
			"/compact in the chat is answered by it", "brainsurgeon compact"},
		{"engine serves SQLite", sqlite, served(now.Add(-time.Minute), 5, "BrainSurgeon: earlier parts were summarized 5 times"), 6, compact.RiskHigh, true,
			[]compact.Layer{"prune"}, 32_000, "/compact in the chat is answered by it", "host's own /compact"},
		{"engine served long ago", sqlite, served(now.Add(-48*time.Hour), 0, ""), 1, compact.RiskLow, false, []compact.Layer{"prune"}, 32_000,
			"only the prune layer runs here", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := engine.Join(tc.r, tc.st, s, now)
			if f.Compactions != tc.compactions || f.TranscriptCompactions != 1 || f.Risk != tc.risk || f.EngineServes != tc.serves ||
				!slices.Equal(f.Layers, tc.layers) || f.ViewTokens != tc.viewTokens {
				t.Errorf("figures %+v; want %d compactions (1 in the transcript), risk %s, serves %v, layers %v, view %d tokens",
					f, tc.compactions, tc.risk, tc.serves, tc.layers, tc.viewTokens)
			}
			if tc.hint == "" && f.CompactHint != "" || !strings.Contains(f.CompactHint, tc.hint) {
				t.Errorf("compact hint %q; want one holding %q", f.CompactHint, tc.hint)
			}
			if tc.noAdvice != "" {
				for _, x := range slices.Concat(f.Warnings, f.Recommendations) {
					if strings.Contains(x, tc.noAdvice) || strings.HasPrefix(x, "context at ") {
						t.Errorf("advice %q while the engine serves the session", x)
					}
				}
			}
			if tc.st != nil && tc.st.Warning != "" && !slices.Contains(f.Warnings, tc.st.Warning) {
				t.Errorf("warnings %q lack the engine's %q", f.Warnings, tc.st.Warning)
			}
			if tc.serves && f.ViewPercent != 25 {
				t.Errorf("view percent %v, want 25 (32,000 of 128,000)", f.ViewPercent)
			}
		})
	}
	// The transcript's report is not changed.
	if len(sqlite.Recommendations) != 2 || len(jsonl.Warnings) != 1 {
		t.Errorf("Join changed its input: %q %q", sqlite.Recommendations, jsonl.Warnings)
	}
}
