package hostconfig_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/hostconfig"
)

// TestWindow checks which window the host's config gives a model, and
// where it says it found it.
func TestWindow(t *testing.T) {
	const oneM = `{"models":{"providers":{"anthropic":{"models":[{"id":"claude-sonnet-4-5","contextWindow":1000000}]}}}}`
	for _, tc := range []struct {
		name, config, catalog string
		agent, model          string
		want                  int
		from                  string // a part of Window.From; "" with want 0
	}{
		{name: "no config", agent: "main", model: "anthropic/claude-sonnet-4-5"},
		{name: "model contextWindow", config: oneM, agent: "main", model: "anthropic/claude-sonnet-4-5",
			want: 1_000_000, from: "models.providers.anthropic.models[claude-sonnet-4-5].contextWindow in "},
		{name: "model id case and provider case", config: oneM, agent: "main", model: "Anthropic/Claude-Sonnet-4-5", want: 1_000_000, from: "contextWindow"},
		{name: "bare model id", config: oneM, agent: "main", model: "claude-sonnet-4-5", want: 1_000_000, from: "contextWindow"},
		{name: "other provider", config: oneM, agent: "main", model: "openrouter/claude-sonnet-4-5"},
		{name: "other model", config: oneM, agent: "main", model: "anthropic/claude-opus-4-5"},
		{name: "contextTokens caps contextWindow",
			config: `{"models":{"providers":{"p":{"models":[{"id":"m","contextWindow":128000,"contextTokens":96000}]}}}}`,
			agent:  "main", model: "p/m", want: 96000, from: "models.providers.p.models[m].contextTokens"},
		{name: "contextTokens above contextWindow is not a cap",
			config: `{"models":{"providers":{"p":{"models":[{"id":"m","contextWindow":128000,"contextTokens":500000}]}}}}`,
			agent:  "main", model: "p/m", want: 128000, from: ".contextWindow"},
		{name: "self-prefixed catalog id",
			config: `{"models":{"providers":{"ollama":{"models":[{"id":"ollama/llama3.2:3b","contextWindow":131072}]}}}}`,
			agent:  "main", model: "ollama/llama3.2:3b", want: 131072, from: "models[ollama/llama3.2:3b]"},
		{name: "provider default",
			config: `{"models":{"providers":{"vllm":{"contextWindow":32768,"models":[]}}}}`,
			agent:  "main", model: "vllm/qwen3", want: 32768, from: "models.providers.vllm.contextWindow"},
		{name: "agents.defaults.contextTokens caps the model's window",
			config: `{"agents":{"defaults":{"contextTokens":150000}},` + oneM[1:],
			agent:  "main", model: "anthropic/claude-sonnet-4-5", want: 150000, from: "agents.defaults.contextTokens"},
		{name: "agents.defaults.contextTokens alone",
			config: `{"agents":{"defaults":{"contextTokens":150000}}}`,
			agent:  "main", model: "x/y", want: 150000, from: "agents.defaults.contextTokens"},
		{name: "the agent's own cap wins over the defaults",
			config: `{"agents":{"defaults":{"contextTokens":150000},"list":[{"id":"ops","contextTokens":64000}]}}`,
			agent:  "ops", model: "x/y", want: 64000, from: "agents.list[0].contextTokens"},
		{name: "no model recorded: the agent's default model",
			config: `{"agents":{"defaults":{"model":{"primary":"anthropic/claude-sonnet-4-5"}}},` + oneM[1:],
			agent:  "main", model: "", want: 1_000_000, from: "contextWindow"},
		{name: "the agent's models.json",
			catalog: `{"providers":{"ollama":{"models":[{"id":"llama3.2:3b","contextWindow":131072}]}}}`,
			agent:   "main", model: "ollama/llama3.2:3b", want: 131072, from: "providers.ollama.models[llama3.2:3b].contextWindow in "},
		{name: "openclaw.json wins over models.json", config: oneM,
			catalog: `{"providers":{"anthropic":{"models":[{"id":"claude-sonnet-4-5","contextWindow":200000}]}}}`,
			agent:   "main", model: "anthropic/claude-sonnet-4-5", want: 1_000_000, from: "openclaw.json"},
		{name: "JSON5",
			config: "// OpenClaw config\n{\n  models: { providers: { ollama: { models: [ { id: 'llama3.2:3b', contextWindow: 131072, }, ], }, }, },\n  /* agents */ agents: { defaults: { model: { primary: \"ollama/llama3.2:3b\" } } },\n}\n",
			agent:  "main", model: "", want: 131072, from: "contextWindow"},
		{name: "odd values are ignored",
			config: `{"models":{"providers":{"p":{"contextWindow":"big","models":[{"id":"m","contextWindow":"128k"}]}}},"agents":{"defaults":{"contextTokens":-1}}}`,
			agent:  "main", model: "p/m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			agents := filepath.Join(home, "agents")
			if err := os.MkdirAll(filepath.Join(agents, "main", "agent"), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.config != "" {
				if err := os.WriteFile(filepath.Join(home, "openclaw.json"), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.catalog != "" {
				if err := os.WriteFile(filepath.Join(agents, "main", "agent", "models.json"), []byte(tc.catalog), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("OPENCLAW_CONFIG_PATH", "")
			before := snapshot(t, home)
			w, ok, err := hostconfig.New(agents).Window(tc.agent, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want > 0) || w.Tokens != tc.want || !strings.Contains(w.From, tc.from) {
				t.Errorf("Window(%q, %q) = %+v, %v; want %d from %q", tc.agent, tc.model, w, ok, tc.want, tc.from)
			}
			// The state dir (the agents dir's parent) names the same host.
			if w2, ok2, err := hostconfig.New(home).Window(tc.agent, tc.model); err != nil || w2 != w || ok2 != ok {
				t.Errorf("from the state dir: Window(%q, %q) = %+v, %v, %v; want %+v, %v", tc.agent, tc.model, w2, ok2, err, w, ok)
			}
			if after := snapshot(t, home); after != before {
				t.Errorf("the host's files changed:\n%s\n%s", before, after)
			}
		})
	}
}

// TestWindowBadConfig: a config that does not parse is an error that
// names the file.
func TestWindowBadConfig(t *testing.T) {
	home := t.TempDir()
	agents := filepath.Join(home, "agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "openclaw.json"), []byte(`{"models": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ok, err := hostconfig.New(agents).Window("main", "p/m")
	if err == nil || ok || !strings.Contains(err.Error(), "openclaw.json") {
		t.Errorf("ok %v, err %v; want an error naming openclaw.json", ok, err)
	}
}

// TestWindowReread: a changed config is read again.
func TestWindowReread(t *testing.T) {
	home := t.TempDir()
	agents := filepath.Join(home, "agents")
	if err := os.MkdirAll(agents, 0o700); err != nil {
		t.Fatal(err)
	}
	r := hostconfig.New(agents)
	cfg := filepath.Join(home, "openclaw.json")
	for _, n := range []string{"64000", "1000000"} {
		if err := os.WriteFile(cfg, []byte(`{"agents":{"defaults":{"contextTokens":`+n+`}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		w, _, err := r.Window("main", "")
		if err != nil || w.Tokens == 0 || w.Tokens != atoi(n) {
			t.Errorf("after writing %s: %+v, %v", n, w, err)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// snapshot lists the files under dir with their size, mode and
// modification time.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestToJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: `{"a":1}`, want: `{"a":1}`},
		{in: "// c\n{a: 'x', b: [1,],}", want: `{"a": "x", "b": [1]}`},
		{in: `{"a":`, err: true},
	} {
		got, err := hostconfig.ToJSON([]byte(tc.in))
		if tc.err {
			if err == nil || !strings.Contains(err.Error(), "expected JSON or JSON5") {
				t.Errorf("ToJSON(%q) = %s, %v; want an error", tc.in, got, err)
			}
			continue
		}
		var g, w any
		if err != nil || json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(tc.want), &w) != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("ToJSON(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
