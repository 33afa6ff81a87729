//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// pluginKey is the session the plugin tests talk in.
const pluginKey = "agent:main:main"

// pluginTimeoutMs is the plugin's middleware timeout in the tests; the slow daemon answers after twice as long.
const pluginTimeoutMs = 1500

// bigChars is the size of the huge tool result, in characters (code points, all in the BMP).
const bigChars = 200_000

// TestPluginLive runs BrainSurgeon's OpenClaw plugin, installed from its `npm pack` tarball with OpenClaw's own
// `plugins install`, in real gateways of both eras (2026.9.6 on SQLite, 2026.7.35 on JSONL), beside the daemon's
// REST API (in-process, with an API key the plugin reads from a key file) and a scripted model:
//
//	a. the model's requests list purge_control and the recall tools as direct tools;
//	b. a 200,000-character tool result (a fixture tool, bs_big) reaches the stored row or line as a placeholder
//	   with a preview, the model sees the placeholder, and the daemon holds the value byte-identical;
//	c. recall_grep finds a needle that is only in the extracted value (not in the preview);
//	d. the model calling purge_control restore gets the whole value back in the same turn, a page per call (the
//	   host cuts any tool result above its cap, 64,000 characters here);
//	e. with the daemon stopped, slow (past the plugin's timeout) or answering garbage, the turn still succeeds,
//	   the result is stored and shown as the host keeps it without the plugin (the same in every mode, nothing
//	   of ours in it), and the gateway log says why.
func TestPluginLive(t *testing.T) {
	oracle.Require(t)
	tgz := packPlugin(t)
	for _, v := range []string{openclaw.V9, openclaw.V7} {
		t.Run(v, func(t *testing.T) {
			t.Parallel() // each era is a host of its own (state dir, gateway, model, daemon)
			pluginLive(t, v, tgz)
		})
	}
}

// packPlugin runs `npm pack` on the repository's openclaw-plugin directory and returns the tarball.
func packPlugin(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is needed to pack the plugin: %v", err)
	}
	root, err := oracle.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	start := time.Now()
	cmd := exec.Command(npm, "pack", "--silent", "--pack-destination", dst)
	cmd.Dir = filepath.Join(root, "openclaw-plugin")
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	tgz := filepath.Join(dst, strings.TrimSpace(lastLineOf(out)))
	if _, err := os.Stat(tgz); err != nil {
		t.Fatalf("npm pack printed %q: %v", out, err)
	}
	t.Logf("npm pack: %s in %s", filepath.Base(tgz), time.Since(start).Round(time.Millisecond))
	return tgz
}

func lastLineOf(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// bigResult returns n code points of text that exercises JSON escaping (quotes, backslashes, tabs, newlines,
// non-ASCII), with needle once in the middle, far from both ends.
func bigResult(n int, needle string) string {
	var b strings.Builder
	line := 0
	for b.Len() < 2*n { // bytes ≥ code points; trimmed below
		fmt.Fprintf(&b, "line %06d \"quoted\" back\\slash\ttab é ✓ ü — data %x\n", line, line*7919)
		line++
	}
	cps := []rune(b.String())[:n]
	mid := n / 2
	copy(cps[mid:], []rune(needle))
	return string(cps)
}

// head returns the first n code points of s; tail the last n.
func head(s string, n int) string { return string([]rune(s)[:n]) }

func tail(s string, n int) string {
	r := []rune(s)
	return string(r[len(r)-n:])
}

// daemonProxy stands between the plugin and the daemon, so the test can stop the daemon (the port refuses
// connections), slow it down or make it answer garbage, while the plugin's daemonUrl stays the same.
type daemonProxy struct {
	addr   string
	target *url.URL
	mode   atomic.Value // "pass", "slow", "garbage"
	h      http.Handler
	mu     sync.Mutex
	srv    *http.Server
}

func newDaemonProxy(t *testing.T, target string) *daemonProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &daemonProxy{target: u}
	p.mode.Store("pass")
	rp := httputil.NewSingleHostReverseProxy(u)
	p.h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p.mode.Load().(string) {
		case "slow":
			select {
			case <-time.After(2 * pluginTimeoutMs * time.Millisecond):
			case <-r.Context().Done():
				return
			}
			rp.ServeHTTP(w, r)
		case "garbage":
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("<html>not json at all"))
		default:
			rp.ServeHTTP(w, r)
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = p.srv.Close()
	})
	return p
}

func (p *daemonProxy) serve(ln net.Listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: p.h}
	srv := p.srv
	go func() { _ = srv.Serve(ln) }()
}

func (p *daemonProxy) URL() string { return "http://" + p.addr }

// down closes the listener and every open connection (the plugin's keep-alive ones too): connections to the
// daemon's address are refused, as when it is stopped.
func (p *daemonProxy) down(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after the proxy stopped listening", p.addr)
	}
}

// up listens again on the same address.
func (p *daemonProxy) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen again on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

// pluginDaemon serves the daemon's REST API (no scheduled runs) over agents with one API key.
func pluginDaemon(t *testing.T, agents, key string) (base string, logs *syncBuffer) {
	t.Helper()
	logs = &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	handler, err := apiOver(ctx, d, api.Options{Logger: log, APIKeys: []string{key}, UI: ui.Handler()})
	if err != nil {
		cancel()
		d.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		cancel()
		d.Close()
		if t.Failed() {
			t.Logf("daemon log (tail):\n%s", logs.tail(6000))
		}
	})
	return "http://" + ln.Addr().String(), logs
}

// installPlugin installs the tarball with OpenClaw's own CLI (no gateway running), then sets the plugin's config
// and loads the bs_big fixture from the repository.
func installPlugin(t *testing.T, st *openclaw.State, version, tgz, daemonURL, keyFile string) {
	t.Helper()
	in := openclaw.Require(t, version)
	e := openclaw.NewEnv(in.Node)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"plugins", "install", tgz, "--force"}
	if version != openclaw.V7 {
		// 2026.8+ asks for capability consent; 2026.7 has no such flag and refuses it
		args = append(args, "--accept-capabilities")
	}
	r, err := st.CLI(ctx, e, in, args...)
	if err != nil {
		t.Fatalf("openclaw plugins install %s: %v\nstdout: %s", filepath.Base(tgz), err, r.Stdout)
	}
	t.Logf("openclaw@%s plugins install <tarball>: %s", version, r.Duration.Round(100*time.Millisecond))
	raw, err := os.ReadFile(st.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("openclaw.json after plugins install is not JSON (%v):\n%s", err, raw)
	}
	plugins := obj(cfg, "plugins")
	// OpenClaw's plugins install selects the engine of a plugin whose manifest declares kind "context-engine"
	// (ours does) by itself; the tests choose the engine themselves (engineConfigure), legacy by default.
	if slots, ok := plugins["slots"].(map[string]any); ok {
		delete(slots, "contextEngine")
		if len(slots) == 0 {
			delete(plugins, "slots")
		}
	}
	entries := obj(plugins, "entries")
	bsEntry := obj(entries, "brainsurgeon")
	if bsEntry["enabled"] != true {
		t.Fatalf("plugins install did not enable brainsurgeon: %s", raw)
	}
	// The offload's threshold and preview are the daemon's settings (defaults: 40,000 and 400 characters).
	bsEntry["config"] = map[string]any{"daemonUrl": daemonURL, "apiKeyFile": keyFile, "timeoutMs": pluginTimeoutMs}
	root, err := oracle.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	load := obj(plugins, "load")
	paths, _ := load["paths"].([]any)
	load["paths"] = append(paths, filepath.Join(root, "e2e", "testdata", "bs-big-plugin"))
	entries["bs-big"] = map[string]any{"enabled": true}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.ConfigPath(), out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// obj returns m[k] as an object, creating it when missing.
func obj(m map[string]any, k string) map[string]any {
	if v, ok := m[k].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[k] = v
	return v
}

// chatRequest is the part of a model request the plugin tests read.
type chatRequest struct {
	Messages []struct {
		Role     string          `json:"role"`
		Content  json.RawMessage `json:"content"`
		ToolName string          `json:"tool_name"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeChat(t *testing.T, body []byte) chatRequest {
	t.Helper()
	var c chatRequest
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("model request is not JSON: %v", err)
	}
	return c
}

func (c chatRequest) toolNames() []string {
	var out []string
	for _, tl := range c.Tools {
		out = append(out, tl.Function.Name)
	}
	return out
}

// lastTool returns the text of the newest tool message.
func (c chatRequest) lastTool() (string, bool) {
	for i := len(c.Messages) - 1; i >= 0; i-- {
		if m := c.Messages[i]; m.Role == "tool" {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				return s, true
			}
			return string(m.Content), true
		}
	}
	return "", false
}

// toolTexts returns the texts of the tool messages after the newest user message that is not the host's
// internal context, in order.
func (c chatRequest) toolTexts() []string {
	var out []string
	for i := len(c.Messages) - 1; i >= 0; i-- {
		m := c.Messages[i]
		if m.Role == "user" && !bytes.Contains(m.Content, []byte("BEGIN_OPENCLAW_INTERNAL_CONTEXT")) {
			break
		}
		if m.Role != "tool" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			s = string(m.Content)
		}
		out = append([]string{s}, out...)
	}
	return out
}

// pluginTurn runs one agent turn that must succeed (through [openclaw.Gateway.AgentCall]) and returns the model
// requests it made.
func pluginTurn(t *testing.T, h *openclaw.Host, m *openclaw.Model, msg string) []chatRequest {
	t.Helper()
	return pluginTurnVia(t, h, m, msg, false)
}

// pluginTurnVia is [pluginTurn] through `openclaw agent` when cli is set: a user's turn as the user runs it, seconds
// after a config change the gateway reloads (TestInstallLive's reinstall), where the gateway client's turn would come
// before the reload is done.
func pluginTurnVia(t *testing.T, h *openclaw.Host, m *openclaw.Model, msg string, cli bool) []chatRequest {
	t.Helper()
	before := len(m.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	// through the gateway's client process: the gateway's agent method as `openclaw agent` calls it, without a CLI
	// start-up per turn (the CLI drives the turns of the other live tests)
	agent := h.Gateway.AgentCall
	if cli {
		agent = h.Gateway.Agent
	}
	r, err := agent(ctx, openclaw.Turn{Key: pluginKey, Message: msg})
	if err != nil {
		t.Fatalf("turn %.80q: %v", msg, err)
	}
	t.Logf("turn %.80q: %s", msg, r.Duration.Round(100*time.Millisecond))
	reqs := m.Requests()[before:]
	var out []chatRequest
	for _, q := range reqs {
		out = append(out, decodeChat(t, q.Body))
	}
	if len(out) == 0 {
		t.Fatalf("turn %.80q made no model request", msg)
	}
	return out
}

// toolResultRow is a persisted toolResult message.
type toolResultRow struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Details json.RawMessage `json:"details"`
}

func (r toolResultRow) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// toolResults returns the session's persisted toolResult messages of tool, in order: the SQLite rows on 2026.8+,
// the transcript's lines before.
func toolResults(t *testing.T, h *openclaw.Host, version, tool string) []toolResultRow {
	t.Helper()
	var events []string
	if version == openclaw.V9 {
		for _, r := range sessionRows(t, storePath(h.State), liveSessionID(t, h, pluginKey)) {
			events = append(events, r.Event)
		}
	} else {
		m, err := h.State.Sessions("main")
		if err != nil {
			t.Fatal(err)
		}
		e, ok := m[pluginKey]
		if !ok {
			t.Fatalf("sessions.json has no %s", pluginKey)
		}
		p := e.SessionFile
		if p == "" {
			p = filepath.Join(h.State.SessionsDir("main"), e.SessionID+".jsonl")
		}
		for _, l := range bytes.Split(readFile(t, p), []byte("\n")) {
			events = append(events, string(l))
		}
	}
	var out []toolResultRow
	for _, ev := range events {
		var line struct {
			Message *struct {
				Role string `json:"role"`
				toolResultRow
			} `json:"message"`
		}
		if json.Unmarshal([]byte(ev), &line) != nil || line.Message == nil || line.Message.Role != "toolResult" {
			continue
		}
		if line.Message.ToolName == tool {
			out = append(out, line.Message.toolResultRow)
		}
	}
	return out
}

var placeholderKey = regexp.MustCompile(`\[\[extracted-(tc-[^\]\s]+)\]\]`)

// toolCall asks the daemon's plugin API for one tool call, as the plugin does, and returns its answer.
func toolCall(t *testing.T, daemonURL, key, sessionID string, tool string, params map[string]any) toolAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"agent_id": "main", "session_id": sessionID, "session_key": pluginKey,
		"tool_call_id": "e2e-direct", "tool": tool, "params": params})
	req, _ := http.NewRequest(http.MethodPost, daemonURL+"/api/plugin/v1/tool", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/plugin/v1/tool %s: HTTP %d: %s", tool, resp.StatusCode, raw)
	}
	var ans toolAnswer
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("tool answer is not JSON: %v: %.300s", err, raw)
	}
	return ans
}

// toolAnswer is the daemon's answer to a tool call.
type toolAnswer struct {
	OK      bool `json:"ok"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Details struct {
		NextOffset *int `json:"next_offset"`
	} `json:"details"`
	Error string `json:"error"`
}

// heldValue reads a tc- value back from the daemon, page by page, and returns its text.
func heldValue(t *testing.T, daemonURL, apiKey, sessionID, key string) string {
	t.Helper()
	var b strings.Builder
	off := 0
	for i := 0; i < 100; i++ {
		ans := toolCall(t, daemonURL, apiKey, sessionID, "purge_control",
			map[string]any{"action": "restore", "value_id": key, "offset": off, "max_chars": 100_000})
		if !ans.OK || len(ans.Content) < 2 {
			t.Fatalf("restore %s at offset %d: ok=%v, %d blocks: %s", key, off, ans.OK, len(ans.Content), ans.Error)
		}
		b.WriteString(ans.Content[len(ans.Content)-1].Text) // the page's slice comes after its header
		if ans.Details.NextOffset == nil {
			return b.String()
		}
		off = *ans.Details.NextOffset
	}
	t.Fatalf("restore %s: more than 100 pages", key)
	return ""
}

func pluginLive(t *testing.T, version, tgz string) {
	t0 := time.Now()
	work := t.TempDir()
	var kb [32]byte
	_, _ = rand.Read(kb[:])
	apiKey := hex.EncodeToString(kb[:])
	keyFile := filepath.Join(work, "api.key")
	if err := os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	needle := "NEEDLE-" + hex.EncodeToString(kb[:6])
	big := bigResult(bigChars, needle)
	bigFile := filepath.Join(work, "big.txt")
	if err := os.WriteFile(bigFile, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	var daemonURL string
	var proxy *daemonProxy
	h := openclaw.NewHostWithModel(t, version, model.URL(), func(st *openclaw.State) error {
		daemonURL, _ = pluginDaemon(t, st.AgentsDir(), apiKey)
		proxy = newDaemonProxy(t, daemonURL)
		installPlugin(t, st, version, tgz, proxy.URL(), keyFile)
		return nil
	})
	t.Logf("setup (daemon, plugin install, gateway start): %s", time.Since(t0).Round(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	r, err := h.Gateway.CLI(ctx, "plugins", "inspect", "brainsurgeon", "--runtime", "--json")
	cancel()
	if err != nil {
		t.Errorf("plugins inspect brainsurgeon: %v", err)
	} else if !bytes.Contains(r.Stdout, []byte(`"loaded"`)) {
		t.Errorf("plugins inspect brainsurgeon does not say loaded:\n%.2000s", r.Stdout)
	}

	// a + b. The huge result is offloaded at the source.
	reqs := pluginTurn(t, h, model, `CALL:bs_big:{"file":"`+bigFile+`"}`)
	names := strings.Join(reqs[0].toolNames(), ",")
	for _, want := range []string{"purge_control", "recall_grep", "recall_describe", "recall_expand", "bs_big"} {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Errorf("a: the model's tools[] lacks %s: %s", want, names)
		}
	}
	if len(reqs) < 2 {
		t.Fatalf("b: the tool call got no follow-up model request (%d requests)", len(reqs))
	}
	seen, _ := reqs[len(reqs)-1].lastTool()
	mk := placeholderKey.FindStringSubmatch(seen)
	if mk == nil {
		t.Fatalf("b: the model saw no [[extracted-tc-…]] placeholder; it saw %d chars: %.300q", len(seen), seen)
	}
	key := mk[1]
	if strings.Contains(seen, needle) || len(seen) > 5000 {
		t.Errorf("b: the model saw %d chars, needle included: %v (want the placeholder and a short preview)", len(seen), strings.Contains(seen, needle))
	}
	if !strings.Contains(seen, head(big, 150)) || !strings.Contains(seen, tail(big, 150)) {
		t.Errorf("b: the placeholder lacks the head or tail preview: %.600q", seen)
	}
	// The daemon builds the placeholder's text (agenttools.BuildPlaceholder) with its source_preview_chars.
	if want := fmt.Sprintf("[[extracted-%s]] BrainSurgeon stored this bs_big result (%d characters) outside the transcript.\n", key, bigChars); !strings.Contains(seen, want) ||
		!strings.Contains(seen, "\n--- first 400 characters ---\n"+head(big, 400)+"\n--- last 400 characters ---\n"+tail(big, 400)) {
		t.Errorf("b: the placeholder is not the daemon's text (want it to hold %q, with 400 characters of head and tail): %.800q", want, seen)
	}
	rows := toolResults(t, h, version, "bs_big")
	if len(rows) != 1 {
		t.Fatalf("b: %d persisted bs_big results, want 1", len(rows))
	}
	stored := rows[0].text()
	if !strings.Contains(stored, "[[extracted-"+key+"]]") || strings.Contains(stored, needle) || len(stored) > 5000 {
		t.Errorf("b: the persisted result is not the placeholder with a preview (%d chars, needle %v): %.300q",
			len(stored), strings.Contains(stored, needle), stored)
	}
	if key != "tc-"+rows[0].ToolCallID {
		t.Errorf("b: placeholder key %q, want tc-<toolCallId> = tc-%s", key, rows[0].ToolCallID)
	}
	if len(rows[0].Details) > 2000 {
		t.Errorf("b: the persisted details are %d bytes, want them shrunk: %.300s", len(rows[0].Details), rows[0].Details)
	}
	var sid string
	if version == openclaw.V9 {
		sid = liveSessionID(t, h, pluginKey)
	} else {
		m, _ := h.State.Sessions("main")
		sid = m[pluginKey].SessionID
	}
	if held := heldValue(t, daemonURL, apiKey, sid, key); held != big {
		t.Errorf("b: the daemon does not hold the value byte-identical: %d chars, equal=%v: %.300q", len(held), held == big, held)
	}

	// c. recall_grep finds what is only in the extracted value.
	reqs = pluginTurn(t, h, model, `CALL:recall_grep:{"pattern":"`+needle+`"}`)
	got, _ := reqs[len(reqs)-1].lastTool()
	if !strings.Contains(got, needle) || !strings.Contains(got, "extracted") {
		t.Errorf("c: recall_grep did not report the needle in an extracted value: %.800q", got)
	}

	// d. purge_control restore gives the model the whole value in the same turn, a page per call: the host caps
	// every tool result (64,000 characters for this model's context window), so restore pages.
	page := 50_000
	var calls []string
	for off := 0; off < bigChars; off += page {
		calls = append(calls, fmt.Sprintf(`CALL:purge_control:{"action":"restore","value_id":"%s","offset":%d,"max_chars":%d}`, key, off, page))
	}
	reqs = pluginTurn(t, h, model, strings.Join(calls, " "))
	results := reqs[len(reqs)-1].toolTexts()
	if len(results) < len(calls) {
		t.Fatalf("d: %d tool results in the turn's last model request, want %d", len(results), len(calls))
	}
	results = results[len(results)-len(calls):]
	runes := []rune(big)
	for i, got := range results {
		want := string(runes[i*page : min((i+1)*page, len(runes))])
		if !strings.Contains(got, want) {
			t.Errorf("d: page %d (characters %d–%d) did not reach the model whole (%d chars)", i+1, i*page, i*page+len([]rune(want)), len(got))
		}
	}
	// e. Fail open: the daemon stopped, slow, answering garbage.
	passed := ""
	for _, mode := range []string{"down", "slow", "garbage"} {
		before := len(toolResults(t, h, version, "bs_big"))
		logBefore := gatewayLogs(h)
		switch mode {
		case "down":
			proxy.down(t)
		default:
			proxy.mode.Store(mode)
		}
		start := time.Now()
		reqs = pluginTurn(t, h, model, `CALL:bs_big:{"file":"`+bigFile+`"} (`+mode+`)`)
		took := time.Since(start)
		got, _ = reqs[len(reqs)-1].lastTool()
		if !strings.HasPrefix(got, head(big, 10_000)) || placeholderKey.MatchString(got) {
			t.Errorf("e %s: the model did not get the result as the host passes it (%d chars, placeholder %v)", mode, len(got), placeholderKey.MatchString(got))
		}
		rows := toolResults(t, h, version, "bs_big")
		if len(rows) != before+1 {
			t.Fatalf("e %s: %d persisted bs_big results, want %d", mode, len(rows), before+1)
		}
		// The host stores the result as it would without the plugin: whole, or cut by its own tool-result cap,
		// never with anything of ours; and the same in every mode.
		s := rows[len(rows)-1].text()
		if !strings.HasPrefix(s, head(big, 10_000)) || strings.Contains(s, "[[extracted-") || strings.Contains(s, "BrainSurgeon") {
			t.Errorf("e %s: the persisted result is not the tool's result as the host keeps it (%d chars, placeholder %v)",
				mode, len(s), placeholderKey.MatchString(s))
		}
		if passed == "" {
			passed = s
		} else if s != passed {
			t.Errorf("e %s: the persisted result (%d chars) differs from the one of the mode before (%d chars)", mode, len(s), len(passed))
		}
		why := ""
		waitFor(t, "e "+mode+": the gateway log says why the result passed through", func() bool {
			why = newLogLines(logBefore, gatewayLogs(h), "passed through unchanged")
			return why != ""
		})
		t.Logf("e %s: turn %s; gateway log: %s", mode, took.Round(100*time.Millisecond), why)
		switch mode {
		case "down":
			proxy.up(t)
		default:
			proxy.mode.Store("pass")
		}
	}
	t.Logf("%s: plugin scenario done in %s", version, time.Since(t0).Round(100*time.Millisecond))
}

// gatewayLogs returns the gateway's output and the host's file log.
func gatewayLogs(h *openclaw.Host) string {
	out, _ := os.ReadFile(h.Gateway.Log)
	file, _ := os.ReadFile(h.State.LogFile())
	return string(out) + "\n" + string(file)
}

// newLogLines returns the lines of after that hold marker and are not in before (joined), or "".
func newLogLines(before, after, marker string) string {
	seen := map[string]int{}
	for _, l := range strings.Split(before, "\n") {
		seen[l]++
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if seen[l] > 0 {
			seen[l]--
			continue
		}
		if strings.Contains(l, marker) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " | ")
}
