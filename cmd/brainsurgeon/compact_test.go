package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
)

// TestCompactSummarizer runs compact with the model summarizer of the
// config against a chat-completions server: a good answer is used as it
// is; a failing server degrades to the deterministic summary and says why.
func TestCompactSummarizer(t *testing.T) {
	const modelSummary = "## Goal\nExplore the demo repository.\n\n## Progress\n- Listed files and read the README.\n\n## Next Steps\n- Report back."
	for _, tt := range []struct {
		name       string
		status     int
		degraded   bool
		summarizer string
		reason     string
	}{
		{"Model", http.StatusOK, false, "openai:demo-model", ""},
		{"ServerDown", http.StatusInternalServerError, true, "deterministic", "500"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				if r.URL.Path != "/v1/chat/completions" {
					http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
					return
				}
				if tt.status != http.StatusOK {
					http.Error(w, `{"error":{"message":"overloaded"}}`, tt.status)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{
					"id": "x", "object": "chat.completion", "model": "demo-model",
					"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
						"message": map[string]any{"role": "assistant", "content": modelSummary}}},
				})
			}))
			defer srv.Close()
			root := t.TempDir()
			agents := filepath.Join(root, "agents")
			if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(root, ".brainsurgeon"), 0o700); err != nil {
				t.Fatal(err)
			}
			cfg := fmt.Sprintf(`{"enabled": true, "idle_seconds": 0, "compaction": {"summarizer": {"base_url": %q, "model": "demo-model", "retries": 0, "timeout_seconds": 5}}}`, srv.URL+"/v1")
			if err := os.WriteFile(filepath.Join(root, ".brainsurgeon", "config.json"), []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("BRAINSURGEON_SUMMARY_API_KEY", "")
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("OPENROUTER_API_KEY", "")
			code, out, errs := run(t, "compact", "--layer", "full", "--yes", "--json", "--agents-dir", agents, "--session", "agent:main:main")
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
			}
			var res struct {
				Degraded       bool   `json:"degraded"`
				DegradedReason string `json:"degraded_reason"`
				Summarizer     string `json:"summarizer"`
				Summary        string `json:"summary"`
				EntryID        string `json:"entry_id"`
				Steps          []struct {
					Stage string `json:"stage"`
				} `json:"summary_steps"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			if res.Degraded != tt.degraded || res.Summarizer != tt.summarizer || res.EntryID == "" || !strings.Contains(res.DegradedReason, tt.reason) {
				t.Fatalf("got degraded %v (%q), summarizer %q, entry %q; want degraded %v, summarizer %q, reason with %q",
					res.Degraded, res.DegradedReason, res.Summarizer, res.EntryID, tt.degraded, tt.summarizer, tt.reason)
			}
			if !tt.degraded && !strings.Contains(res.Summary, "Listed files and read the README.") {
				t.Fatalf("the model's summary was not used:\n%s", res.Summary)
			}
			if calls.Load() == 0 {
				t.Fatal("the summarizer's server was never called")
			}
			// The dry run never calls the model.
			before := calls.Load()
			if code, out, errs := run(t, "compact", "--layer", "full", "--dry-run", "--agents-dir", agents, "--session", "agent:main:main"); code != 0 ||
				!strings.Contains(out, "the preview used the deterministic summarizer; the model (demo-model)") {
				t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errs)
			}
			if calls.Load() != before {
				t.Fatalf("the dry run called the model %d times", calls.Load()-before)
			}
		})
	}
}

func TestNum(t *testing.T) {
	for _, tt := range []struct {
		in   int
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {145230, "145,230"}, {-1234567, "-1,234,567"}} {
		if got := agenttext.Num(tt.in); got != tt.want {
			t.Errorf("agenttext.Num(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{10 * time.Second, "just now"}, {time.Minute, "1 minute ago"}, {5 * time.Minute, "5 minutes ago"},
		{2 * time.Hour, "2 hours ago"}, {47 * time.Hour, "47 hours ago"}, {3 * 24 * time.Hour, "3 days ago"},
		{90 * 24 * time.Hour, "3 months ago"}, {800 * 24 * time.Hour, "2 years ago"},
	} {
		if got := ago(now, now.Add(-tt.d)); got != tt.want {
			t.Errorf("ago(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestCompactEngineServes: a session the context engine serves (a view
// within 24 hours) has its summaries in the model's view, so the CLI
// refuses the summarize and full layers with the API's wording (exit 1,
// /compact in the chat named as the way, nothing written), and its own
// choice of a layer is the prune layer, never summarize or full.
func TestCompactEngineServes(t *testing.T) {
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".brainsurgeon"), 0o700); err != nil {
		t.Fatal(err)
	}
	// Thresholds so low that without the engine the full layer is chosen.
	cfg := `{"enabled": true, "idle_seconds": 0, "compaction": {"prune_trigger_percent": 0.5, "summarize_trigger_percent": 1, "full_trigger_percent": 1.2}}`
	if err := os.WriteFile(filepath.Join(root, ".brainsurgeon", "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "compact", "--dry-run", "--json", "--agents-dir", agents, "--session", "agent:main:main")
	var res struct {
		Session string `json:"session"`
		Layer   string `json:"layer"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || (res.Layer != "summarize" && res.Layer != "full") {
		t.Fatalf("compact --dry-run without the engine: exit %d, layer %q, want summarize or full chosen\n%s\n%s", code, res.Layer, out, errs)
	}
	id := res.Session[strings.IndexByte(res.Session, '/')+1:]
	file := filepath.Join(agents, "main", "sessions", id+".jsonl")
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`{"version":1,"turns":[{"turn":1,"at":%q,"messages":4,"view_messages":4,"matched":4,"unmatched":0,"base_tokens":500,"predicted_tokens":600}]}`,
		time.Now().Add(-time.Minute).UTC().Format(time.RFC3339Nano))
	if err := os.MkdirAll(filepath.Join(root, ".brainsurgeon", "engine", "main"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".brainsurgeon", "engine", "main", id+".json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, layer := range []string{"summarize", "full"} {
		code, out, errs := run(t, "compact", "--layer", layer, "--yes", "--agents-dir", agents, "--session", "agent:main:main")
		if code != 1 || !strings.Contains(errs, "layer "+layer+" refused") || !strings.Contains(errs, "/compact in the chat") {
			t.Errorf("compact --layer %s of a session the engine serves: exit %d, want 1 naming /compact in the chat\n%s\n%s", layer, code, out, errs)
		}
	}
	code, out, errs = run(t, "compact", "--dry-run", "--json", "--agents-dir", agents, "--session", "agent:main:main")
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || (res.Layer != "prune" && res.Layer != "") {
		t.Fatalf("compact --dry-run of a session the engine serves: exit %d, layer %q, want prune\n%s\n%s", code, res.Layer, out, errs)
	}
	if after, err := os.ReadFile(file); err != nil || string(after) != string(before) {
		t.Errorf("the transcript changed (%v)", err)
	}
}

// TestCompactLayersListed checks that the layers --layer names in the
// usage and in the README are compact.Layers(), the one list ParseLayer
// accepts: a new layer cannot be added without them.
func TestCompactLayersListed(t *testing.T) {
	var names []string
	for _, l := range compact.Layers() {
		names = append(names, string(l))
	}
	want := "--layer " + strings.Join(names, "|")
	if !strings.Contains(compactUsage, want) {
		t.Errorf("compact's usage does not name the layers as %q:\n%s", want, compactUsage)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not name the layers as %q", want)
	}
	for _, n := range names {
		if _, err := compact.ParseLayer(n); err != nil {
			t.Errorf("ParseLayer(%q): %v", n, err)
		}
	}
}
