package compactwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

func clearEnv(t *testing.T) {
	for _, k := range []string{summarize.EnvAPIKey, summarize.EnvBaseURL, summarize.EnvModel, "OPENAI_API_KEY", "OPENROUTER_API_KEY"} {
		t.Setenv(k, "")
	}
}

func TestTokenOptions(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", ""}, {"calibrated", ""}, {"o200k", "o200k"}, {"chars/4", "chars/4"},
	} {
		tok, err := compactwire.TokenOptions(tc.name)
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		if tc.want == "" {
			if tok.Estimator == nil || tok.Tokenizer == nil || tok.Tokenizer.Name() != "chars/4" {
				t.Errorf("%q: want the calibrated estimator over chars/4, got %+v", tc.name, tok)
			}
			continue
		}
		if tok.Estimator != nil || tok.Tokenizer.Name() != tc.want {
			t.Errorf("%q: got %+v", tc.name, tok)
		}
	}
	if _, err := compactwire.TokenOptions("words"); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("unknown tokenizer: %v, want ErrInvalid", err)
	}
}

var lines = [][]byte{
	[]byte(`{"type":"message","id":"a1","message":{"role":"user","content":"Please fix the failing test in parser.go"}}`),
	[]byte(`{"type":"message","id":"a2","message":{"role":"assistant","content":[{"type":"text","text":"I read parser.go and fixed the off-by-one error in the loop; the tests pass now."}]}}`),
}

// TestNewDeterministicOnly: no model named anywhere gives the
// deterministic summarizer alone, degraded with a reason.
func TestNewDeterministicOnly(t *testing.T) {
	clearEnv(t)
	tools, err := compactwire.New(config.DefaultCompaction(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Model != "" || tools.Escalate.Model != nil || tools.Settings.ContextWindow != 200000 {
		t.Fatalf("tools = %+v", tools)
	}
	s := tools.Summarizer()
	if n := s.Name(); n != "deterministic" {
		t.Errorf("name before any summary %q, want deterministic", n)
	}
	sum, err := s.Summarize(context.Background(), lines, "")
	text, degraded := sum.Text, sum.Degraded
	if err != nil || !degraded || text == "" {
		t.Fatalf("summary = %q, %v, %v", text, degraded, err)
	}
	if r := sum.Reason; r == "" {
		t.Error("no reason for the degraded summary")
	}
	if n := sum.Method; n != "deterministic" {
		t.Errorf("name %q, want deterministic", n)
	}
}

// TestNewModelFromConfig: the config's base URL and model, the key from
// the environment (never the config), the config's limits; a model that
// answers is used and the summary is not degraded; one that fails falls
// back with the reason.
func TestNewModelFromConfig(t *testing.T) {
	clearEnv(t)
	t.Setenv(summarize.EnvAPIKey, "sk-test")
	var fail atomic.Bool
	var gotKey, gotModel atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey.Store(r.Header.Get("Authorization"))
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		gotModel.Store(req.Model)
		if fail.Load() {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"message":{"role":"assistant","content":"## Goal\nFix the parser test."}}]}`))
	}))
	defer srv.Close()
	c := config.DefaultCompaction()
	c.Summarizer.BaseURL, c.Summarizer.Model, c.Summarizer.TimeoutSeconds, c.Summarizer.Retries = srv.URL, "tiny", 5, 0
	tools, err := compactwire.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := tools.Escalate.Model.(*summarize.OpenAI)
	if !ok || tools.Model != "tiny" || o.BaseURL != srv.URL || o.APIKey != "sk-test" || o.Timeout != 5*time.Second || o.Retries != 0 {
		t.Fatalf("model summarizer = %v (%T)", tools.Escalate.Model, tools.Escalate.Model)
	}
	s := tools.Summarizer()
	if n := s.Name(); n != "openai:tiny" {
		t.Errorf("name before any summary %q, want the model's, openai:tiny", n)
	}
	sum, err := s.Summarize(context.Background(), lines, "parser")
	text, degraded := sum.Text, sum.Degraded
	if err != nil || degraded || !strings.Contains(text, "Fix the parser test") {
		t.Fatalf("summary = %q, %v, %v", text, degraded, err)
	}
	if gotKey.Load() != "Bearer sk-test" || gotModel.Load() != "tiny" {
		t.Errorf("request: key %v model %v", gotKey.Load(), gotModel.Load())
	}
	if n := sum.Method; n != "openai:tiny" {
		t.Errorf("name %q", n)
	}
	fail.Store(true)
	s = tools.Summarizer()
	sum, err = s.Summarize(context.Background(), lines, "")
	text, degraded = sum.Text, sum.Degraded
	if err != nil || !degraded || text == "" {
		t.Fatalf("fallback summary = %q, %v, %v", text, degraded, err)
	}
	if r := sum.Reason; !strings.Contains(r, "401") {
		t.Errorf("reason %q, want the 401", r)
	}
}

// TestNewModelFromEnv: with no model in the config, the environment's
// model is used.
func TestNewModelFromEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(summarize.EnvModel, "env-model")
	t.Setenv(summarize.EnvBaseURL, "http://127.0.0.1:1/v1")
	tools, err := compactwire.New(config.DefaultCompaction(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tools.Model != "env-model" || tools.Escalate.Model == nil {
		t.Errorf("tools = %+v", tools)
	}
	c := config.DefaultCompaction()
	c.Tokenizer = "words"
	if _, err := compactwire.New(c, nil); err == nil {
		t.Error("bad tokenizer: no error")
	}
}
