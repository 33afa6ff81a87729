package brainsurgeon_test

import (
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestIsMessageLine(t *testing.T) {
	for _, tt := range []struct {
		typ, raw string
		want     bool
	}{
		{"message", `{"type":"message","message":{"role":"user","content":"x"}}`, true},
		{"custom_message", `{"type":"custom_message","content":"x"}`, true},
		{"branch_summary", `{"type":"branch_summary","summary":"tried X"}`, true},
		{"branch_summary", `{"type":"branch_summary","summary":" "}`, true},
		{"branch_summary", `{"type":"branch_summary","summary":1}`, true},
		{"branch_summary", `{"type":"branch_summary","summary":{}}`, true},
		{"branch_summary", `{"type":"branch_summary","summary":""}`, false},
		{"branch_summary", `{"type":"branch_summary"}`, false},
		{"branch_summary", `{"type":"branch_summary","summary":null}`, false},
		{"branch_summary", `{"type":"branch_summary","summary":false}`, false},
		{"branch_summary", `{"type":"branch_summary","summary":0}`, false},
		{"branch_summary", `{"type":"branch_summary","summary":-0.0}`, false},
		{"compaction", `{"type":"compaction","summary":"s"}`, false},
		{"custom", `{"type":"custom","customType":"x"}`, false},
		{"model_change", `{"type":"model_change"}`, false},
	} {
		if got := bs.IsMessageLine(tt.typ, []byte(tt.raw)); got != tt.want {
			t.Errorf("IsMessageLine(%s, %s) = %v, want %v", tt.typ, tt.raw, got, tt.want)
		}
		if got, want := bs.IsMessageType(tt.typ), tt.typ == "message" || tt.typ == "custom_message" || tt.typ == "branch_summary"; got != want {
			t.Errorf("IsMessageType(%s) = %v, want %v", tt.typ, got, want)
		}
	}
}
