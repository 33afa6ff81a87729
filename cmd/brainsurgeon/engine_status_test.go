package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

func TestEngineStatusOutput(t *testing.T) {
	st := &engine.Status{Active: true, Collapsed: 12, CollapsedChars: 345678, Summaries: 5, TopSummaries: 2, Levels: 2,
		Compactions: 3, Risk: compact.RiskMedium, Warning: "BrainSurgeon: earlier parts were summarized 3 times", Turns: 41, PrefixChanges: 6,
		Last: &engine.Turn{N: 41, ElapsedMS: 12.345}}
	for _, tc := range []struct {
		name string
		st   *engine.Status
		text []string
		json string
	}{
		{"never served", nil, nil, ""},
		{"served", st, []string{"Context Engine:      12 values collapsed (345,678 chars), 5 summaries (levels 2), 3 compactions",
			"Engine Turns:        41 served, 6 changed the cached prefix; the last took 12.3 ms", "  ! BrainSurgeon: earlier parts were summarized 3 times"},
			`"engine":{"active":true,"collapsed":12,"collapsed_chars":345678,"summaries":5,"top_summaries":2,"levels":2,"compactions":3,"risk":"medium"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printEngineStatus(&b, tc.st)
			if tc.st == nil && b.Len() != 0 {
				t.Errorf("printed %q for a session the engine never served", b.String())
			}
			for _, w := range tc.text {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text %q lacks %q", b.String(), w)
				}
			}
			j, err := json.Marshal(engine.Join(compact.StatusReport{Session: "main/x"}, tc.st, compact.Settings{}, time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(j), `"session":"main/x"`) {
				t.Errorf("json %s lacks the status report's members", j)
			}
			if tc.json == "" && strings.Contains(string(j), `"engine"`) {
				t.Errorf("json %s has an engine member for a session the engine never served", j)
			}
			if !strings.Contains(string(j), tc.json) {
				t.Errorf("json %s lacks %s", j, tc.json)
			}
		})
	}
}

// TestStatusWithEngine prints the context status of a SQLite session the
// engine serves: the size sent to the model beside the stored
// transcript's, labelled; the compactions counted with the engine's; and
// the compaction hint that can run (no "not possible here", no "host's
// own /compact").
func TestStatusWithEngine(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rep := compact.StatusReport{Session: "main/x", Backend: "sqlite", Tokens: 71_856, Window: 131_072, Percent: 54.8, Risk: compact.RiskLow,
		Refusal:  "the session is in OpenClaw's SQLite store, where BrainSurgeon never inserts rows; compact it with the host's own /compact",
		Warnings: []string{}, Recommendations: []string{}}
	st := &engine.Status{Active: true, Compactions: 1, Turns: 9, View: &engine.ViewSize{Turn: 9, At: now.Add(-5 * time.Minute),
		PredictedTokens: 21_000, MeasuredTokens: 20_480, MeasuredTurn: 8, Chars: 51_000, HostChars: 281_000, Messages: 12, HostMessages: 40}}
	var b strings.Builder
	printStatus(&b, engine.Join(rep, st, compact.Settings{}, now), compact.DefaultSettings(), now)
	out := b.String()
	for _, w := range []string{
		"Sent to the Model:   21,000 / 131,072 tokens (16%) predicted, 20,480 measured (view 8): the last view (9, 5 minutes ago), 12 of the host's 40 messages, 51,000 of their 281,000 characters",
		"Stored Transcript:   71,856 / 131,072 tokens (54.8%): the next turn's context without the engine",
		"Compaction Count:    1 (1 by the context engine, 0 in the transcript)",
		"Compaction:          by the context engine: it summarizes the model's view when the thresholds are crossed, and /compact in the chat is answered by it",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	for _, bad := range []string{"not possible here", "host's own /compact", "Total Tokens"} {
		if strings.Contains(out, bad) {
			t.Errorf("status says %q while the engine serves the session:\n%s", bad, out)
		}
	}
}
