package config

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Tokenizer names accepted in Compaction.Tokenizer.
const (
	// TokenizerCalibrated scales a base count by the transcript's own
	// recorded usage (the default).
	TokenizerCalibrated = "calibrated"
	// TokenizerO200k is the exact o200k BPE.
	TokenizerO200k = "o200k"
	// TokenizerCharsPer4 counts one token per four bytes, as OpenClaw does.
	TokenizerCharsPer4 = "chars/4"
)

// Compaction is the "compaction" object of the config file: the thresholds
// of the layered compaction (layer 1 extraction, layer 2 summary, layer 3
// full compaction, each at a percentage of the model's window) and the
// summarizer's settings. The summarizer's API key is never stored here: it
// comes from the environment only (BRAINSURGEON_SUMMARY_API_KEY,
// OPENAI_API_KEY or OPENROUTER_API_KEY).
type Compaction struct {
	// AutoEnabled turns automatic compaction by the daemon on. It defaults
	// to false.
	AutoEnabled bool `json:"auto_enabled"`
	// ContextWindow is the model's context window in tokens. It defaults to
	// 200000 and must be 1000 or more.
	ContextWindow int `json:"context_window"`
	// PruneTriggerPercent is the share of the window above which the prune
	// layer runs (with PruneMinToolTokens). It defaults to 80.
	PruneTriggerPercent float64 `json:"prune_trigger_percent"`
	// PruneMinToolTokens is the tool-output size above which the prune
	// layer runs. It defaults to 50000 and must be 0 or more.
	PruneMinToolTokens int `json:"prune_min_tool_tokens"`
	// PruneProtectRecent is how many of the most recent tokens the prune
	// layer never touches. It defaults to 40000 and must be 0 or more.
	PruneProtectRecent int `json:"prune_protect_recent"`
	// SummarizeTriggerPercent is the share of the window above which the
	// summarize layer runs. It defaults to 88.
	SummarizeTriggerPercent float64 `json:"summarize_trigger_percent"`
	// SummarizeKeepRecent is how many of the most recent tokens the
	// summarize layer keeps. It defaults to 25000 and must be 0 or more.
	SummarizeKeepRecent int `json:"summarize_keep_recent"`
	// FullTriggerPercent is the share of the window above which the full
	// layer runs. It defaults to 95.
	FullTriggerPercent float64 `json:"full_trigger_percent"`
	// WarnAt and HardWarnAt are the compaction counts on the active path
	// from which status warns softly (3) and hard (5). Both must be 1 or
	// more, and HardWarnAt must not be below WarnAt.
	WarnAt     int `json:"warn_at"`
	HardWarnAt int `json:"hard_warn_at"`
	// AutoQuietSeconds is how long a session must have been left alone
	// before an automatic compaction. It defaults to 300 and must be 0 or
	// more.
	AutoQuietSeconds int `json:"auto_quiet_seconds"`
	// Tokenizer names the token counting method: "calibrated" (the
	// default), "o200k" or "chars/4".
	Tokenizer string `json:"tokenizer"`
	// Summarizer configures the OpenAI-compatible summarizer.
	Summarizer Summarizer `json:"summarizer"`
}

// Summarizer is the "summarizer" object inside "compaction": an
// OpenAI-compatible chat-completions endpoint.
type Summarizer struct {
	// BaseURL is the API's base URL, such as "https://openrouter.ai/api/v1"
	// or "http://localhost:11434/v1"; "" (the default) means the
	// deterministic summarizer only.
	BaseURL string `json:"base_url"`
	// Model is the model name; "" by default.
	Model string `json:"model"`
	// Temperature is the sampling temperature, 0 to 2. It defaults to 0.2.
	Temperature float64 `json:"temperature"`
	// MaxTokens bounds the summary's length in tokens. It defaults to 13107
	// (pi's 0.8 × 16384) and must be 1 or more.
	MaxTokens int `json:"max_tokens"`
	// TimeoutSeconds bounds one request. It defaults to 120 and must be 1
	// or more.
	TimeoutSeconds int `json:"timeout_seconds"`
	// Retries is how many times a failed request is retried. It defaults
	// to 3 and must be 0 or more.
	Retries int `json:"retries"`
}

// DefaultCompaction returns the defaults of the "compaction" object.
func DefaultCompaction() Compaction {
	return Compaction{
		AutoEnabled:             false,
		ContextWindow:           200000,
		PruneTriggerPercent:     80,
		PruneMinToolTokens:      50000,
		PruneProtectRecent:      40000,
		SummarizeTriggerPercent: 88,
		SummarizeKeepRecent:     25000,
		FullTriggerPercent:      95,
		WarnAt:                  3,
		HardWarnAt:              5,
		AutoQuietSeconds:        300,
		Tokenizer:               TokenizerCalibrated,
		Summarizer: Summarizer{
			Temperature:    0.2,
			MaxTokens:      13107,
			TimeoutSeconds: 120,
			Retries:        3,
		},
	}
}

// subField is one member of a nested object of the config.
type subField[T any] struct {
	name   string
	decode func(c *T, v jsontext.Value) string
	check  func(c *T) string
}

// compactionFields lists the members of Compaction in struct order.
var compactionFields = []subField[Compaction]{
	{"auto_enabled", func(c *Compaction, v jsontext.Value) string { return decodeBool(v, &c.AutoEnabled) }, nil},
	{"context_window", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.ContextWindow) },
		func(c *Compaction) string { return atLeast(c.ContextWindow, 1000) }},
	{"prune_trigger_percent", func(c *Compaction, v jsontext.Value) string { return decodeFloat(v, &c.PruneTriggerPercent) },
		func(c *Compaction) string { return checkPercent(c.PruneTriggerPercent) }},
	{"prune_min_tool_tokens", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.PruneMinToolTokens) },
		func(c *Compaction) string { return atLeast(c.PruneMinToolTokens, 0) }},
	{"prune_protect_recent", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.PruneProtectRecent) },
		func(c *Compaction) string { return atLeast(c.PruneProtectRecent, 0) }},
	{"summarize_trigger_percent", func(c *Compaction, v jsontext.Value) string { return decodeFloat(v, &c.SummarizeTriggerPercent) },
		func(c *Compaction) string { return checkPercent(c.SummarizeTriggerPercent) }},
	{"summarize_keep_recent", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.SummarizeKeepRecent) },
		func(c *Compaction) string { return atLeast(c.SummarizeKeepRecent, 0) }},
	{"full_trigger_percent", func(c *Compaction, v jsontext.Value) string { return decodeFloat(v, &c.FullTriggerPercent) },
		func(c *Compaction) string { return checkPercent(c.FullTriggerPercent) }},
	{"warn_at", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.WarnAt) },
		func(c *Compaction) string { return atLeast(c.WarnAt, 1) }},
	{"hard_warn_at", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.HardWarnAt) },
		func(c *Compaction) string {
			if c.HardWarnAt < c.WarnAt {
				return fmt.Sprintf("must be warn_at (%d) or more, got %d", c.WarnAt, c.HardWarnAt)
			}
			return ""
		}},
	{"auto_quiet_seconds", func(c *Compaction, v jsontext.Value) string { return decodeInt(v, &c.AutoQuietSeconds) },
		func(c *Compaction) string { return atLeast(c.AutoQuietSeconds, 0) }},
	{"tokenizer", func(c *Compaction, v jsontext.Value) string { return decodeString(v, &c.Tokenizer) },
		func(c *Compaction) string {
			switch c.Tokenizer {
			case TokenizerCalibrated, TokenizerO200k, TokenizerCharsPer4:
				return ""
			}
			return fmt.Sprintf("must be %q, %q or %q, got %q", TokenizerCalibrated, TokenizerO200k, TokenizerCharsPer4, c.Tokenizer)
		}},
	{"summarizer", func(c *Compaction, v jsontext.Value) string { return decodeObject(v, &c.Summarizer, summarizerFields) }, nil},
}

// summarizerFields lists the members of Summarizer in struct order.
var summarizerFields = []subField[Summarizer]{
	{"base_url", func(c *Summarizer, v jsontext.Value) string { return decodeString(v, &c.BaseURL) },
		func(c *Summarizer) string {
			if c.BaseURL == "" || strings.HasPrefix(c.BaseURL, "http://") || strings.HasPrefix(c.BaseURL, "https://") {
				return ""
			}
			return fmt.Sprintf("must be empty or an http:// or https:// URL, got %q", c.BaseURL)
		}},
	{"model", func(c *Summarizer, v jsontext.Value) string { return decodeString(v, &c.Model) }, nil},
	{"temperature", func(c *Summarizer, v jsontext.Value) string { return decodeFloat(v, &c.Temperature) },
		func(c *Summarizer) string {
			if !(c.Temperature >= 0 && c.Temperature <= 2) {
				return "must be between 0 and 2, got " + formatFloat(c.Temperature)
			}
			return ""
		}},
	{"max_tokens", func(c *Summarizer, v jsontext.Value) string { return decodeInt(v, &c.MaxTokens) },
		func(c *Summarizer) string { return atLeast(c.MaxTokens, 1) }},
	{"timeout_seconds", func(c *Summarizer, v jsontext.Value) string { return decodeInt(v, &c.TimeoutSeconds) },
		func(c *Summarizer) string { return atLeast(c.TimeoutSeconds, 1) }},
	{"retries", func(c *Summarizer, v jsontext.Value) string { return decodeInt(v, &c.Retries) },
		func(c *Summarizer) string { return atLeast(c.Retries, 0) }},
}

// checkPercent returns the message for a share of the window that is not
// a finite number above 0 and at most 100, or "".
func checkPercent(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) || p <= 0 || p > 100 {
		return "must be a number above 0 and at most 100, got " + formatFloat(p)
	}
	return ""
}

// decodeObject reads a JSON object onto *dst member by member: members
// absent from v keep their values. It returns the first problem (an
// unknown member, a member of the wrong type) as "member: message", or "".
func decodeObject[T any](v jsontext.Value, dst *T, fields []subField[T]) string {
	if v.Kind() != '{' {
		return "expected an object, got " + describe(v)
	}
	n := *dst
	dec := jsontext.NewDecoder(bytes.NewReader(v))
	if _, err := dec.ReadToken(); err != nil {
		return "expected an object, got " + describe(v)
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return "expected an object, got " + describe(v)
		}
		name := tok.String()
		mv, err := dec.ReadValue()
		if err != nil {
			return "expected an object, got " + describe(v)
		}
		found := false
		for _, f := range fields {
			if f.name != name {
				continue
			}
			found = true
			if msg := f.decode(&n, mv); msg != "" {
				return name + ": " + msg
			}
		}
		if !found {
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = f.name
			}
			return fmt.Sprintf("unknown member %q (allowed: %s)", name, strings.Join(names, ", "))
		}
	}
	*dst = n
	return ""
}

// problems returns one FieldError per bad member of c, named
// "compaction.<member>" (and "compaction.summarizer.<member>").
func (c *Compaction) problems() []FieldError {
	var errs []FieldError
	for _, f := range compactionFields {
		if f.check != nil {
			if msg := f.check(c); msg != "" {
				errs = append(errs, FieldError{Field: "compaction." + f.name, Message: msg})
			}
		}
	}
	for _, f := range summarizerFields {
		if f.check != nil {
			if msg := f.check(&c.Summarizer); msg != "" {
				errs = append(errs, FieldError{Field: "compaction.summarizer." + f.name, Message: msg})
			}
		}
	}
	return errs
}

// Validate checks every member of c, as Config.Validate does for the
// "compaction" object.
func (c Compaction) Validate() error {
	if errs := c.problems(); len(errs) > 0 {
		return &ValidationError{Errors: errs}
	}
	return nil
}
