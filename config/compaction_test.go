package config_test

import (
	"errors"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
)

func TestCompactionDefaultsValid(t *testing.T) {
	if err := config.DefaultCompaction().Validate(); err != nil {
		t.Fatal(err)
	}
	c := config.DefaultCompaction()
	if c.AutoEnabled || c.ContextWindow != 200000 || c.PruneTriggerPercent != 80 || c.PruneMinToolTokens != 50000 ||
		c.PruneProtectRecent != 40000 || c.SummarizeTriggerPercent != 88 || c.SummarizeKeepRecent != 25000 ||
		c.FullTriggerPercent != 95 || c.WarnAt != 3 || c.HardWarnAt != 5 || c.AutoQuietSeconds != 300 || c.Tokenizer != "calibrated" {
		t.Errorf("DefaultCompaction() = %+v", c)
	}
}

func TestCompactionMerge(t *testing.T) {
	for _, tt := range []struct {
		name   string
		patch  string
		check  func(c config.Compaction) bool
		fields []config.FieldError
	}{
		{name: "OneMemberKeepsTheOthers", patch: `{"compaction":{"auto_enabled":true}}`,
			check: func(c config.Compaction) bool {
				d := config.DefaultCompaction()
				d.AutoEnabled = true
				return c == d
			}},
		{name: "NestedSummarizer", patch: `{"compaction":{"summarizer":{"base_url":"http://localhost:11434/v1","model":"qwen3"}}}`,
			check: func(c config.Compaction) bool {
				return c.Summarizer.BaseURL == "http://localhost:11434/v1" && c.Summarizer.Model == "qwen3" && c.Summarizer.Retries == 3
			}},
		{name: "BadValuesNamed", patch: `{"compaction":{"context_window":10,"prune_trigger_percent":0,"warn_at":6,"tokenizer":"gpt2","summarizer":{"temperature":3,"base_url":"ftp://x"}}}`,
			fields: []config.FieldError{
				{Field: "compaction.context_window", Message: "must be 1000 or more, got 10"},
				{Field: "compaction.prune_trigger_percent", Message: "must be a number above 0 and at most 100, got 0"},
				{Field: "compaction.hard_warn_at", Message: "must be warn_at (6) or more, got 5"},
				{Field: "compaction.tokenizer", Message: `must be "calibrated", "o200k" or "chars/4", got "gpt2"`},
				{Field: "compaction.summarizer.base_url", Message: `must be empty or an http:// or https:// URL, got "ftp://x"`},
				{Field: "compaction.summarizer.temperature", Message: "must be between 0 and 2, got 3"},
			}},
		{name: "WrongType", patch: `{"compaction":{"context_window":"big"}}`,
			fields: []config.FieldError{{Field: "compaction", Message: `context_window: expected an integer, got a string ("big")`}}},
		{name: "UnknownMember", patch: `{"compaction":{"window":5}}`,
			fields: []config.FieldError{{Field: "compaction", Message: `unknown member "window" (allowed: auto_enabled, context_window, prune_trigger_percent, prune_min_tool_tokens, prune_protect_recent, summarize_trigger_percent, summarize_keep_recent, full_trigger_percent, warn_at, hard_warn_at, auto_quiet_seconds, tokenizer, summarizer)`}}},
		{name: "NotAnObject", patch: `{"compaction":true}`,
			fields: []config.FieldError{{Field: "compaction", Message: "expected an object, got true"}}},
		{name: "SecretNotAccepted", patch: `{"compaction":{"summarizer":{"api_key":"sk-1"}}}`,
			fields: []config.FieldError{{Field: "compaction", Message: `summarizer: unknown member "api_key" (allowed: base_url, model, temperature, max_tokens, timeout_seconds, retries)`}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default()
			err := c.Merge([]byte(tt.patch))
			if tt.fields == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !tt.check(c.Compaction) {
					t.Errorf("after merge: %+v", c.Compaction)
				}
				return
			}
			var ve *config.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v, want a ValidationError", err)
			}
			if len(ve.Errors) != len(tt.fields) {
				t.Fatalf("errors %q, want %q", ve.Errors, tt.fields)
			}
			for i := range tt.fields {
				if ve.Errors[i] != tt.fields[i] {
					t.Errorf("error %d = %q, want %q", i, ve.Errors[i], tt.fields[i])
				}
			}
			if c.Compaction != config.DefaultCompaction() {
				t.Errorf("a failed merge changed the config: %+v", c.Compaction)
			}
		})
	}
}

func TestCompactionDecodePartial(t *testing.T) {
	c, added, err := config.Decode([]byte(`{"compaction":{"context_window":128000,"summarizer":{"model":"m"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range added {
		if a == "compaction" {
			t.Error("compaction reported as added although present")
		}
	}
	d := config.DefaultCompaction()
	d.ContextWindow = 128000
	d.Summarizer.Model = "m"
	if c.Compaction != d {
		t.Errorf("decoded %+v, want %+v", c.Compaction, d)
	}
}
