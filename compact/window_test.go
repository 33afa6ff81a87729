package compact_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

func TestModelWindow(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{
		{"anthropic/claude-sonnet-4-5", 200_000},
		{"anthropic/claude-sonnet-4-5-20250929", 200_000},
		{"claude-opus-4-5-20251101", 200_000},
		{"anthropic/claude-opus-5", 1_000_000},
		{"openrouter/anthropic/claude-sonnet-5", 1_000_000},
		{"openai/gpt-4o-mini", 128_000},
		{"openai/gpt-4.1", 1_047_576},
		{"openai/GPT-5", 400_000},
		{"google/gemini-2.5-pro", 1_048_576},
		{"ollama/llama3.2:3b", 0},
		{"deepseek/deepseek-chat", 0},
		{"demo-model", 0},
		{"", 0},
	} {
		n, ok := compact.ModelWindow(tc.model)
		if n != tc.want || ok != (tc.want > 0) {
			t.Errorf("ModelWindow(%q) = %d, %v; want %d", tc.model, n, ok, tc.want)
		}
	}
}

// TestStatusWindow checks where the status takes the window from: the
// host's config (TokenOptions.Window) when it names one, else the model
// table for the model the transcript records, else the config.
func TestStatusWindow(t *testing.T) {
	host := func(n int) compact.WindowFunc {
		return func(ref bs.SessionRef, model string) (compact.Window, bool) {
			if n == 0 {
				return compact.Window{}, false
			}
			return compact.Window{Tokens: n, Source: compact.WindowHostConfig, From: "models of openclaw.json for " + model}, true
		}
	}
	for _, tc := range []struct {
		name, model string
		host        compact.WindowFunc
		want        int
		source      string
	}{
		{"host config", "anthropic/claude-sonnet-4-5", host(1_000_000), 1_000_000, compact.WindowHostConfig},
		{"host config names none: model table", "anthropic/claude-sonnet-4-5", host(0), 200_000, compact.WindowModelTable},
		{"no host config: model table", "openai/gpt-5", nil, 400_000, compact.WindowModelTable},
		{"unknown model: config", "ollama/llama3.2:3b", host(0), 64_000, compact.WindowConfig},
		{"no model recorded: config", "", nil, 64_000, compact.WindowConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := genTranscriptModel(t, tc.model)
			st, ref := newStore(t, src)
			s := compact.DefaultSettings()
			s.ContextWindow = 64_000
			tok := compact.Calibrated(nil)
			tok.Window = tc.host
			r, err := compact.NewStatusCache(0).Status(context.Background(), st, ref, s, tok)
			if err != nil {
				t.Fatal(err)
			}
			if r.Window != tc.want || r.WindowSource != tc.source || r.Model != tc.model || r.WindowFrom == "" {
				t.Errorf("window %d from %s (%q), model %q; want %d from %s, model %q", r.Window, r.WindowSource, r.WindowFrom, r.Model, tc.want, tc.source, tc.model)
			}
			if want := float64(int(float64(r.Tokens)*1000/float64(tc.want)+0.5)) / 10; r.Percent != want {
				t.Errorf("percent %v of %d tokens in %d, want %v", r.Percent, r.Tokens, tc.want, want)
			}
			// Inspect reports the same window.
			tr, err := st.Open(context.Background(), ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			ir, err := compact.Inspect(context.Background(), tr, s, tok)
			if err != nil {
				t.Fatal(err)
			}
			if ir.Window != r.Window || ir.WindowSource != r.WindowSource || ir.Tokens != r.Tokens {
				t.Errorf("inspect: %d tokens of %d from %s; status: %d of %d from %s", ir.Tokens, ir.Window, ir.WindowSource, r.Tokens, r.Window, r.WindowSource)
			}
		})
	}
}

// genTranscriptModel is genTranscript whose assistant messages record
// their usage and model ("provider/model"; "" records none).
func genTranscriptModel(t *testing.T, model string) string {
	t.Helper()
	src := genTranscript(t, 4, 2000)
	if model == "" {
		return src
	}
	provider, id, _ := strings.Cut(model, "/")
	return rewriteAssistants(t, src, `"provider":"`+provider+`","model":"`+id+`","usage":{"input":5000,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":5010}`)
}

// rewriteAssistants adds fields (JSON members) to the message of every
// assistant line of the transcript at src and returns the new file's path.
func rewriteAssistants(t *testing.T, src, fields string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	out := strings.ReplaceAll(string(b), `"message":{"role":"assistant",`, `"message":{"role":"assistant",`+fields+`,`)
	path := filepath.Join(t.TempDir(), "model.jsonl")
	if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
