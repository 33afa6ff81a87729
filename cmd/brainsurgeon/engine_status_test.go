package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

func TestEngineStatusOutput(t *testing.T) {
	st := &engine.Status{Active: true, Collapsed: 12, CollapsedChars: 345678, Summaries: 5, TopSummaries: 2, Levels: 2,
		Compactions: 3, Risk: compact.RiskMedium, Warning: "BrainSurgeon: earlier parts were summarized 3 times", Turns: 41, PrefixChanges: 6}
	for _, tc := range []struct {
		name string
		st   *engine.Status
		text []string
		json string
	}{
		{"never served", nil, nil, ""},
		{"served", st, []string{"Context Engine:      12 values collapsed (345,678 chars), 5 summaries (levels 2), 3 compactions",
			"Engine Turns:        41 served, 6 changed the cached prefix", "  ! BrainSurgeon: earlier parts were summarized 3 times"},
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
			j, err := json.Marshal(statusJSON{StatusReport: compact.StatusReport{Session: "main/x"}, Engine: tc.st})
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
