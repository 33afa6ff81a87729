//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/logging"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

// Figures of TestEngineAgreeLive.
const (
	// agreeCron is the daemon's auto_cron: a scheduled prune every 3 seconds.
	agreeCron = "*/3 * * * * *"
	// agreeIdleSeconds is the daemon's quiet period: short, so that the session is idle soon after a turn.
	agreeIdleSeconds = 2
	// agreeKeepAfterRestore is keep_after_restore_seconds: every check of the protection must be done within it.
	agreeKeepAfterRestore = 300
	// agreeMinValue and agreeMaxValue bound the size, in characters, of the tool result the test restores: at
	// least min_value_length (the default, 500), small enough to come back in one restore page
	// (agenttext.DefaultPageChars).
	agreeMinValue = 500
	agreeMaxValue = 15000
	// agreePruneTrigger is the daemon's compaction.prune_trigger_percent. The host hands the model only the
	// session's context after its last compaction (345 messages, about 41,500 tokens of messages beside some
	// 15,000 of system prompt and tools, in a window of 1,000,000), whose tool results are small: the values worth
	// collapsing save about 2,300 tokens, less than the tenth of the view a batch must save. Above
	// prune_trigger_percent of the window the view collapses whatever the saving; at 2 % (20,000 tokens) it does,
	// far below the summary layers' thresholds (88 % and 95 %), which then never run.
	agreePruneTrigger = 2
)

// legacyMemorySection is OpenClaw 2026.9.6's memory section as its legacy context engine puts it in the system
// prompt on this harness (default config: memory-core active, memory_search, memory_get, sessions_search and
// sessions_history available through the Tool Search catalog; measured with the slot unset: 778 bytes, 6 lines).
const legacyMemorySection = "## Memory Recall\n" +
	"Before answering anything about prior work, decisions, dates, people, preferences, or todos: run memory_search; for memory-file hits, use memory_get to pull only the needed lines. If low confidence after search, say you checked.\n" +
	"For session hits, use sessions_search with distinctive snippet text (and sessionKey set to the transcript ID when known), then sessions_history with the returned sessionKey, messageId, and sessionId for a bounded sanitized excerpt.\n" +
	"Session search line numbers are not history offsets. Never read raw transcript files to expand session hits.\n" +
	"Report partial, unavailable, or stale recall to the user, including returned warning and action guidance.\n" +
	"Citations: include Source: <path#line> when it helps the user verify memory snippets."

// TestEngineAgreeLive is the live acceptance of issue 32 on OpenClaw 2026.9.6: the corpus session of TestLiveSQLite
// (2.8 MB, hundreds of large tool results) moved into the SQLite store by OpenClaw's importer; `brainsurgeon serve`
// (debug log) with file-level pruning off at first, auto_cron every 3 s, idle_seconds 2,
// keep_after_restore_seconds 300 and compaction.prune_trigger_percent 2 (see agreePruneTrigger); the plugin installed with `openclaw install --engine --link --yes`; one gateway
// and the Go model. Then:
//
//  1. turn 1: the system prompt of the model's requests carries the host's memory section as the legacy engine
//     sends it (legacyMemorySection), and a tool message shows the placeholder of a value the engine collapsed;
//  2. turn 2: the agent restores it (purge_control with "value_id"; if that is not understood, the check fails and
//     the turn is repeated with the old "key" so the later checks still run): the tool result the model gets is
//     exactly the row's content (the store read read-only);
//  3. the user turns file-level pruning on (POST /api/config, as the UI does): at least two scheduled prunes run
//     (the daemon's log: "Prune run:"), one of them processing the session while it is idle (it extracts other
//     values), all within the protection window, and the restored entry is not extracted (its row keeps the
//     original content; no "Entry <id>: … EXTRACT" line);
//  4. turn 3 (recall_describe, then the second restore): its three model requests show the value in full (the
//     entry's own tool message is the original text, no tool message holds the entry's placeholder);
//  5. the second restore's tool message is byte-identical to the first's;
//  6. the host's rows of the agent's purge_control calls name the value ("value_id": "<id>"), none holds "***";
//  7. GET /api/health reports engine.views ≥ the views the engine served and engine.latency_ms p50 and p99 > 0;
//
// and after turn 3, the next scheduled prune that processes the session still leaves the entry whole.
//
// Pruning is off until after the restore: on from the start, the first scheduled prune (the imported session is
// idle and every value is months old) would extract every corpus value before the first turn, leaving the engine
// nothing of its own to collapse, and the restore would then be a side-store write-back (redacting the call) rather
// than the engine's restore this issue is about (the daemon was held off by its quiet period while the
// session was in use).
func TestEngineAgreeLive(t *testing.T) {
	t0 := time.Now()
	in := openclaw.Require(t, openclaw.V9)
	work := t.TempDir()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	var (
		d   *serveProc
		env []string
		st  *openclaw.State
	)
	seed := seedSQLite(t, pluginKey, liveSQLiteSeedID, corpusFile(t, liveSQLiteSeedFile))
	var tImport, tServe time.Duration
	h := openclaw.NewHostWithModel(t, openclaw.V9, model.URL(), func(s *openclaw.State) error {
		st = s
		start := time.Now()
		if err := seed(s); err != nil {
			return err
		}
		tImport = time.Since(start)
		env = s.Vars(openclaw.NewEnv(in.Node), "BRAINSURGEON_AGENTS_DIR="+s.AgentsDir(), "LOG_LEVEL=debug")
		writeConfig(t, s.AgentsDir(), map[string]any{"enabled": false, "auto_cron": agreeCron,
			"idle_seconds": agreeIdleSeconds, "keep_after_restore_seconds": agreeKeepAfterRestore,
			"compaction": map[string]any{"prune_trigger_percent": agreePruneTrigger}})
		start = time.Now()
		d = startServe(t, env)
		wrapper := openclawWrapper(t, work, in)
		out, err := runEnv(env, bsBin, "openclaw", "install", "--engine", "--link", "--yes", "--openclaw", wrapper, "--daemon-url", d.url)
		if err != nil {
			return err
		}
		tServe = time.Since(start)
		t.Logf("install --engine --link:\n%s", out)
		return nil
	})
	tSetup := time.Since(t0)
	key := strings.TrimSpace(string(readFile(t, filepath.Join(st.Dir, ".brainsurgeon", "api.key"))))
	db := storePath(st)
	if got := liveSessionID(t, h, pluginKey); got != liveSQLiteSeedID {
		t.Fatalf("the gateway serves %s as %s, want the imported %s", pluginKey, got, liveSQLiteSeedID)
	}
	sid := liveSQLiteSeedID
	imported := sessionRows(t, db, sid)
	lastImported := imported[len(imported)-1].Seq
	stored := map[string]hostEntry{}
	for _, r := range imported {
		e := parseHostEntry(r.Event)
		stored[e.ID] = e
	}
	var table [][2]string
	row := func(what, format string, args ...any) {
		table = append(table, [2]string{what, fmt.Sprintf(format, args...)})
	}
	defer func() {
		var b strings.Builder
		b.WriteString("TestEngineAgreeLive, what was measured:\n")
		for _, r := range table {
			fmt.Fprintf(&b, "  %-44s %s\n", r[0], r[1])
		}
		t.Log(b.String())
	}()
	row("setup: import, serve+install, all (gateway)", "%s, %s, %s", tImport.Round(100*time.Millisecond), tServe.Round(100*time.Millisecond), tSetup.Round(100*time.Millisecond))
	row("imported rows", "%d (%d bytes)", len(imported), rowBytes(imported))
	turns := 0
	turn := func(msg string) ([]chatRequest, time.Duration) {
		t.Helper()
		start := time.Now()
		reqs := pluginTurn(t, h, model, msg)
		turns++
		return reqs, time.Since(start)
	}

	// 1. Turn 1: the memory section, and a value the engine collapsed.
	t1Start := time.Now()
	reqs1, took := turn("Turn 1: where are we?")
	row("turn 1 (plain)", "%s, %d requests", took.Round(100*time.Millisecond), len(reqs1))
	d.servedSince(t, h, "1", sid, t1Start)
	for i, r := range reqs1 {
		sys := systemText(r)
		k := strings.Index(sys, "## Memory Recall")
		switch {
		case k < 0:
			t.Errorf("1: request %d of turn 1: the system prompt (%d bytes) has no \"## Memory Recall\" section; the legacy engine sends it on this harness (%d bytes)",
				i+1, len(sys), len(legacyMemorySection))
		case !strings.Contains(sys, legacyMemorySection):
			t.Errorf("1: request %d of turn 1: the system prompt's memory section differs from the legacy engine's:\n%.900s\nwant\n%s", i+1, sys[k:], legacyMemorySection)
		}
		if i == 0 {
			row("system prompt, memory section", "%d bytes, at %d", len(sys), k)
		}
	}
	es, ok := engineState(t, h, sid)
	if !ok {
		t.Fatalf("1: the engine kept no state for session %s", sid)
	}
	view := reqs1[len(reqs1)-1]
	shown := 0
	var id, orig string
	at := -1 // the index of the entry's own message among the request's tool messages
	texts := toolMessageTexts(view)
	for j := len(texts) - 1; j >= 0; j-- {
		m := viewPlaceholderRE.FindStringSubmatch(texts[j])
		if m == nil {
			continue
		}
		if _, collapsed := es.Collapsed[m[1]]; !collapsed {
			continue
		}
		shown++
		e, ok := stored[m[1]]
		if id != "" || !ok || e.Role != "toolResult" || !oneTextBlock(e.Content) || strings.Contains(e.Text, "[[extracted-") {
			continue
		}
		if n := len([]rune(e.Text)); n >= agreeMinValue && n <= agreeMaxValue {
			id, orig, at = m[1], e.Text, j
		}
	}
	row("turn 1 view: collapsed by the engine, shown", "%d in state, %d placeholders in the last request's %d tool messages", len(es.Collapsed), shown, len(texts))
	if id == "" {
		t.Fatalf("1: no tool message of turn 1's last request shows the placeholder of a collapsed one-text-block tool result of %d to %d characters (%d collapsed, %d shown)",
			agreeMinValue, agreeMaxValue, len(es.Collapsed), shown)
	}
	row("value restored", "%s, %d bytes (%d characters), tool message %d of %d", id, len(orig), len([]rune(orig)), at+1, len(texts))

	// 2. Turn 2: the agent restores it; the model gets the row's content exactly.
	arg := "value_id"
	restoreMsg := func(name string) string {
		return `CALL:purge_control:{"action":"restore","` + name + `":"` + id + `"}`
	}
	restoredAt := time.Now()
	reqs2, took := turn("Turn 2: get that back. " + restoreMsg(arg))
	first, _ := reqs2[len(reqs2)-1].lastTool()
	row("turn 2 (restore, value_id)", "%s, %d requests, answer %d bytes", took.Round(100*time.Millisecond), len(reqs2), len(first))
	if !strings.Contains(first, orig) {
		t.Errorf("2: purge_control restore with \"value_id\" did not give the value back (contract C); the model got %d bytes: %.300q", len(first), first)
		arg = "key"
		restoredAt = time.Now()
		reqs2, took = turn("Turn 2b: get that back. " + restoreMsg(arg))
		first, _ = reqs2[len(reqs2)-1].lastTool()
		row("turn 2b (restore, key: the old name)", "%s, %d requests, answer %d bytes", took.Round(100*time.Millisecond), len(reqs2), len(first))
	}
	if first != orig {
		t.Errorf("2: the restore's tool result is not the row's content exactly: %d bytes, want %d (%s)", len(first), len(orig), diffAt(first, orig))
	}
	protectedUntil := restoredAt.Add(agreeKeepAfterRestore * time.Second)
	if es, ok := engineState(t, h, sid); ok {
		_, restored := es.Restored[id]
		_, collapsed := es.Collapsed[id]
		row("engine state after the restore", "restored %v, collapsed %v", restored, collapsed)
	}

	// 3. Pruning on: scheduled prunes within the protection window leave the entry whole.
	enabledAt := time.Now()
	if code, body := d.post(t, "/api/config", key, `{"enabled":true}`); code != http.StatusOK {
		t.Fatalf("3: POST /api/config {\"enabled\":true}: HTTP %d: %s", code, body)
	}
	logf := filepath.Join(logging.Dir(st.AgentsDir()), logging.FileName)
	runs, processed := waitPrunes(t, logf, sid, enabledAt, 2, time.Until(protectedUntil)-30*time.Second)
	row("pruning on → runs, session processed", "%d runs, %d processing the session, in %s", len(runs), len(processed), time.Since(enabledAt).Round(100*time.Millisecond))
	for _, l := range processed {
		row("  processed", "%.160s", logMsg(l))
	}
	checkKept := func(step string) {
		t.Helper()
		if time.Now().After(protectedUntil) {
			t.Errorf("%s: the check came after the protection window (%d s from the restore): too slow to prove anything", step, agreeKeepAfterRestore)
		}
		rows := sessionRows(t, db, sid)
		var now hostEntry
		for _, r := range rows {
			if e := parseHostEntry(r.Event); e.ID == id {
				now = e
			}
		}
		if !bytes.Equal(now.Content, stored[id].Content) {
			t.Errorf("%s: the row of the restored entry %s changed within the protection window (%s): content %d bytes, was %d; holds its placeholder: %v",
				step, id, time.Since(restoredAt).Round(time.Second), len(now.Content), len(stored[id].Content), strings.Contains(string(now.Content), "[[extracted-"+id+"]]"))
		}
		extracted, others, protected := 0, 0, ""
		for _, l := range daemonLog(t, logf, time.Time{}) {
			switch {
			case strings.Contains(l, "Entry "+id+":") && strings.Contains(l, "EXTRACT"):
				extracted++
				t.Errorf("%s: the daemon's prune extracted the restored entry %s, %s after the restore: %.300s", step, id, time.Since(restoredAt).Round(time.Second), logMsg(l))
			case strings.Contains(l, "Entry "+id+":"):
				protected = logMsg(l)
			case strings.Contains(l, "→ EXTRACT"):
				others++
			}
		}
		row(step+": the entry's row, EXTRACT lines", "row whole %v; since the start EXTRACT of it %d, of others %d; its last other decision: %.120s",
			bytes.Equal(now.Content, stored[id].Content), extracted, others, protected)
	}
	checkKept("3")

	// 4. and 5. Turn 3: three requests with the value in full; the second restore gives the same bytes.
	reqs3, took := turn(`Turn 3: describe it, then get it again. CALL:recall_describe:{"id":"` + id + `"} ` + restoreMsg(arg))
	turn3End := time.Now()
	row("turn 3 (describe, restore again)", "%s, %d requests", took.Round(100*time.Millisecond), len(reqs3))
	if len(reqs3) < 3 {
		t.Errorf("4: turn 3 made %d model requests, want 3", len(reqs3))
	}
	for i, r := range reqs3[:min(3, len(reqs3))] {
		// The entry's own message keeps its place among the tool messages (the host's history is the same, the
		// turn's new results come after it); the restores' answers are the value too, elsewhere.
		texts := toolMessageTexts(r)
		own, ph := "(missing)", 0
		if at < len(texts) {
			own = texts[at]
		}
		for _, s := range texts {
			if strings.Contains(s, "[[extracted-"+id+"]]") {
				ph++
			}
		}
		if own != orig || ph > 0 {
			t.Errorf("4: request %d after the prunes does not show %s in full: its tool message (%d of %d) is %d bytes: %.120q; %d tool messages hold its placeholder",
				i+1, id, at+1, len(texts), len(own), own, ph)
		}
		row(fmt.Sprintf("  request %d after the prunes", i+1), "the entry's message in full %v, %d tool messages with its placeholder", own == orig, ph)
	}
	second, _ := reqs3[len(reqs3)-1].lastTool()
	if second != first {
		t.Errorf("5: the second restore's tool result differs from the first's: %d bytes, first %d (%s)", len(second), len(first), diffAt(second, first))
	}
	row("second restore = first", "%v (%d and %d bytes)", second == first, len(second), len(first))

	// 6. The host's rows of the restore calls name the value.
	calls := 0
	for _, r := range sessionRows(t, db, sid) {
		if r.Seq <= lastImported {
			continue
		}
		for _, c := range storedToolCalls(r.Event, "purge_control") {
			calls++
			var args map[string]any
			_ = json.Unmarshal(c, &args)
			if v, _ := args["value_id"].(string); v != id || bytes.Contains(c, []byte(`"***"`)) {
				t.Errorf("6: the host stored the purge_control call (row %d) as %s, want \"value_id\":%q and no \"***\"", r.Seq, c, id)
			}
			row(fmt.Sprintf("  stored purge_control call, row %d", r.Seq), "%s", c)
		}
	}
	if calls == 0 {
		t.Errorf("6: the host stored no purge_control call in the session")
	}

	// 7. Health: views served and their latency.
	es, _ = engineState(t, h, sid)
	viewsServed := 0
	for _, v := range es.Turns {
		if !v.At.Before(t1Start) {
			viewsServed++
		}
	}
	var hl agreeHealth
	d.getJSON(t, "/api/health", "", &hl)
	switch e := hl.Engine; {
	case e == nil:
		t.Errorf("7: GET /api/health has no engine member (contract B)")
	default:
		if e.Views < int64(viewsServed) || e.LatencyMS.P50 <= 0 || e.LatencyMS.P99 <= 0 {
			t.Errorf("7: GET /api/health engine: views %d (the engine served %d), latency p50 %.3f ms, p99 %.3f ms; want views ≥ %d and both > 0",
				e.Views, viewsServed, e.LatencyMS.P50, e.LatencyMS.P99, viewsServed)
		}
		row("health engine", "views %d (served %d, model requests %d), passthroughs %d, failures %d, latency p50 %.1f ms p99 %.1f ms max %.1f ms (n=%d)",
			e.Views, viewsServed, len(model.Requests()), e.Passthroughs, e.Failures, e.LatencyMS.P50, e.LatencyMS.P99, e.LatencyMS.Max, e.LatencyMS.Count)
	}

	// After turn 3: the next prune that processes the session still leaves the entry whole.
	_, again := waitPrunes(t, logf, sid, turn3End, 1, time.Until(protectedUntil)-10*time.Second)
	row("after turn 3: prunes processing the session", "%d", len(again))
	checkKept("after turn 3")
	for _, marker := range []string{`Context engine "brainsurgeon" degraded to`, `"brainsurgeon" owner=plugin:brainsurgeon failed during`, "quarantining it"} {
		if l := newLogLines("", gatewayLogs(h), marker); l != "" {
			t.Errorf("the gateway log says %q: %.600s", marker, l)
		}
	}
	row("turns, model requests, total", "%d, %d, %s", turns, len(model.Requests()), time.Since(t0).Round(time.Second))
}

// agreeHealth is the engine member of GET /api/health.
type agreeHealth struct {
	Engine *engine.Stats `json:"engine"`
}

// systemText returns the text of a request's system messages, joined.
func systemText(c chatRequest) string {
	var b strings.Builder
	for _, m := range c.Messages {
		if m.Role != "system" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) != nil {
			s = string(m.Content)
		}
		b.WriteString(s)
	}
	return b.String()
}

// oneTextBlock reports whether content (a message's content as stored) is a string or an array of exactly one
// text block: then the model's tool message is that text exactly.
func oneTextBlock(content json.RawMessage) bool {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return true
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(content, &blocks) == nil && len(blocks) == 1 && blocks[0].Type == "text"
}

// diffAt says where got and want first differ.
func diffAt(got, want string) string {
	n := min(len(got), len(want))
	i := 0
	for i < n && got[i] == want[i] {
		i++
	}
	if i == n && len(got) == len(want) {
		return "equal"
	}
	return fmt.Sprintf("first difference at byte %d: got %.120q, want %.120q", i, got[i:], want[i:])
}

// storedToolCalls returns the arguments of the tool calls named name in a stored assistant row, raw.
func storedToolCalls(event, name string) []json.RawMessage {
	var e struct {
		Message *struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string          `json:"type"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal([]byte(event), &e) != nil || e.Message == nil || e.Message.Role != "assistant" {
		return nil
	}
	var out []json.RawMessage
	for _, b := range e.Message.Content {
		if b.Type == "toolCall" && b.Name == name {
			out = append(out, b.Arguments)
		}
	}
	return out
}

// logTimeRE reads the time of a daemon log record (slog text).
var logTimeRE = regexp.MustCompile(`^time=(\S+)`)

// daemonLog returns the daemon's log records (the rotated file first) written at since or later.
func daemonLog(t *testing.T, path string, since time.Time) []string {
	t.Helper()
	var out []string
	for _, p := range []string{path + ".1", path} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			l := sc.Text()
			m := logTimeRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[1])
			if err != nil || at.Before(since) {
				continue
			}
			out = append(out, l)
		}
		f.Close()
	}
	return out
}

// logMsg returns a log record from its message on.
func logMsg(l string) string {
	if i := strings.Index(l, "msg="); i >= 0 {
		return l[i+4:]
	}
	return l
}

// waitPrunes waits (at most limit) until the daemon's log shows at least n scheduled prune runs logged since
// since and one of them processed session sid, and returns the runs' records and the records of the session
// processed.
func waitPrunes(t *testing.T, logf, sid string, since time.Time, n int, limit time.Duration) (runs, processed []string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		runs, processed = nil, nil
		for _, l := range daemonLog(t, logf, since) {
			switch {
			case strings.Contains(l, "Prune run:"):
				runs = append(runs, l)
			case strings.Contains(l, "Processing session") && strings.Contains(l, sid):
				processed = append(processed, l)
			}
		}
		if len(runs) >= n && len(processed) > 0 {
			return runs, processed
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon logged %d prune runs (want %d) and %d processing session %s since %s, in %s:\n%s",
				len(runs), n, len(processed), sid, since.Format(time.RFC3339), limit.Round(time.Second), strings.Join(lastN(daemonLog(t, logf, since), 30), "\n"))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func lastN(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// post POSTs body to path with key and returns the status and the answer.
func (p *serveProc) post(t *testing.T, path, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// getJSON decodes the answer of GET path (with key when not empty) into v.
func (p *serveProc) getJSON(t *testing.T, path, key string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: HTTP %d, not JSON: %v\n%.500s", path, resp.StatusCode, err, raw)
	}
}
