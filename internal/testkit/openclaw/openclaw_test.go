package openclaw

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://localhost:11434", "http://10.0.0.1:11434", "https://127.0.0.1:1"} {
		if _, err := Config(ConfigOptions{MockURL: u}); err == nil {
			t.Errorf("Config accepted the non-loopback mock URL %s", u)
		}
	}
	b, err := Config(ConfigOptions{MockURL: "http://127.0.0.1:4242", LogFile: "/x/openclaw.log"})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Models struct {
			Providers struct {
				Ollama struct {
					BaseURL string `json:"baseUrl"`
					Models  []struct {
						ID            string `json:"id"`
						ContextWindow int    `json:"contextWindow"`
					} `json:"models"`
				} `json:"ollama"`
			} `json:"providers"`
		} `json:"models"`
		Update  struct{ CheckOnStart bool } `json:"update"`
		Logging struct{ File string }       `json:"logging"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	o := c.Models.Providers.Ollama
	if o.BaseURL != "http://127.0.0.1:4242" || len(o.Models) != 1 || o.Models[0].ID != MockModel ||
		o.Models[0].ContextWindow != 1_000_000 || c.Update.CheckOnStart || c.Logging.File != "/x/openclaw.log" {
		t.Fatalf("config:\n%s", b)
	}
}

func TestLocateNamesTheInstallScript(t *testing.T) {
	t.Setenv("BRAINSURGEON_NODE24", "/nonexistent/node")
	_, err := Locate(V7)
	if err == nil || !strings.Contains(err.Error(), InstallHint) || !strings.Contains(err.Error(), "BRAINSURGEON_NODE24") {
		t.Fatalf("Locate with a missing node: %v", err)
	}
	// a stand-in node that reports 24.21.0
	fake := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 24.21.0\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRAINSURGEON_NODE24", fake)
	if _, err := Node24(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRAINSURGEON_OPENCLAW7", t.TempDir())
	if _, err := Locate(V7); err == nil || !strings.Contains(err.Error(), InstallHint) {
		t.Fatalf("Locate with an empty install dir: %v", err)
	}
	if _, err := Locate("2026.1.1"); err == nil {
		t.Fatal("Locate accepted an unknown release")
	}
}

// TestPlanCalls checks the model's script: CALLs of the newest user message are made one after the other, each
// once the result of the one before is back, then the turn ends; the host's internal context is ignored.
func TestPlanCalls(t *testing.T) {
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	body := func(tools []string, msgs ...msg) []byte {
		var ts []map[string]any
		for _, n := range tools {
			ts = append(ts, map[string]any{"function": map[string]any{"name": n}})
		}
		b, _ := json.Marshal(map[string]any{"messages": msgs, "tools": ts})
		return b
	}
	two := msg{"user", `do CALL:a:{"x":1} CALL:b:{"y":{"z":2}}`}
	internal := msg{"user", internalContext + " stuff"}
	tests := []struct {
		name     string
		body     []byte
		tool     string
		args     string
		textPart string
	}{
		{"no call", body(nil, msg{"user", "hello"}), "", "", "model reply"},
		{"first call", body([]string{"a", "b"}, two), "a", `{"x":1}`, ""},
		{"first call, internal context after", body([]string{"a", "b"}, two, internal), "a", `{"x":1}`, ""},
		{"second call", body([]string{"a", "b"}, two, msg{"assistant", ""}, msg{"tool", "r1"}), "b", `{"y":{"z":2}}`, ""},
		{"all made", body([]string{"a", "b"}, two, msg{"assistant", ""}, msg{"tool", "r1"}, msg{"assistant", ""}, msg{"tool", "r2"}), "", "", "model final"},
		{"one call made", body([]string{"a"}, msg{"user", `CALL:a:{}`}, msg{"assistant", ""}, msg{"tool", "r"}), "", "", "model final"},
		{"through tool_call", body([]string{"tool_call"}, msg{"user", `CALL:a:{"x":1}`}), "tool_call", `{"args":{"x":1},"id":"a"}`, ""},
		{"tool result without user", body(nil, msg{"tool", "r"}), "", "", "model final"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tool, args, text := plan(tc.body, 7)
			if tool != tc.tool || string(args) != tc.args || (tc.textPart == "") != (text == "") ||
				(tc.textPart != "" && !strings.HasPrefix(text, tc.textPart)) {
				t.Errorf("plan = (%q, %s, %q), want (%q, %s, %q…)", tool, args, text, tc.tool, tc.args, tc.textPart)
			}
		})
	}
}
