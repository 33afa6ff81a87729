//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/piinstall"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// piExtWindow is the context window pi is told for the test model: the daemon's engine fits its views to it, as the
// OpenClaw engine test does with its window.
const piExtWindow = 100_000

// piBigChars is the size of the tool result the test offloads at the source.
const piBigChars = 200_000

// piVersions are the pi releases the extension runs on: the oracle's and the newest on npm (installed by
// .ci/install-openclaw.sh into PI_NEW_MODULES, default ~/.cache/bs-oracle/pi-new/node_modules).
func piVersions(t *testing.T) map[string]string {
	t.Helper()
	_, oracleModules, err := oracle.Node()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{oracle.PiVersion: oracleModules}
	newest := os.Getenv("PI_NEW_MODULES")
	if newest == "" {
		home, _ := os.UserHomeDir()
		newest = filepath.Join(home, ".cache", "bs-oracle", "pi-new", "node_modules")
	}
	var pkg struct{ Version string }
	b, err := os.ReadFile(filepath.Join(newest, filepath.FromSlash(oracle.PiPackage), "package.json"))
	if err == nil && json.Unmarshal(b, &pkg) == nil && pkg.Version != "" {
		out[pkg.Version] = newest
	} else if oracle.Required() {
		t.Fatalf("the newest pi is not installed in %s (bash .ci/install-openclaw.sh installs it): %v", newest, err)
	} else {
		t.Logf("the newest pi is not installed in %s: running on %s only", newest, oracle.PiVersion)
	}
	return out
}

// piRPC is a pi process in RPC mode: commands as JSON lines on its stdin, responses and events on its stdout.
type piRPC struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncBuffer
	n      int
	// events are the events of the current prompt, in order.
	events []json.RawMessage
}

// startPiRPC starts `pi --mode rpc` from modules in cwd with env.
func startPiRPC(t *testing.T, node, modules, cwd string, env []string, args ...string) *piRPC {
	t.Helper()
	cli := filepath.Join(modules, filepath.FromSlash(oracle.PiPackage), "dist", "cli.js")
	cmd := exec.Command(node, append([]string{cli, "--mode", "rpc"}, args...)...)
	cmd.Dir, cmd.Env = cwd, env
	p := &piRPC{cmd: cmd, lines: make(chan []byte, 1024), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = in
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				p.lines <- bytes.TrimRight(line, "\r\n")
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("pi stderr (tail):\n%s", p.stderr.tail(4000))
		}
	})
	return p
}

// send writes one command and returns its response (events that come before it are kept in p.events).
func (p *piRPC) send(t *testing.T, cmd map[string]any, timeout time.Duration) json.RawMessage {
	t.Helper()
	p.n++
	id := "c" + strconv.Itoa(p.n)
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		t.Fatalf("pi rpc: write %s: %v\nstderr: %s", b, err, p.stderr.tail(2000))
	}
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("pi rpc: pi exited before answering %s\nstderr: %s", b, p.stderr.tail(3000))
			}
			var head struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			_ = json.Unmarshal(line, &head)
			if head.Type == "response" && head.ID == id {
				return line
			}
			p.events = append(p.events, line)
		case <-deadline:
			t.Fatalf("pi rpc: no answer to %s within %s\nstderr: %s", b, timeout, p.stderr.tail(3000))
		}
	}
}

// prompt sends msg and waits for the agent to end; it returns the turn's events and fails the test when the
// prompt was refused, the agent's last message is an error, or an extension threw.
func (p *piRPC) prompt(t *testing.T, msg string) []json.RawMessage {
	t.Helper()
	p.events = nil
	resp := p.send(t, map[string]any{"type": "prompt", "message": msg}, 2*time.Minute)
	var r struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(resp, &r); !r.Success {
		t.Fatalf("pi refused the prompt %.80q: %s", msg, resp)
	}
	deadline := time.After(3 * time.Minute)
	for {
		for i, ev := range p.events {
			var head struct {
				Type     string `json:"type"`
				Messages []struct {
					Role         string `json:"role"`
					StopReason   string `json:"stopReason"`
					ErrorMessage string `json:"errorMessage"`
				} `json:"messages"`
			}
			_ = json.Unmarshal(ev, &head)
			switch head.Type {
			case "extension_error":
				t.Fatalf("an extension threw during %.80q: %s", msg, ev)
			case "agent_end":
				for _, m := range head.Messages {
					if m.Role == "assistant" && (m.StopReason == "error" || m.StopReason == "aborted") {
						t.Fatalf("the turn %.80q failed: %s %s", msg, m.StopReason, m.ErrorMessage)
					}
				}
				out := p.events[:i+1]
				p.events = p.events[i+1:]
				return out
			}
		}
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("pi exited during the turn %.80q\nstderr: %s", msg, p.stderr.tail(3000))
			}
			p.events = append(p.events, line)
		case <-deadline:
			t.Fatalf("the turn %.80q did not end within 3 minutes\nstderr: %s", msg, p.stderr.tail(3000))
		}
	}
}

// piExtTurn is one turn's record.
type piExtTurn struct {
	N        int     `json:"turn"`
	Kind     string  `json:"kind"`
	Requests int     `json:"requests"`
	Bytes    int     `json:"bytes"`
	Weighted float64 `json:"weighted"`
	Millis   int64   `json:"millis"`
}

// piExtRun is one run of the script: with or without the extension.
type piExtRun struct {
	Version string      `json:"version"`
	With    bool        `json:"with_extension"`
	Turns   []piExtTurn `json:"turns"`
	// sessionFile is pi's transcript; project its directory's name (the daemon's agent of the session).
	sessionFile, project, sessionID string
}

// piExtEnv is one pi home (HOME, PI_CODING_AGENT_DIR) beside the test model.
type piExtEnv struct {
	home, agentDir, cwd string
	env                 []string
}

func newPiExtEnv(t *testing.T, model *openclaw.Model) *piExtEnv {
	t.Helper()
	home := t.TempDir()
	e := &piExtEnv{home: home, agentDir: filepath.Join(home, ".pi", "agent"), cwd: filepath.Join(home, "work")}
	for _, d := range []string{filepath.Join(e.agentDir, "sessions"), e.cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := map[string]any{"providers": map[string]any{"mock": map[string]any{
		"baseUrl": model.URL() + "/v1", "api": "openai-completions", "apiKey": "mock",
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": piModelID, "name": "Test model", "reasoning": false, "input": []string{"text"},
			"contextWindow": piExtWindow, "maxTokens": 4096,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
	}}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(e.agentDir, "models.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.env = []string{"HOME=" + home, "PI_CODING_AGENT_DIR=" + e.agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0", "NO_COLOR=1", "TERM=dumb"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" || k == "LANG" {
			e.env = append(e.env, kv)
		}
	}
	return e
}

// getenv reads e's environment, for piinstall.
func (e *piExtEnv) getenv(k string) string {
	for _, kv := range e.env {
		if a, b, ok := strings.Cut(kv, "="); ok && a == k {
			return b
		}
	}
	return ""
}

// bigPiTool writes the pi extension of the test tool bs_big (the text of a file, as one text block) and returns its
// path.
func bigPiTool(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "bs-big-pi.js")
	src := `// e2e fixture: the tool bs_big returns the text of the file it is given, exactly.
import fs from "node:fs";
export default function (pi) {
  pi.registerTool({
    name: "bs_big", label: "bs_big", description: "Returns the text of the given file.",
    parameters: { type: "object", additionalProperties: false, required: ["file"], properties: { file: { type: "string" } } },
    async execute(_id, params) {
      const text = fs.readFileSync(String(params.file), "utf8");
      return { content: [{ type: "text", text }], details: { file: params.file, chars: text.length } };
    },
  });
}
`
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// piBigText is the 200,000-character result: ASCII words and newlines, so that characters are bytes.
func piBigText() string {
	var b strings.Builder
	for i := 0; b.Len() < piBigChars; i++ {
		fmt.Fprintf(&b, "big line %06d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:piBigChars]
}

// TestPiExtensionLive runs BrainSurgeon's pi extension in the real pi coding agent (RPC mode; the oracle's 0.70.6 and
// the newest pi on npm) against the test model, beside a daemon in this process that serves pi's sessions dir,
// over the tool-heavy script of [TestEngineLive] (40 turns), and the same script without the extension. The
// extension is installed with `pi install --link` (piinstall.Install) into a settings.json that holds a setting of
// the user's, and uninstalled at the end.
//
//	a. the model's tools hold purge_control and the recall tools;
//	b. summed over the turns from the one where layer 1 first acts (the engine's status), the model receives at
//	   least 60 % fewer bytes than without the extension at the same turns; the cache-weighted input is reported;
//	c. pi's SessionManager loads the session file after every turn (the oracle);
//	d. a 200,000-character tool result is stored at the source: the model sees its placeholder with a preview, and
//	   purge_control restore pages give it back byte for byte within one turn;
//	e. a compaction pi runs (RPC compact) is BrainSurgeon's: the daemon's summary and cut, written by pi, and the file
//	   still loads;
//	f. with the daemon stopped, slow, then answering garbage, every turn succeeds;
//	g. uninstall gives settings.json back byte for byte.
func TestPiExtensionLive(t *testing.T) {
	oracle.Require(t)
	node, _, err := oracle.Node()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRAINSURGEON_SUMMARY_API_KEY", "bs-e2e-summary-key")
	for version, modules := range piVersions(t) {
		t.Run(version, func(t *testing.T) {
			without := runPiScript(t, node, version, modules, false)
			runPiScript(t, node, version, modules, true, without)
		})
	}
}

// runPiScript runs the script on a pi home of its own; with the extension it also runs the checks that compare with
// the run without (given as against).
func runPiScript(t *testing.T, node, version, modules string, with bool, against ...*piExtRun) *piExtRun {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	e := newPiExtEnv(t, model)
	run := &piExtRun{Version: version, With: with}
	script, _ := engineScript(t, t.TempDir())
	args := []string{"--provider", "mock", "--model", piModelID, "--offline",
		"--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "-e", bigPiTool(t, t.TempDir())}
	settings := filepath.Join(e.agentDir, "settings.json")
	userSettings := []byte("{\n  \"defaultThinkingLevel\": \"off\"\n}\n")
	if err := os.WriteFile(settings, userSettings, 0o600); err != nil {
		t.Fatal(err)
	}
	var proxy *daemonProxy
	var daemonURL, apiKey string
	ienv := piinstall.Env{Getenv: e.getenv, HomeDir: func() (string, error) { return e.home, nil }}
	if with {
		sessions := filepath.Join(e.agentDir, "sessions")
		writeConfig(t, sessions, map[string]any{
			"enabled": false, "idle_seconds": 0,
			"compaction": map[string]any{
				"context_window": piExtWindow, "summarize_trigger_percent": 25, "full_trigger_percent": 35, "summarize_keep_recent": 2500,
				"summarizer": map[string]any{"base_url": model.URL() + "/v1", "model": engineSummaryModel, "retries": 0, "timeout_seconds": 20},
			},
		})
		res, err := piinstall.Install(context.Background(), ienv, piinstall.InstallOptions{Link: true, DaemonURL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		apiKey = strings.TrimSpace(string(readFile(t, res.KeyFile)))
		daemonURL, _ = pluginDaemon(t, sessions, apiKey)
		proxy = newDaemonProxy(t, daemonURL)
		// the extension's config names the proxy (install wrote a placeholder URL before the daemon ran)
		cfg, _ := json.Marshal(map[string]any{"daemonUrl": proxy.URL(), "apiKeyFile": res.KeyFile, "timeoutMs": pluginTimeoutMs,
			"toolTimeoutMs": pluginTimeoutMs * 4, "assembleTimeoutMs": pluginTimeoutMs})
		if err := os.WriteFile(filepath.Join(res.Dir, piinstall.ConfigName), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pi := startPiRPC(t, node, modules, e.cwd, e.env, args...)
	state := func() (file, id string) {
		var s struct {
			Data struct {
				SessionFile string `json:"sessionFile"`
				SessionID   string `json:"sessionId"`
			} `json:"data"`
		}
		_ = json.Unmarshal(pi.send(t, map[string]any{"type": "get_state"}, 30*time.Second), &s)
		return s.Data.SessionFile, s.Data.SessionID
	}
	var prevBody []byte
	turn := func(n int, kind, msg string) ([]openclaw.ModelRequest, []json.RawMessage) {
		t.Helper()
		before := len(model.Requests())
		start := time.Now()
		events := pi.prompt(t, msg)
		reqs := model.Requests()[before:]
		rec := piExtTurn{N: n, Kind: kind, Millis: time.Since(start).Milliseconds()}
		for _, q := range reqs {
			if !hasTools(q.Body) {
				continue
			}
			if rec.Requests == 0 {
				rec.Bytes = messagesBytes(t, q.Body)
			}
			rec.Requests++
			rec.Weighted += costOf(prevBody, q.Body).Weighted
			prevBody = q.Body
		}
		run.Turns = append(run.Turns, rec)
		if run.sessionFile == "" {
			run.sessionFile, run.sessionID = state()
			run.project = filepath.Base(filepath.Dir(run.sessionFile))
		}
		// c. pi's SessionManager loads the file after every turn.
		if run.sessionFile != "" {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			s, err := oracle.Summary(ctx, run.sessionFile)
			cancel()
			if err != nil {
				t.Fatalf("turn %d: pi's SessionManager does not load %s: %v", n, run.sessionFile, err)
			}
			if _, ok := s[0].LLMCount(); !ok {
				t.Fatalf("turn %d: pi cannot build the model's messages of %s: %s", n, run.sessionFile, s[0].LLMMessageCount)
			}
		}
		return reqs, events
	}
	firstCollapse := 0
	for i, msg := range script {
		reqs, _ := turn(i+1, "script", msg)
		if i == 0 && with {
			// a. the model's tools.
			var c chatRequest
			if err := json.Unmarshal(reqs[0].Body, &c); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range c.Tools {
				names = append(names, tool.Function.Name)
			}
			for _, want := range []string{"purge_control", "recall_grep", "recall_describe", "recall_expand"} {
				if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
					t.Errorf("the model's tools %v lack %s", names, want)
				}
			}
		}
		if with && firstCollapse == 0 {
			st, err := piEngineStatus(daemonURL, apiKey, run.project, run.sessionID)
			if err != nil && i > 0 {
				t.Fatalf("turn %d: %v", i+1, err)
			}
			if st.Collapsed > 0 {
				firstCollapse = i + 1
			}
		}
	}
	t.Logf("pi %s, extension %v: %d script turns in %s", version, with, len(script), time.Since(t0).Round(time.Second))
	if !with {
		return run
	}
	if firstCollapse == 0 {
		t.Fatalf("layer 1 never acted over %d turns (engine status of %s/%s)", len(script), run.project, run.sessionID)
	}
	// b. the bytes, against the run without the extension at the same turns.
	w := against[0]
	var withBytes, withoutBytes int
	var withMoney, withoutMoney float64
	var table strings.Builder
	fmt.Fprintf(&table, "%5s %10s %10s %7s %12s %12s\n", "turn", "with", "without", "ratio", "weighted", "weighted w/o")
	for i := range script {
		a, b := run.Turns[i], w.Turns[i]
		mark := " "
		if a.N >= firstCollapse {
			mark = "*"
			withBytes += a.Bytes
			withoutBytes += b.Bytes
			withMoney += a.Weighted
			withoutMoney += b.Weighted
		}
		fmt.Fprintf(&table, "%4d%s %10d %10d %6.1f%% %12.0f %12.0f\n", a.N, mark, a.Bytes, b.Bytes, 100*float64(a.Bytes)/float64(max(b.Bytes, 1)), a.Weighted, b.Weighted)
	}
	red := 1 - float64(withBytes)/float64(max(withoutBytes, 1))
	money := 1 - withMoney/max(withoutMoney, 1)
	t.Logf("pi %s: the model's messages per script turn (* from turn %d, where layer 1 first acts):\n%s"+
		"summed from turn %d: %d bytes with the extension, %d without: %.1f%% fewer; cache-weighted input %.0f against %.0f: %.1f%% less",
		version, firstCollapse, table.String(), firstCollapse, withBytes, withoutBytes, 100*red, withMoney, withoutMoney, 100*money)
	if red < 0.60 {
		t.Errorf("from turn %d the model received %.1f%% fewer bytes with the extension, want at least 60%%", firstCollapse, 100*red)
	}

	// d. a 200,000-character result, stored at the source and restored in pages within one turn.
	big := piBigText()
	bigFile := filepath.Join(e.cwd, "big.txt")
	if err := os.WriteFile(bigFile, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	n := len(script)
	reqs, _ := turn(n+1, "offload", `Read the big one. CALL:bs_big:{"file":"`+bigFile+`"}`)
	last := string(reqs[len(reqs)-1].Body)
	m := regexp.MustCompile(`\[\[extracted-(tc-[A-Za-z0-9_-]+)\]\]`).FindStringSubmatch(last)
	esc := func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }
	if m == nil || strings.Contains(last, esc(big[:5000])) || !strings.Contains(last, esc(big[:300])) {
		t.Fatalf("the model did not receive the big result as a placeholder with a preview (%d bytes of request): %.600s", len(last), last[max(0, len(last)-3000):])
	}
	if strings.Contains(string(readFile(t, run.sessionFile)), esc(big[:5000])) {
		t.Fatal("pi's transcript holds the big result: it was not stored at the source")
	}
	key := m[1]
	const page = 15000
	var calls []string
	for off := 0; off < piBigChars; off += page {
		calls = append(calls, fmt.Sprintf(`CALL:purge_control:{"action":"restore","value_id":"%s","offset":%d,"max_chars":%d}`, key, off, page))
	}
	reqs, _ = turn(n+2, "restore", "Restore it. "+strings.Join(calls, " "))
	// Each page reaches the model in the request after its call, as that request's newest tool result (the view
	// may collapse the pages before it, as it does any old tool result).
	if len(reqs) != len(calls)+1 {
		t.Fatalf("the restore turn made %d model requests, want %d (one per page and the last)", len(reqs), len(calls)+1)
	}
	var pages []string
	for _, q := range reqs[1:] {
		var c chatRequest
		if err := json.Unmarshal(q.Body, &c); err != nil {
			t.Fatal(err)
		}
		texts := toolMessageTexts(c)
		pages = append(pages, texts[len(texts)-1])
	}
	var got strings.Builder
	for i, p := range pages {
		hdr := fmt.Sprintf("[BrainSurgeon %s: characters ", key)
		if !strings.HasPrefix(p, hdr) {
			t.Fatalf("page %d does not start with its header: %.200q", i, p)
		}
		_, body, ok := strings.Cut(p, "]")
		if !ok {
			t.Fatalf("page %d has no header end: %.200q", i, p)
		}
		want := min(page, piBigChars-i*page)
		if len(body) == want+1 && body[0] == '\n' {
			body = body[1:]
		}
		got.WriteString(body)
	}
	if got.String() != big {
		t.Fatalf("the pages give %d characters back, not the result byte for byte (%d)", got.Len(), len(big))
	}
	t.Logf("pi %s: the %d-character result reached the model as %s with a preview, and %d pages gave it back byte for byte in one turn", version, piBigChars, key, len(pages))

	// e. a compaction pi runs is BrainSurgeon's.
	before := len(readFile(t, run.sessionFile))
	resp := pi.send(t, map[string]any{"type": "compact"}, 3*time.Minute)
	var cr struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
		Data    struct {
			Summary          string          `json:"summary"`
			FirstKeptEntryID string          `json:"firstKeptEntryId"`
			Details          json.RawMessage `json:"details"`
		} `json:"data"`
	}
	if err := json.Unmarshal(resp, &cr); err != nil || !cr.Success {
		t.Fatalf("pi's compact: %s", resp)
	}
	if !bytes.Contains(cr.Data.Details, []byte(`"brainsurgeon"`)) {
		t.Fatalf("pi's compaction is not BrainSurgeon's: details %s", cr.Data.Details)
	}
	tail := readFile(t, run.sessionFile)[before:]
	if !bytes.Contains(tail, []byte(`"type":"compaction"`)) || !bytes.Contains(tail, []byte(`"fromHook":true`)) {
		t.Fatalf("pi wrote no compaction entry from the extension: %.300s", tail)
	}
	turn(n+3, "after-compaction", "Go on after the compaction.")
	t.Logf("pi %s: pi's compaction is BrainSurgeon's (first kept entry %s, %d characters of summary)", version, cr.Data.FirstKeptEntryID, len(cr.Data.Summary))

	// f. the daemon down, slow, answering garbage: every turn succeeds.
	proxy.down(t)
	turn(n+4, "daemon-down", `Turn while the daemon is down. CALL:bs_big:{"file":"`+bigFile+`"}`)
	turn(n+5, "daemon-down", "Another turn while the daemon is down.")
	proxy.up(t)
	proxy.mode.Store("slow")
	turn(n+6, "daemon-slow", "A turn while the daemon is slow.")
	proxy.mode.Store("garbage")
	turn(n+7, "daemon-garbage", `A turn while the daemon answers garbage. CALL:bs_big:{"file":"`+bigFile+`"}`)
	turn(n+8, "daemon-garbage", "Another turn while the daemon answers garbage.")
	proxy.mode.Store("pass")
	turn(n+9, "after", "And the daemon is back.")

	// brainsurgeon pi status checks the running system end to end.
	if r := piCLI(t, e, "pi", "status", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"healthy": true`) {
		t.Errorf("pi status: %s", r)
	}

	// g. brainsurgeon pi uninstall gives settings.json back and writes the offloaded results back.
	pi.stdin.Close()
	if err := pi.cmd.Wait(); err != nil {
		t.Logf("pi exited: %v", err)
	}
	r := piCLI(t, e, "pi", "uninstall", "--yes", "--json")
	if r.code != 0 {
		t.Fatalf("pi uninstall: %s", r)
	}
	var un struct {
		SettingsAction string `json:"settings_action"`
		Cleanup        struct {
			WrittenBack int `json:"written_back"`
		} `json:"cleanup"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &un); err != nil {
		t.Fatalf("pi uninstall --json: %v\n%s", err, r)
	}
	if got := readFile(t, settings); !bytes.Equal(got, userSettings) || un.SettingsAction != "restored" {
		t.Errorf("settings.json after uninstall (%s):\n%q\nwant\n%q", un.SettingsAction, got, userSettings)
	}
	after := string(readFile(t, run.sessionFile))
	if un.Cleanup.WrittenBack == 0 || strings.Contains(after, "[[extracted-"+key+"]]") || !strings.Contains(after, esc(big)) {
		t.Errorf("uninstall wrote %d results back; the transcript still holds the placeholder of %s, or not the result", un.Cleanup.WrittenBack, key)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	_, err = oracle.Summary(sctx, run.sessionFile)
	cancel()
	if err != nil {
		t.Errorf("pi's SessionManager does not load the transcript after uninstall: %v", err)
	}
	t.Logf("pi %s with the extension: %s in all", version, time.Since(t0).Round(time.Second))
	return run
}

// piCLI runs the brainsurgeon binary in e's pi home.
func piCLI(t *testing.T, e *piExtEnv, args ...string) cliResult {
	t.Helper()
	return runBinEnv(t, bsBin, e.env, args...)
}

// piEngineStatus asks the daemon for a pi session's engine status.
func piEngineStatus(daemonURL, key, project, sid string) (engine.Status, error) {
	if project == "" || sid == "" {
		return engine.Status{}, errors.New("no session yet")
	}
	req, _ := http.NewRequest(http.MethodGet, daemonURL+"/api/sessions/"+project+"/"+sid, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return engine.Status{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var d struct {
		Engine *engine.Status `json:"engine"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &d) != nil || d.Engine == nil {
		return engine.Status{}, fmt.Errorf("GET /api/sessions/%s/%s: %d %.200s", project, sid, resp.StatusCode, raw)
	}
	return *d.Engine, nil
}
