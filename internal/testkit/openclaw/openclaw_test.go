package openclaw

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/summarize"
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
		{"no call, tools offered", body([]string{"a"}, msg{"user", "hello"}), "", "", "model reply"},
		{"first call", body([]string{"a", "b"}, two), "a", `{"x":1}`, ""},
		{"first call, internal context after", body([]string{"a", "b"}, two, internal), "a", `{"x":1}`, ""},
		{"second call", body([]string{"a", "b"}, two, msg{"assistant", ""}, msg{"tool", "r1"}), "b", `{"y":{"z":2}}`, ""},
		{"all made", body([]string{"a", "b"}, two, msg{"assistant", ""}, msg{"tool", "r1"}, msg{"assistant", ""}, msg{"tool", "r2"}), "", "", "model final"},
		{"one call made", body([]string{"a"}, msg{"user", `CALL:a:{}`}, msg{"assistant", ""}, msg{"tool", "r"}), "", "", "model final"},
		{"through tool_call", body([]string{"tool_call"}, msg{"user", `CALL:a:{"x":1}`}), "tool_call", `{"args":{"x":1},"id":"a"}`, ""},
		{"tool result without user", body(nil, msg{"tool", "r"}), "", "", "model final"},
		{"no tools offered: no call", body(nil, msg{"user", `CALL:a:{"x":1}`}), "", "", "model reply"},
		{"host's summary request", body(nil, msg{"user", "<conversation>\n[User]: CALL:a:{\"x\":1}\n</conversation>\n\nSummarize."}), "", "", "## Goal"},
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

func TestMeasuredTokens(t *testing.T) {
	tests := []struct {
		name string
		body string
		want int
	}{
		{"messages and tools", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"a":1}]}`, (len(`[{"role":"user","content":"hi"}]`) + len(`[{"a":1}]`) + 3) / 4},
		{"messages only", `{"messages":[]}`, 1},
		{"rounds up", `{"messages":[1,2]}`, 2},
		{"neither", `{"model":"m"}`, 0},
		{"not JSON counts the body", `abcdefghi`, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MeasuredTokens([]byte(tc.body)); got != tc.want {
				t.Errorf("MeasuredTokens(%s) = %d, want %d", tc.body, got, tc.want)
			}
		})
	}
}

// post sends body to the model's path and returns the status and the decoded answer.
func post(t *testing.T, m *Model, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(m.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: answer is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

// TestModelReportsMeasuredSize checks that a chat answer reports the request's measured size as
// prompt_eval_count, and that SetWindow refuses a larger request the way a provider does.
func TestModelReportsMeasuredSize(t *testing.T) {
	m, err := StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	body := `{"model":"x","stream":false,"messages":[{"role":"user","content":"` + strings.Repeat("a", 400) + `"}],"tools":[]}`
	want := MeasuredTokens([]byte(body))
	status, out := post(t, m, "/api/chat", body)
	if status != http.StatusOK || out["prompt_eval_count"] != float64(want) {
		t.Fatalf("chat: HTTP %d, prompt_eval_count %v, want 200 and %d", status, out["prompt_eval_count"], want)
	}
	m.SetWindow(want - 1)
	status, out = post(t, m, "/api/chat", body)
	if status != http.StatusBadRequest || out["error"] != OverflowError(want, want-1) {
		t.Fatalf("chat above the window: HTTP %d, %v", status, out)
	}
	m.SetWindow(0)
	if status, _ = post(t, m, "/api/chat", body); status != http.StatusOK {
		t.Fatalf("chat after SetWindow(0): HTTP %d", status)
	}
	reqs := m.Requests()
	if len(reqs) != 3 || reqs[0].Tokens != want || reqs[1].Status != http.StatusBadRequest || len(m.SummaryRequests()) != 0 {
		t.Fatalf("requests: %+v", reqs)
	}
}

// TestModelSummarizes points the summarizer's own OpenAI client at the model: the summary passes the
// escalation's checks, and with the model failing the escalation degrades to the deterministic summary.
func TestModelSummarizes(t *testing.T) {
	m, err := StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var lines [][]byte
	for i := range 6 {
		lines = append(lines,
			[]byte(`{"type":"message","id":"u`+strconv.Itoa(i)+`","message":{"role":"user","content":[{"type":"text","text":"please read /work/data/file`+strconv.Itoa(i)+`.txt"}]}}`),
			[]byte(`{"type":"message","id":"a`+strconv.Itoa(i)+`","message":{"role":"assistant","content":[{"type":"text","text":"`+strings.Repeat("done reading. ", 30)+`"}]}}`))
	}
	client := &summarize.OpenAI{BaseURL: m.URL() + "/v1", Model: "mock", Retries: 0}
	e := &summarize.Escalate{Model: client}
	ctx := context.Background()
	s, err := e.SummarizeDetailed(ctx, lines, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Degraded || !strings.HasPrefix(s.Text, "## Goal") || !strings.Contains(s.Text, "## Critical Context") ||
		!strings.Contains(s.Text, "/work/data/file0.txt") || !strings.Contains(s.Text, "please read") {
		t.Fatalf("summary (degraded %v, %s):\n%s", s.Degraded, s.Reason, s.Text)
	}
	if n := len(m.SummaryRequests()); n != 1 || len(m.Requests()) != 0 {
		t.Fatalf("%d summary requests and %d chat requests, want 1 and 0", n, len(m.Requests()))
	}
	if again := SummaryOf(summarize.BuildPrompt(lines, "", summarize.Normal).User); again != s.Text {
		t.Fatalf("the summary is not deterministic:\n%s\n---\n%s", again, s.Text)
	}
	m.FailNext(2) // the normal and the aggressive attempt
	s, err = e.SummarizeDetailed(ctx, lines, "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Degraded || s.Summarizer != "deterministic" {
		t.Fatalf("with the model failing: degraded %v, by %s", s.Degraded, s.Summarizer)
	}
	m.FailSummaries(1)
	if status, _ := post(t, m, "/v1/chat/completions", `{"model":"mock","messages":[]}`); status != http.StatusInternalServerError {
		t.Fatalf("FailSummaries: HTTP %d, want 500", status)
	}
	if st := m.SummaryRequests(); st[len(st)-1].Status != http.StatusInternalServerError || st[1].Status != http.StatusInternalServerError {
		t.Fatalf("summary statuses: %+v", st)
	}
}

func TestSummaryOfStaysShort(t *testing.T) {
	for _, n := range []int{0, 10, 100, 1000, 100_000} {
		conv := "[User]: " + strings.Repeat("é", n)
		s := SummaryOf("<conversation>\n" + conv + "\n</conversation>")
		if s == "" || (len(s) > len(conv)/4 && len(s) > 16) || !utf8.ValidString(s) {
			t.Errorf("conversation of %d bytes: summary of %d bytes (valid %v)", len(conv), len(s), utf8.ValidString(s))
		}
	}
}
