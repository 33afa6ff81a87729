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
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	brainsurgeon "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// Figures of the engine scenario. The host's own part of every request is large: its system prompt and tool
// definitions measure about 15,200 tokens on 2026.9.6 and 22,300 on 2026.7.35 (more by the host's own estimate,
// which it compares with the budget), the host keeps up to 20,000 tokens in reserve (2026.7.35 always 20,000;
// 2026.9.6 at most a quarter of the window) and, when it compacts, keeps the last 20,000 tokens. At 48,000 and
// 64,000 tokens the legacy engine's turns failed on 2026.7.35 ("Context overflow: prompt too large for the model":
// its compaction could not cut below what it keeps). 100,000 tokens is a window at which the legacy engine gets
// every turn through with the host's defaults (its compaction in "default" mode: see [engineConfigure]), its own
// compaction running (on 2026.7.35 at every turn from the 18th). The daemon's summary thresholds are lowered (see [engineConfigure]) so that the engine's summary layers
// run at this window too.
const (
	engineWindow      = 100_000 // tokens
	engineScriptTurns = 40
	// engineCompactionPrefix starts the user message through which OpenClaw shows the model its own compaction
	// summary.
	engineCompactionPrefix = "The conversation history before this point was compacted"
	// engineSummaryModel is the model name the daemon's summarizer asks the test model for.
	engineSummaryModel = "bs-e2e-summarizer"
)

// TestEngineLive runs the same scripted tool-heavy session (40 turns: mostly bs_big calls that read files of 3 to
// 12 KB, some plain turns, a few turns with several calls) on both eras (2026.9.6, 2026.7.35), twice each, with the
// same small context window: with the host's legacy context engine, then with BrainSurgeon's engine selected
// (plugins.slots.contextEngine). The daemon runs in-process beside the gateway, its summarizer pointed at the test
// model's OpenAI endpoint, its file-level extraction off; the plugin is installed from its `npm pack` tarball.
//
// Per turn it records, from the model's log: the bytes of the messages of the turn's first model request, the
// model's measured size of that request (see [openclaw.MeasuredTokens]), and whether the request prefix stayed
// byte-identical (see [prefixStable]). The table goes to the test log and, as JSON, to $BRAINSURGEON_E2E_REPORT
// when set.
//
// Legacy run: every turn succeeds; what the host's own compaction did is reported (turns whose first request
// shows its summary, compaction entries in the rows or lines, the files the model can still read at the end).
//
// Engine run (when the plugin registers a context engine):
//
//	a. every turn succeeds and the gateway log has no degrade or quarantine line for our engine;
//	b. summed over the turns from the one where layer 1 first acts, the model receives at least 60 % fewer bytes
//	   than with the legacy engine at the same turns; the summary layer runs;
//	   the cache-weighted input of the same turns (what a provider with prompt caching bills) is reported per
//	   request, per turn and summed against legacy's, with the least any context engine could cost on the same
//	   requests (see [moneyReport], [floorOf]);
//	c. every model request whose prefix changed (it does not keep the previous request's messages byte for byte) comes
//	   after a view that changed a layer (or passed the host's messages through), but for at most two (the host's
//	   own doing, reported); the changes are counted;
//	d. the median of |predicted − measured| / measured over the turns is at most 5 %;
//	e. purge_control restore of a collapsed value and recall_expand of a summary give the originals back in the
//	   same turn, byte-identical to the host's rows or lines, and the restored value is in the next turn's view;
//	f. sessions.compact compacts;
//	g. with the daemon stopped for 2 turns, then answering garbage for 2, every turn succeeds;
//	h. the host's rows or lines written before are unchanged at the end;
//	i. the system prompt of every script turn's first request is the legacy run's at the same turn but for the
//	   engine's own addition (the daemon's warning line) and the place of the host's memory section ("## Memory
//	   Recall", which OpenClaw builds in only for legacy and the engine asks for: OpenClaw puts an engine's addition
//	   after its cache boundary); see [systemPromptDiff].
func TestEngineLive(t *testing.T) {
	oracle.Require(t)
	tgz := packPlugin(t)
	engineReady := pluginRegistersEngine(t)
	// the daemons' summarizer key (set here: the parallel subtests may not set the environment)
	t.Setenv("BRAINSURGEON_SUMMARY_API_KEY", "bs-e2e-summary-key")
	// The four runs are independent hosts (own gateway, model, daemon and state dir) and run at once: the releases
	// as parallel subtests, and within each the legacy run in a goroutine of its own beside the engine run (not a
	// parallel subtest, so that it needs no slot of -parallel: the engine run waits for it, for the checks that
	// compare with it).
	for _, v := range []string{openclaw.V9, openclaw.V7} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			legacy := make(chan *engineRun, 1)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.Run("legacy", func(t *testing.T) {
					var run *engineRun
					defer func() { legacy <- run }() // also when the run failed: the engine run stops waiting
					run = runEngineScenario(t, v, tgz, false, nil)
				})
			}()
			t.Run("engine", func(t *testing.T) {
				if !engineReady {
					t.Skip("the plugin registers no context engine (openclaw-plugin/*.js never calls registerContextEngine)")
				}
				runEngineScenario(t, v, tgz, true, legacy)
			})
			wg.Wait()
		})
	}
}

// pluginRegistersEngine reports whether the plugin's sources register a context engine.
func pluginRegistersEngine(t *testing.T) bool {
	t.Helper()
	root, err := oracle.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "openclaw-plugin", "*.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if bytes.Contains(readFile(t, f), []byte("registerContextEngine(")) {
			return true
		}
	}
	return false
}

// engineFile returns the deterministic text of the script's file i: 3 to 12 KB of varied lines (words of a small
// vocabulary drawn by a linear congruential generator seeded with i, quotes, backslashes, tabs and some non-ASCII).
func engineFile(i int) string {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
		"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform",
		"victor", "whiskey", "xray", "yankee", "zulu", "\"quoted\"", "back\\slash", "tab\there", "café", "naïve",
		"Grüße", "→", "✓", "0x7f", "/srv/data/file.go", "func()", "{}", "[]", "err != nil"}
	size := 3000 + (i*7919)%9001
	x := uint64(i)*2654435761 + 12345
	next := func() int {
		x = x*6364136223846793005 + 1442695040888963407
		return int(x >> 33)
	}
	var b strings.Builder
	for line := 0; b.Len() < size; line++ {
		fmt.Fprintf(&b, "file %02d line %03d:", i, line)
		for n := 4 + next()%9; n > 0; n-- {
			b.WriteByte(' ')
			b.WriteString(words[next()%len(words)])
		}
		fmt.Fprintf(&b, " #%x\n", next()%65536)
	}
	return b.String()
}

// engineScript writes the script's files under dir and returns its turns: mostly one bs_big call, every seventh
// turn plain text, every ninth turn two or three calls.
func engineScript(t *testing.T, dir string) (turns []string, files []string) {
	t.Helper()
	nfile := 0
	file := func() string {
		p := filepath.Join(dir, fmt.Sprintf("file%02d.txt", nfile))
		if err := os.WriteFile(p, []byte(engineFile(nfile)), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
		nfile++
		return `CALL:bs_big:{"file":"` + p + `"}`
	}
	for i := 1; i <= engineScriptTurns; i++ {
		switch {
		case i%7 == 0:
			turns = append(turns, fmt.Sprintf("Turn %d: no tools this time, just tell me where we are.", i))
		case i%9 == 0:
			calls := []string{file(), file()}
			if i%18 == 0 {
				calls = append(calls, file())
			}
			turns = append(turns, fmt.Sprintf("Turn %d: read these. %s", i, strings.Join(calls, " ")))
		default:
			turns = append(turns, fmt.Sprintf("Turn %d: read this. %s", i, file()))
		}
	}
	return turns, files
}

// engineTurn is one turn's record.
type engineTurn struct {
	N    int    `json:"turn"`
	Kind string `json:"kind"` // "script", "restore", "expand", "daemon-down", "daemon-garbage", "after"
	// Requests counts the turn's model requests (tool-loop continuations included); SummaryCalls those without
	// tools (the host's own summary calls).
	Requests     int `json:"requests"`
	SummaryCalls int `json:"summary_calls"`
	// Bytes is the size of the JSON of the messages of the turn's first model request; Tokens the model's
	// measured size of that request; AllBytes the messages of all its requests.
	Bytes    int `json:"bytes"`
	Tokens   int `json:"measured_tokens"`
	AllBytes int `json:"all_bytes"`
	// Messages counts the first request's messages; SystemBytes is the size of its system messages (the host's
	// system prompt, the same every turn).
	Messages    int `json:"messages"`
	SystemBytes int `json:"system_bytes"`
	// HistoryBytes is Bytes without SystemBytes: what a context engine decides.
	HistoryBytes int `json:"history_bytes"`
	// PrefixStable says whether the first request kept the previous turn's first request as its prefix.
	PrefixStable bool `json:"prefix_stable"`
	// HostSummary is true when the first request shows the host's compaction summary.
	HostSummary bool `json:"host_summary"`
	// The engine's first view of the turn (engine run only).
	Predicted   int      `json:"predicted_tokens,omitempty"`
	Layers      []string `json:"layers,omitempty"`
	ViewChanged bool     `json:"view_prefix_changed,omitempty"`
	Views       int      `json:"views,omitempty"`
	Passthrough string   `json:"passthrough,omitempty"`
	Millis      int64    `json:"millis"`
	// The turn's cache-weighted input (see [turnCosts]): PromptBytes, CachedBytes, Weighted and Floor sum its
	// agent requests (Costs, one each); SummaryPromptBytes and SummaryWeighted its summary requests.
	PromptBytes        int           `json:"prompt_bytes"`
	CachedBytes        int           `json:"cached_bytes"`
	Weighted           float64       `json:"weighted"`
	Floor              float64       `json:"floor"`
	Costs              []requestCost `json:"request_costs"`
	SummaryPromptBytes int           `json:"summary_prompt_bytes"`
	SummaryWeighted    float64       `json:"summary_weighted"`

	start, end time.Time
	first      []json.RawMessage
	last       chatRequest
	bodies     [][]byte
	at         []time.Time
	// sums is how many summarizer requests the model had received when the turn was recorded.
	sums int

	// system is the text of the first request's system messages.
	system string
}

// engineRun is one run's report.
type engineRun struct {
	Version string       `json:"version"`
	Mode    string       `json:"mode"`
	Window  int          `json:"window"`
	Turns   []engineTurn `json:"turns"`
	// HostCompactions counts the compaction entries in the host's rows or lines at the end; HostSummaryTurns the
	// turns whose first request showed the host's compaction summary.
	HostCompactions  int `json:"host_compactions"`
	HostSummaryTurns int `json:"host_summary_turns"`
	// FilesVisible counts the script's files whose text the model still received whole in the last script
	// turn's first request; Files how many the script read.
	FilesVisible int `json:"files_visible"`
	Files        int `json:"files"`
	// PrefixChanges counts the turns (from the second) whose request prefix changed.
	PrefixChanges int `json:"prefix_changes"`
	// Engine figures (engine run).
	// FirstCollapseTurn is the turn where layer 1 first acted; BytesFromCollapse the history bytes (system
	// prompt excluded) of the turns from there, LegacyBytesSame the legacy run's at the same turns, Reduction
	// the share saved, ReductionAll the share saved on the whole messages.
	FirstCollapseTurn int     `json:"first_collapse_turn,omitempty"`
	BytesFromCollapse int     `json:"history_bytes_from_collapse,omitempty"`
	LegacyBytesSame   int     `json:"legacy_history_bytes_same_turns,omitempty"`
	Reduction         float64 `json:"reduction,omitempty"`
	ReductionAll      float64 `json:"reduction_with_system_prompt,omitempty"`
	ViewChanges       int     `json:"view_prefix_changes,omitempty"`
	// Requests counts the script's model requests (with tools); RequestPrefixChanges those whose messages did not
	// keep the previous request's prefix; ViewRequestChanges those whose view (the assemble just before it) said
	// prefix_changed.
	Requests             int `json:"requests,omitempty"`
	RequestPrefixChanges int `json:"request_prefix_changes,omitempty"`
	ViewRequestChanges   int `json:"view_request_prefix_changes,omitempty"`
	// UnexplainedChanges counts the requests whose prefix changed with no layer change of ours before them.
	UnexplainedChanges int `json:"unexplained_prefix_changes,omitempty"`
	// Money is the cache-weighted input from FirstCollapseTurn on, against legacy's (see [moneyReport]).
	Money           *moneyFigures `json:"money,omitempty"`
	MedianError     float64       `json:"median_prediction_error,omitempty"`
	Layers          []string      `json:"layers_seen,omitempty"`
	Summaries       int           `json:"summaries,omitempty"`
	SummaryRequests int           `json:"summary_requests,omitempty"`
	Compact         string        `json:"compact,omitempty"`
	Seconds         float64       `json:"seconds"`
	// SystemTurns counts the script turns whose system prompt was compared with the legacy run's; MemorySection
	// says whether the legacy run's holds the host's memory section; OwnAdditionTurns counts the turns whose system
	// prompt holds the engine's own addition.
	SystemTurns      int  `json:"system_prompt_turns_compared,omitempty"`
	MemorySection    bool `json:"memory_section,omitempty"`
	OwnAdditionTurns int  `json:"own_addition_turns,omitempty"`

	// stateDir is the host's state dir, which its system prompt names.
	stateDir string
}

var (
	engineReportMu sync.Mutex
	engineReports  = map[string]*engineRun{}
)

// writeEngineReport writes every run reported so far to $BRAINSURGEON_E2E_REPORT, when set.
func writeEngineReport(t *testing.T, r *engineRun) {
	t.Helper()
	engineReportMu.Lock()
	defer engineReportMu.Unlock()
	engineReports[r.Version+"/"+r.Mode] = r
	p := os.Getenv("BRAINSURGEON_E2E_REPORT")
	if p == "" {
		return
	}
	b, err := json.MarshalIndent(engineReports, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Errorf("write the report: %v", err)
	}
}

// requestMessages returns the raw messages of a model request.
func requestMessages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request: %v", err)
	}
	return req.Messages
}

// messagesBytes is the size of the JSON of a request's messages member.
func messagesBytes(t *testing.T, body []byte) int {
	t.Helper()
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request: %v", err)
	}
	return len(req.Messages)
}

// prefixStable reports whether the request prefix stayed byte-identical from one turn's first model request
// (prev) to the next turn's (next). The prefix of prev is its messages without its final user messages (the
// turn's prompt and the host's internal context after it, which the next turn does not repeat as they were
// sent): it is stable when those messages are, one by one and byte for byte, the first messages of next.
func prefixStable(prev, next []json.RawMessage) bool {
	n := len(prev)
	for n > 0 {
		var m struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(prev[n-1], &m) != nil || m.Role != "user" {
			break
		}
		n--
	}
	if n > len(next) {
		return false
	}
	for i := 0; i < n; i++ {
		if !bytes.Equal(prev[i], next[i]) {
			return false
		}
	}
	return true
}

// hasTools reports whether a model request offers tools (an agent request, not a summary call).
func hasTools(body []byte) bool {
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	return json.Unmarshal(body, &req) == nil && len(req.Tools) > 0
}

// runTurn runs one turn that must succeed and records it from the model's log.
func runTurn(t *testing.T, h *openclaw.Host, m *openclaw.Model, n int, kind, msg string, prev *engineTurn) engineTurn {
	t.Helper()
	before := len(m.Requests())
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	rec := engineTurn{N: n, Kind: kind, start: time.Now()}
	// through the gateway's client process: the gateway's agent method as `openclaw agent` calls it, without a CLI
	// start-up per turn
	_, err := h.Gateway.AgentCall(ctx, openclaw.Turn{Key: pluginKey, Message: msg})
	rec.end = time.Now()
	rec.Millis = rec.end.Sub(rec.start).Milliseconds()
	if err != nil {
		t.Fatalf("turn %d (%s) %.80q failed: %v", n, kind, msg, err)
	}
	for _, q := range m.Requests()[before:] {
		if q.Status != http.StatusOK {
			continue
		}
		if !hasTools(q.Body) {
			rec.SummaryCalls++
			continue
		}
		rec.Requests++
		rec.AllBytes += messagesBytes(t, q.Body)
		rec.bodies = append(rec.bodies, q.Body)
		rec.at = append(rec.at, q.At)
		if rec.Requests == 1 {
			rec.first = requestMessages(t, q.Body)
			rec.Messages = len(rec.first)
			for _, m := range rec.first {
				var r struct {
					Role string `json:"role"`
				}
				if json.Unmarshal(m, &r) == nil && r.Role == "system" {
					rec.SystemBytes += len(m)
					rec.system += messageText(m) + "\n"
				}
			}
			rec.Bytes = messagesBytes(t, q.Body)
			rec.HistoryBytes = rec.Bytes - rec.SystemBytes
			rec.Tokens = q.Tokens
			rec.HostSummary = bytes.Contains(q.Body, []byte(engineCompactionPrefix))
		}
	}
	if rec.Requests == 0 {
		t.Fatalf("turn %d (%s) made no model request", n, kind)
	}
	rec.last = decodeChat(t, rec.bodies[len(rec.bodies)-1])
	rec.PrefixStable = prev == nil || prefixStable(prev.first, rec.first)
	// The summary requests of the turn: the host's own summary calls (chat requests without tools) and the
	// daemon's summarizer requests since the previous turn was recorded.
	var summaries [][]byte
	for _, q := range m.Requests()[before:] {
		if q.Status == http.StatusOK && !hasTools(q.Body) {
			summaries = append(summaries, q.Body)
		}
	}
	sums := m.SummaryRequests()
	rec.sums = len(sums)
	from := 0
	if prev != nil {
		from = prev.sums
	}
	for _, q := range sums[min(from, len(sums)):] {
		if q.Status == http.StatusOK {
			summaries = append(summaries, q.Body)
		}
	}
	turnCosts(&rec, prev, summaries)
	return rec
}

// hostEvents returns the session's stored rows (2026.8+) or lines (before), raw, in order.
func hostEvents(t *testing.T, h *openclaw.Host, version, sid string) []string {
	t.Helper()
	if version == openclaw.V9 {
		var out []string
		for _, r := range sessionRows(t, storePath(h.State), sid) {
			out = append(out, r.Event)
		}
		return out
	}
	p := filepath.Join(h.State.SessionsDir("main"), sid+".jsonl")
	if m, err := h.State.Sessions("main"); err == nil {
		if e, ok := m[pluginKey]; ok && e.SessionID == sid && e.SessionFile != "" {
			p = e.SessionFile
		}
	}
	var out []string
	for _, l := range strings.Split(string(readFile(t, p)), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// hostEntry is a stored message entry: its id and the text of its content blocks.
type hostEntry struct {
	ID      string
	Type    string
	Role    string
	Text    string
	Content json.RawMessage
}

func parseHostEntry(ev string) hostEntry {
	var e struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Message *struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal([]byte(ev), &e) != nil {
		return hostEntry{}
	}
	out := hostEntry{ID: e.ID, Type: e.Type}
	if e.Message != nil {
		out.Role, out.Content = e.Message.Role, e.Message.Content
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		var s string
		if json.Unmarshal(e.Message.Content, &s) == nil {
			out.Text = s
		} else if json.Unmarshal(e.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				out.Text += b.Text
			}
		}
	}
	return out
}

// engineState reads the engine's state of the session.
func engineState(t *testing.T, h *openclaw.Host, sid string) (engine.State, bool) {
	t.Helper()
	dir := config.StateDir(h.State.AgentsDir())
	if _, err := os.Stat(filepath.Join(dir, "engine", "main", sid+".json")); err != nil {
		return engine.State{}, false
	}
	// The state file with its journal applied (the engine appends a record per view).
	e := &engine.Engine{StateDir: dir}
	st, err := e.SavedState(brainsurgeon.SessionRef{Backend: brainsurgeon.BackendSQLite, Agent: "main", ID: sid})
	if err != nil {
		t.Fatalf("engine state of %s: %v", sid, err)
	}
	return st, true
}

// engineStatus asks the daemon for the session's detail and returns its engine member.
func engineStatus(t *testing.T, daemonURL, key, sid string) (engine.Status, error) {
	req, _ := http.NewRequest(http.MethodGet, daemonURL+"/api/sessions/main/"+sid, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return engine.Status{}, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return engine.Status{}, fmt.Errorf("GET /api/sessions/main/%s: HTTP %d: %.300s", sid, resp.StatusCode, raw)
	}
	var d struct {
		Engine *engine.Status `json:"engine"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return engine.Status{}, err
	}
	if d.Engine == nil {
		return engine.Status{}, fmt.Errorf("GET /api/sessions/main/%s: no engine member: %.300s", sid, raw)
	}
	return *d.Engine, nil
}

// toolMessageTexts returns the texts of a request's tool messages, in order.
func toolMessageTexts(c chatRequest) []string {
	var out []string
	for _, m := range c.Messages {
		if m.Role == "tool" {
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				s = string(m.Content)
			}
			out = append(out, s)
		}
	}
	return out
}

var viewPlaceholderRE = regexp.MustCompile(`\[\[extracted-([A-Za-z0-9_-]+)\]\]`)

// median returns the median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// engineConfigure writes the daemon's config (file-level extraction off, the window, the summarizer at the test
// model) and the host's (the model's window; with engine, the context-engine slot).
func engineConfigure(t *testing.T, st *openclaw.State, version, modelURL string, withEngine bool) {
	t.Helper()
	// 2026.7.35's part of the request (system prompt and tools, about 22,000 tokens) is larger than 2026.9.6's
	// (about 16,000): its thresholds sit higher, so that the summary layers leave a kept part, as on 9.6.
	sumPct, fullPct := 25, 35
	if strings.HasPrefix(version, "2026.7.") {
		sumPct, fullPct = 35, 50
	}
	writeConfig(t, st.AgentsDir(), map[string]any{
		"enabled": false,
		"compaction": map[string]any{
			"context_window": engineWindow,
			// the host's part alone is a sixth to a fifth of the window: at the default thresholds (88 % and
			// 95 %) the summary layers would wait for more history than 40 turns leave once layer 1 collapsed it
			"summarize_trigger_percent": sumPct, "full_trigger_percent": fullPct, "summarize_keep_recent": 2500,
			"summarizer": map[string]any{"base_url": modelURL + "/v1", "model": engineSummaryModel,
				"retries": 0, "timeout_seconds": 20},
		},
	})
	raw := readFile(t, st.ConfigPath())
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	providers := obj(obj(cfg, "models"), "providers")
	models, _ := obj(providers, "ollama")["models"].([]any)
	for _, m := range models {
		if mm, ok := m.(map[string]any); ok {
			mm["contextWindow"] = engineWindow
		}
	}
	// The host's default compaction, not its "safeguard" mode (the default it writes when none is set): the
	// safeguard audits a summary against the host's own section list and the identifiers of the conversation,
	// which the test model's summary does not meet, and then fails the turn.
	hostCompaction := obj(obj(obj(cfg, "agents"), "defaults"), "compaction")
	hostCompaction["mode"] = "default"
	if withEngine {
		obj(obj(cfg, "plugins"), "slots")["contextEngine"] = "brainsurgeon"
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.ConfigPath(), out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runEngineScenario runs the scenario of [TestEngineLive] on a host of its own and returns its report. The engine
// run (withEngine) receives the legacy run of the same release from legacyRun once its script is done (nil when
// that run failed).
func runEngineScenario(t *testing.T, version, tgz string, withEngine bool, legacyRun <-chan *engineRun) *engineRun {
	t0 := time.Now()
	mode := "legacy"
	if withEngine {
		mode = "engine"
	}
	run := &engineRun{Version: version, Mode: mode, Window: engineWindow}
	defer func() {
		// also after a failed turn: the table so far
		for i := range run.Turns {
			r := &run.Turns[i]
			if r.HostSummary {
				run.HostSummaryTurns++
			}
			if r.N > 1 && r.Kind == "script" && !r.PrefixStable {
				run.PrefixChanges++
			}
		}
		run.Seconds = time.Since(t0).Seconds()
		logEngineTable(t, run)
		writeEngineReport(t, run)
	}()
	work := t.TempDir()
	var kb [32]byte
	_, _ = rand.Read(kb[:])
	apiKey := hex.EncodeToString(kb[:])
	keyFile := filepath.Join(work, "api.key")
	if err := os.WriteFile(keyFile, []byte(apiKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, files := engineScript(t, work)
	run.Files = len(files)
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	var daemonURL string
	var proxy *daemonProxy
	h := openclaw.NewHostWithModel(t, version, model.URL(), func(st *openclaw.State) error {
		// the daemon reads its config when it opens: write it first
		engineConfigure(t, st, version, model.URL(), withEngine)
		daemonURL, _ = pluginDaemon(t, st.AgentsDir(), apiKey)
		proxy = newDaemonProxy(t, daemonURL)
		installPlugin(t, st, version, tgz, proxy.URL(), keyFile)
		engineConfigure(t, st, version, model.URL(), withEngine) // plugins install rewrote openclaw.json
		return nil
	})
	run.stateDir = h.State.Dir
	t.Logf("%s %s: setup %s", version, mode, time.Since(t0).Round(100*time.Millisecond))

	// The script.
	var prev *engineTurn
	var sid string
	var snapshot []string
	for i, msg := range script {
		rec := runTurn(t, h, model, i+1, "script", msg, prev)
		run.Turns = append(run.Turns, rec)
		prev = &run.Turns[len(run.Turns)-1]
		if i == 0 {
			sid = liveSessionID(t, h, pluginKey)
		}
		if i == 4 {
			snapshot = hostEvents(t, h, version, sid)
		}
	}
	last := run.Turns[len(run.Turns)-1]
	lastReq := last.bodies[0]
	for _, f := range files {
		want, _ := json.Marshal(string(readFile(t, f)))
		if bytes.Contains(lastReq, want[1:len(want)-1]) {
			run.FilesVisible++
		}
	}

	var st engine.State
	if withEngine {
		legacy := <-legacyRun
		var ok bool
		if st, ok = engineState(t, h, sid); !ok {
			t.Errorf("a: the engine kept no state for session %s: the engine never served a view", sid)
		}
		joinViews(run, st)
		systemPromptChecks(t, run, legacy, len(script))
		engineChecks(t, h, model, version, sid, run, st, legacy, daemonURL, apiKey, proxy, files)
	}

	// The host's rows or lines written before the snapshot are unchanged.
	nowSID := liveSessionID(t, h, pluginKey)
	if nowSID != sid {
		t.Logf("h: the host moved %s from session %s to %s", pluginKey, sid, nowSID)
	}
	after := hostEvents(t, h, version, sid)
	changed := 0
	for i, ev := range snapshot {
		if i >= len(after) || after[i] != ev {
			changed++
		}
	}
	if changed > 0 {
		msg := fmt.Sprintf("h: %d of the %d rows or lines stored by turn 5 changed or vanished by the end (%d now)", changed, len(snapshot), len(after))
		if withEngine {
			t.Error(msg)
		} else {
			t.Log(msg + " (legacy: the host's doing)")
		}
	}
	placeholders := 0
	for _, ev := range after {
		if parseHostEntry(ev).Type == "compaction" {
			run.HostCompactions++
		}
		if strings.Contains(ev, `"toolName":"bs_big"`) && strings.Contains(ev, "[[extracted-") {
			placeholders++
		}
	}
	if withEngine && placeholders > 0 {
		t.Errorf("h: %d stored bs_big results hold a placeholder although file-level extraction is off", placeholders)
	}
	if nowSID != sid {
		for _, ev := range hostEvents(t, h, version, nowSID) {
			if parseHostEntry(ev).Type == "compaction" {
				run.HostCompactions++
			}
		}
	}

	// a. No degrade or quarantine line for our engine.
	logs := gatewayLogs(h)
	for _, marker := range []string{`Context engine "brainsurgeon" degraded to`, `"brainsurgeon" owner=plugin:brainsurgeon failed during`, "quarantining it"} {
		if withEngine && strings.Contains(logs, marker) {
			t.Errorf("a: the gateway log says %q: %s", marker, newLogLines("", logs, marker))
		}
	}
	return run
}

// joinViews attaches to each turn the engine's views served while it ran (by time).
func joinViews(run *engineRun, st engine.State) {
	for i := range run.Turns {
		r := &run.Turns[i]
		for _, v := range st.Turns {
			if v.At.Before(r.start) || v.At.After(r.end) {
				continue
			}
			r.Views++
			if r.Views == 1 {
				r.Predicted = v.Predicted
				r.Passthrough = v.Passthrough
			}
			for _, l := range v.Layers {
				if !slices.Contains(r.Layers, l) {
					r.Layers = append(r.Layers, l)
				}
			}
			r.ViewChanged = r.ViewChanged || v.Changed
		}
	}
}

// engineChecks asserts b to g of TestEngineLive and appends the extra turns to run.
func engineChecks(t *testing.T, h *openclaw.Host, model *openclaw.Model, version, sid string, run *engineRun,
	st engine.State, legacy *engineRun, daemonURL, apiKey string, proxy *daemonProxy, files []string) {
	t.Helper()
	script := run.Turns
	// b. Bytes from the turn where layer 1 first acts.
	for _, r := range script {
		for _, l := range r.Layers {
			if !slices.Contains(run.Layers, l) {
				run.Layers = append(run.Layers, l)
			}
		}
		if run.FirstCollapseTurn == 0 && slices.Contains(r.Layers, "collapse") {
			run.FirstCollapseTurn = r.N
		}
	}
	if run.FirstCollapseTurn == 0 {
		t.Errorf("b: layer 1 never acted over %d turns (layers seen: %v)", len(script), run.Layers)
	} else if legacy == nil || len(legacy.Turns) < len(script) {
		t.Errorf("b: no legacy run to compare with")
	} else {
		// The host's system prompt is the same in both runs and no context engine's to decide: the goal is
		// measured on the rest of the messages (the whole messages are reported beside).
		all, allLegacy := 0, 0
		for i := run.FirstCollapseTurn - 1; i < len(script); i++ {
			run.BytesFromCollapse += script[i].HistoryBytes
			run.LegacyBytesSame += legacy.Turns[i].HistoryBytes
			all += script[i].Bytes
			allLegacy += legacy.Turns[i].Bytes
		}
		run.Reduction = 1 - float64(run.BytesFromCollapse)/float64(max(run.LegacyBytesSame, 1))
		run.ReductionAll = 1 - float64(all)/float64(max(allLegacy, 1))
		if run.Reduction < 0.60 {
			t.Errorf("b: from turn %d on the model received %d bytes of history with the engine, %d with legacy: %.1f %% fewer, want ≥ 60 %% (whole messages, system prompt included: %d and %d bytes, %.1f %% fewer)",
				run.FirstCollapseTurn, run.BytesFromCollapse, run.LegacyBytesSame, 100*run.Reduction, all, allLegacy, 100*run.ReductionAll)
		}
		// Money: the cache-weighted input of the same turns (reported; the goal is not asserted yet, see
		// [moneyGoal]).
		m := moneyReport(t, version, script, legacy.Turns[:len(script)], run.FirstCollapseTurn)
		run.Money = &m
		if m.Reduction < moneyGoal {
			t.Logf("b: money: from turn %d the engine's cache-weighted input is %.1f %% below legacy's, under the goal of %.0f %% (reported, not asserted)",
				run.FirstCollapseTurn, 100*m.Reduction, 100*moneyGoal)
		}
	}
	if !slices.Contains(run.Layers, "summarize") && !slices.Contains(run.Layers, "full") {
		t.Errorf("b: the summary layers never ran at a window of %d tokens (layers seen: %v)", engineWindow, run.Layers)
	}
	run.Summaries = len(st.Summaries)
	run.SummaryRequests = len(model.SummaryRequests())
	byModel := 0
	for _, s := range st.Summaries {
		if strings.HasPrefix(s.Method, "openai:") {
			byModel++
		}
	}
	if run.Summaries > 0 && byModel == 0 {
		t.Errorf("b: none of the %d summaries was written by the summarizer model (%d requests reached it)", run.Summaries, run.SummaryRequests)
	}
	// c. Prefix changes, request by request: the host assembles before every model request of a turn (the
	// engine owns compaction), so each request has its own view, and a view's prefix_changed compares it with the
	// view before it. A request's prefix changed when it does not keep the previous request's messages (without
	// their final user messages) byte for byte; its views are the ones served after the previous request.
	type request struct {
		turn int
		at   time.Time
		msgs []json.RawMessage
	}
	var reqs []request
	for _, r := range script {
		for k, b := range r.bodies {
			reqs = append(reqs, request{turn: r.N, at: r.at[k], msgs: requestMessages(t, b)})
		}
	}
	views := append([]engine.Turn(nil), st.Turns...)
	slices.SortFunc(views, func(a, b engine.Turn) int { return a.At.Compare(b.At) })
	changes, viewChanges, overReports := 0, 0, 0
	var diff []string
	for k := 1; k < len(reqs); k++ {
		stable := prefixStable(reqs[k-1].msgs, reqs[k].msgs)
		changed := false
		for _, v := range views {
			if v.At.After(reqs[k-1].at) && !v.At.After(reqs[k].at) {
				// The host may assemble twice between two requests (at the turn's start, then
				// before its first request): each compares with the view before it, so the request
				// changed when any of them did.
				changed = changed || v.Changed
			}
		}
		layered := false
		for _, v := range views {
			if v.At.After(reqs[k-1].at) && !v.At.After(reqs[k].at) && (len(v.Layers) > 0 || v.Passthrough != "") {
				layered = true
			}
		}
		if !stable {
			changes++
		}
		if changed {
			viewChanges++
		}
		if !stable && !changed && !layered {
			var seen []string
			for _, v := range views {
				if v.At.After(reqs[k-1].at) && !v.At.After(reqs[k].at) {
					seen = append(seen, fmt.Sprintf("{view %d: %d msgs, %d matched, layers %v, replaced %d, summary %q, first kept %q, last %q, changed %v, passthrough %q}",
						v.N, v.Messages, v.Matched, v.Layers, v.Replaced, v.SummaryID, v.FirstKeptEntry, v.LastEntry, v.Changed, v.Passthrough))
				}
			}
			diff = append(diff, fmt.Sprintf("turn %d, request %d (%d messages, previous %d): the prefix changed and no view since the previous request changed a layer; views %s",
				reqs[k].turn, k+1, len(reqs[k].msgs), len(reqs[k-1].msgs), strings.Join(seen, " ")))
		}
		if stable && changed {
			overReports++
		}
	}
	for _, r := range script {
		if r.ViewChanged {
			run.ViewChanges++
		}
	}
	run.Requests, run.RequestPrefixChanges, run.ViewRequestChanges = len(reqs), changes, viewChanges
	// The host itself may change a request now and then (its own trimming of old tool results runs whatever the
	// engine): up to maxHostChanges such changes are reported, more fail.
	const maxHostChanges = 2
	if len(diff) > maxHostChanges {
		t.Errorf("c: %d of %d requests changed the request prefix; %d of those changes were made by no layer (at most %d allowed):\n%s",
			changes, len(reqs), len(diff), maxHostChanges, strings.Join(diff, "\n"))
	} else if len(diff) > 0 {
		t.Logf("c: %d of %d requests changed the request prefix; %d of those changes were made by no layer of ours (at most %d allowed):\n%s",
			changes, len(reqs), len(diff), maxHostChanges, strings.Join(diff, "\n"))
	}
	run.UnexplainedChanges = len(diff)
	t.Logf("c: %d of %d requests changed the prefix, every one at a layer's change; views said prefix_changed before %d requests (%d of them kept the prefix: the host kept its own messages)",
		changes, len(reqs), viewChanges, overReports)
	// d. Prediction.
	var errs []float64
	for _, r := range script {
		if r.Predicted > 0 && r.Tokens > 0 {
			d := float64(r.Predicted-r.Tokens) / float64(r.Tokens)
			if d < 0 {
				d = -d
			}
			errs = append(errs, d)
		}
	}
	run.MedianError = median(errs)
	if len(errs) < len(script)/2 || run.MedianError > 0.05 {
		t.Errorf("d: prediction over %d turns: median error %.2f %%, want ≤ 5 %% over every turn", len(errs), 100*run.MedianError)
	}
	if s, err := engineStatus(t, daemonURL, apiKey, sid); err != nil {
		t.Errorf("engine status: %v", err)
	} else {
		t.Logf("engine status: %+v", s)
		if !s.Active {
			t.Errorf("engine status: not active after %d turns", len(script))
		}
	}

	n := len(run.Turns)
	events := map[string]hostEntry{}
	for _, ev := range hostEvents(t, h, version, sid) {
		e := parseHostEntry(ev)
		events[e.ID] = e
	}
	// e. Restore of a collapsed value, in the same turn and in the next turn's view: the newest collapsed
	// placeholder any request of the last ten script turns showed. When a summary has covered the entry since,
	// the next turn shows the value in the restore's own result (the summary stays: recall_expand gives its
	// messages, checked below); otherwise in place.
	summarized := map[string]bool{}
	for _, s := range st.Summaries {
		for _, id := range s.Entries {
			summarized[id] = true
		}
	}
	key := ""
	for i := len(script) - 1; i >= 0 && i >= len(script)-10 && key == ""; i-- {
		for k := len(script[i].bodies) - 1; k >= 0 && key == ""; k-- {
			texts := toolMessageTexts(decodeChat(t, script[i].bodies[k]))
			for j := len(texts) - 1; j >= 0; j-- {
				if m := viewPlaceholderRE.FindStringSubmatch(texts[j]); m != nil {
					if _, ok := st.Collapsed[m[1]]; ok {
						key = m[1]
						break
					}
				}
			}
		}
	}
	if key == "" {
		t.Errorf("e: no request of the last ten script turns shows a placeholder of a collapsed entry (%d collapsed)", len(st.Collapsed))
	} else if orig, ok := events[key]; !ok || orig.Text == "" {
		t.Errorf("e: the collapsed entry %s is not a stored message with text", key)
	} else {
		n++
		rec := runTurn(t, h, model, n, "restore", `CALL:purge_control:{"action":"restore","value_id":"`+key+`"}`, &run.Turns[len(run.Turns)-1])
		run.Turns = append(run.Turns, rec)
		// The host stores the call as it was made: an argument named like a secret would read "***".
		if named := `"value_id":"` + key + `"`; !strings.Contains(strings.Join(hostEvents(t, h, version, liveSessionID(t, h, pluginKey)), "\n"), named) {
			t.Errorf("e: no stored row or line holds the restore's tool call with %s", named)
		}
		got := toolMessageTexts(rec.last)
		if len(got) == 0 || !strings.Contains(got[len(got)-1], orig.Text) {
			t.Errorf("e: purge_control restore of %s did not give the model the stored value (%d chars) in the same turn", key, len(orig.Text))
		}
		idx := len(run.Turns) - 1
		defer func() {
			// the turn after shows the value in full
			if idx+1 >= len(run.Turns) {
				return
			}
			next := run.Turns[idx+1]
			inPlace, inResult := false, false
			for _, s := range toolMessageTexts(decodeChat(t, next.bodies[0])) {
				inPlace = inPlace || s == orig.Text
				inResult = inResult || (s != orig.Text && strings.Contains(s, orig.Text))
			}
			switch {
			case inPlace:
				t.Logf("e: turn %d's view shows the value restored at turn %d (%s) in place", next.N, rec.N, key)
			case inResult && summarized[key]:
				t.Logf("e: turn %d's view shows the value restored at turn %d (%s, in a summary) in the restore's result", next.N, rec.N, key)
			default:
				t.Errorf("e: turn %d's view does not show the value restored at turn %d (%s, summarized: %v) in full (in the restore's result: %v)", next.N, rec.N, key, summarized[key], inResult)
			}
		}()
	}
	// e. recall_expand of a summary.
	var sum *engine.SummaryRecord
	for i := range st.Summaries {
		if s := &st.Summaries[i]; s.Level == 1 && len(s.Entries) > 0 {
			sum = s
			break
		}
	}
	if sum == nil {
		t.Errorf("e: no level-1 summary to expand (%d summaries)", len(st.Summaries))
	} else {
		var want hostEntry
		for _, id := range sum.Entries {
			if e := events[id]; e.Role == "toolResult" && e.Text != "" {
				want = e
				break
			}
		}
		n++
		rec := runTurn(t, h, model, n, "expand", `CALL:recall_expand:{"id":"`+sum.ID+`"}`, &run.Turns[len(run.Turns)-1])
		run.Turns = append(run.Turns, rec)
		got := toolMessageTexts(rec.last)
		esc, _ := json.Marshal(want.Text)
		switch {
		case want.ID == "":
			t.Errorf("e: summary %s covers no stored tool result with text (%d entries)", sum.ID, len(sum.Entries))
		case len(got) == 0:
			t.Errorf("e: recall_expand %s gave the model no tool result", sum.ID)
		case !strings.Contains(got[len(got)-1], want.Text) && !strings.Contains(got[len(got)-1], string(esc[1:len(esc)-1])):
			t.Errorf("e: recall_expand %s did not give the model the stored result %s (%d chars) byte-identical: %.300q",
				sum.ID, want.ID, len(want.Text), got[len(got)-1])
		}
	}
	// f. sessions.compact, with the summarizer model failing: the summary falls back to the deterministic one,
	// marked degraded.
	model.FailSummaries(100)
	compactAt := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	r, err := h.Gateway.CLI(ctx, "gateway", "call", "sessions.compact", "--params", `{"key":"`+pluginKey+`"}`, "--json")
	cancel()
	if err != nil {
		t.Errorf("f: gateway call sessions.compact: %v", err)
	} else {
		var ans struct {
			OK        bool   `json:"ok"`
			Compacted bool   `json:"compacted"`
			Reason    string `json:"reason"`
		}
		if err := r.DecodeJSON(&ans); err != nil {
			t.Errorf("f: sessions.compact answered no JSON: %v: %.500s", err, r.Stdout)
		}
		run.Compact = strings.TrimSpace(string(jsonPartOf(r.Stdout)))
		if !ans.OK || !ans.Compacted {
			t.Errorf("f: sessions.compact with the engine selected: ok %v, compacted %v, reason %q", ans.OK, ans.Compacted, ans.Reason)
		}
	}
	model.FailSummaries(0)
	if st2, ok := engineState(t, h, sid); ok {
		for _, s := range st2.Summaries {
			if s.CreatedAt.Before(compactAt) || s.Layer == "condense" {
				continue
			}
			if !s.Degraded || s.Method != "deterministic" {
				t.Errorf("f: summary %s (%s), written while the summarizer model failed: degraded %v, by %q; want the deterministic summary, degraded",
					s.ID, s.Layer, s.Degraded, s.Method)
			} else {
				t.Logf("f: summary %s (%s) fell back to the deterministic summary: %s", s.ID, s.Layer, s.Reason)
			}
		}
	}
	// g. The daemon stopped, then answering garbage: the turns still succeed.
	proxy.down(t)
	for i := 0; i < 2; i++ {
		n++
		run.Turns = append(run.Turns, runTurn(t, h, model, n, "daemon-down", fmt.Sprintf(`Turn %d, daemon down. CALL:bs_big:{"file":"%s"}`, n, files[i]), &run.Turns[len(run.Turns)-1]))
	}
	proxy.up(t)
	proxy.mode.Store("garbage")
	for i := 0; i < 2; i++ {
		n++
		run.Turns = append(run.Turns, runTurn(t, h, model, n, "daemon-garbage", fmt.Sprintf("Turn %d, daemon answering garbage.", n), &run.Turns[len(run.Turns)-1]))
	}
	proxy.mode.Store("pass")
	n++
	run.Turns = append(run.Turns, runTurn(t, h, model, n, "after", fmt.Sprintf("Turn %d, daemon back.", n), &run.Turns[len(run.Turns)-1]))
	if why := newLogLines("", gatewayLogs(h), "passed the host's messages through unchanged"); why == "" {
		t.Errorf("g: the gateway log does not say why assemble passed the messages through while the daemon was down")
	} else {
		t.Logf("g: %.600s", why)
	}
	if st2, ok := engineState(t, h, sid); ok {
		joinViews(&engineRun{Turns: run.Turns[len(script):]}, st2)
	}
	if r := run.Turns[len(run.Turns)-1]; r.Views == 0 || r.Passthrough != "" {
		t.Errorf("g: with the daemon back, turn %d got %d views from the engine (passthrough %q)", r.N, r.Views, r.Passthrough)
	}
}

// messageText returns the text of a chat message's content: the string, or its text parts joined.
func messageText(raw json.RawMessage) string {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// engineOwnAdditionRE matches the engine's own system-prompt addition: the daemon's system_prompt_addition, which
// is the warning of engine.Engine after several summaries (one line).
var engineOwnAdditionRE = regexp.MustCompile(`^BrainSurgeon: earlier parts of this conversation were summarized (several|many) times; `)

// memorySectionHeader starts the host's memory section (OpenClaw's memory-core prompt builder).
const memorySectionHeader = "## Memory Recall"

var (
	promptSessionIDRE = regexp.MustCompile(`sessionId=[0-9A-Za-z_-]+`)
	promptDateRE      = regexp.MustCompile(`(?m)^Current date: .*$`)
)

// systemPromptLines returns the non-empty lines of a host's system prompt with what differs between two hosts by
// nature made equal: the host's state dir, the session id, the date.
func systemPromptLines(s, stateDir string) []string {
	if stateDir != "" {
		s = strings.ReplaceAll(s, stateDir, "<state dir>")
	}
	s = promptSessionIDRE.ReplaceAllString(s, "sessionId=<id>")
	s = promptDateRE.ReplaceAllString(s, "Current date: <date>")
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// systemPromptDiff says how the engine's system prompt (its non-empty lines, see [systemPromptLines]) differs from
// the legacy engine's, or returns "" when it differs only in the engine's own addition (lines matching
// [engineOwnAdditionRE], which it reports in own) and in the place of the host's memory section. The memory section
// is legacy's lines from [memorySectionHeader] to the next heading or marker ("## …", "<!-- …"); OpenClaw builds it
// into legacy's prompt only and puts an engine's addition after its cache boundary, so the engine's prompt must
// hold those lines, together and in order, somewhere.
func systemPromptDiff(legacy, eng []string) (diff string, own int) {
	var e []string
	for _, l := range eng {
		if engineOwnAdditionRE.MatchString(l) {
			own++
			continue
		}
		e = append(e, l)
	}
	l := legacy
	if i := slices.Index(legacy, memorySectionHeader); i >= 0 {
		n := 1
		for i+n < len(legacy) && !strings.HasPrefix(legacy[i+n], "## ") && !strings.HasPrefix(legacy[i+n], "<!-- ") {
			n++
		}
		block := legacy[i : i+n]
		j := -1
		for k := 0; k+n <= len(e); k++ {
			if slices.Equal(e[k:k+n], block) {
				j = k
				break
			}
		}
		if j < 0 {
			return fmt.Sprintf("the host's memory section (%d lines from %q) is missing", n, memorySectionHeader), own
		}
		l = slices.Concat(legacy[:i], legacy[i+n:])
		e = slices.Concat(e[:j], e[j+n:])
	}
	for k := 0; k < max(len(l), len(e)); k++ {
		var a, b string
		if k < len(l) {
			a = l[k]
		}
		if k < len(e) {
			b = e[k]
		}
		if a != b {
			return fmt.Sprintf("line %d (of %d non-empty lines with legacy, %d with the engine, own addition and memory section left out): legacy %.200q, engine %.200q", k+1, len(l), len(e), a, b), own
		}
	}
	return "", own
}

// systemPromptChecks asserts i of TestEngineLive over the script's turns.
func systemPromptChecks(t *testing.T, run, legacy *engineRun, turns int) {
	t.Helper()
	if legacy == nil || len(legacy.Turns) < turns {
		t.Errorf("i: no legacy run to compare the system prompt with")
		return
	}
	var diffs []string
	for i := 0; i < turns; i++ {
		l := systemPromptLines(legacy.Turns[i].system, legacy.stateDir)
		run.MemorySection = run.MemorySection || slices.Contains(l, memorySectionHeader)
		d, own := systemPromptDiff(l, systemPromptLines(run.Turns[i].system, run.stateDir))
		run.SystemTurns++
		if own > 0 {
			run.OwnAdditionTurns++
		}
		if d != "" {
			diffs = append(diffs, fmt.Sprintf("turn %d: %s", run.Turns[i].N, d))
		}
	}
	if len(diffs) > 0 {
		t.Errorf("i: the system prompt differs from legacy's beyond the engine's own addition in %d of %d turns:\n%s", len(diffs), turns, strings.Join(diffs[:min(len(diffs), 5)], "\n"))
	}
	t.Logf("i: system prompt of %d turns compared with legacy's: the host's memory section %v in legacy's; the engine's own addition in %d turns",
		run.SystemTurns, run.MemorySection, run.OwnAdditionTurns)
}

// jsonPartOf returns b from its first '{'.
func jsonPartOf(b []byte) []byte {
	if i := bytes.IndexByte(b, '{'); i >= 0 {
		return b[i:]
	}
	return b
}

// logEngineTable logs the run's per-turn table and its totals.
func logEngineTable(t *testing.T, run *engineRun) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s, window %d tokens: per turn (reqs: model requests with tools; sumc: without (the host's summary calls); bytes: JSON of the first request's messages; history: bytes without the system prompt; tokens: the model's measured size of the first request; prefix: CHANGE when the previous first request's prefix is not kept, * when the engine's view said prefix_changed; hsum: the first request shows the host's compaction summary; prompt, cached, weighted: the turn's cache-weighted input, see moneyReport)\n", run.Version, run.Mode, run.Window)
	fmt.Fprintf(&b, "%4s %-14s %4s %4s %4s %9s %9s %8s %9s %7s %5s %9s %-22s %6s %9s %9s %9s\n", "turn", "kind", "reqs", "sumc", "msgs", "bytes", "history", "tokens", "all_bytes", "prefix", "hsum", "predicted", "layers", "ms", "prompt", "cached", "weighted")
	for _, r := range run.Turns {
		prefix := "same"
		if !r.PrefixStable {
			prefix = "CHANGE"
		}
		if r.ViewChanged {
			prefix += "*"
		}
		pred := ""
		if r.Predicted > 0 {
			pred = fmt.Sprint(r.Predicted)
		}
		lay := strings.Join(r.Layers, ",")
		if r.Passthrough != "" {
			lay = "passthrough"
		}
		fmt.Fprintf(&b, "%4d %-14s %4d %4d %4d %9d %9d %8d %9d %7s %5v %9s %-22s %6d %9d %9d %9.0f\n", r.N, r.Kind, r.Requests, r.SummaryCalls, r.Messages, r.Bytes, r.HistoryBytes, r.Tokens, r.AllBytes, prefix, r.HostSummary, pred, lay, r.Millis, r.PromptBytes, r.CachedBytes, r.Weighted)
	}
	fmt.Fprintf(&b, "model requests: %d, whose prefix changed: %d (views that said so: %d)\n", run.Requests, run.RequestPrefixChanges, run.ViewRequestChanges)
	fmt.Fprintf(&b, "prefix changes: %d; host compaction entries: %d; turns showing the host's summary: %d; files still visible at the last script turn: %d of %d\n",
		run.PrefixChanges, run.HostCompactions, run.HostSummaryTurns, run.FilesVisible, run.Files)
	if run.Mode == "engine" {
		fmt.Fprintf(&b, "first collapse at turn %d; history bytes from there: engine %d, legacy %d (%.1f %% fewer; %.1f %% fewer with the system prompt); views with prefix_changed: %d; median prediction error %.2f %%; layers %v; summaries %d (summarizer requests %d); compact: %s\n",
			run.FirstCollapseTurn, run.BytesFromCollapse, run.LegacyBytesSame, 100*run.Reduction, 100*run.ReductionAll, run.ViewChanges, 100*run.MedianError, run.Layers, run.Summaries, run.SummaryRequests, run.Compact)
	}
	fmt.Fprintf(&b, "run time %.0f s", run.Seconds)
	t.Log(b.String())
}
