package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// fakeEngine is a context engine whose answers the test sets; it records
// the calls it gets.
type fakeEngine struct {
	mu       sync.Mutex
	calls    []string
	refs     []bs.SessionRef
	req      engine.Request
	compactO engine.CompactOptions

	view     engine.View
	err      error
	value    engine.ViewValue
	valueErr error
	status   engine.Status
	compact  engine.CompactResult
	summary  engine.SummaryRecord
	expand   [][]byte
}

func (f *fakeEngine) record(call string, ref bs.SessionRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.refs = append(f.refs, ref)
}

func (f *fakeEngine) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeEngine) Assemble(_ context.Context, ref bs.SessionRef, req engine.Request) (engine.View, error) {
	f.record("assemble", ref)
	f.req = req
	return f.view, f.err
}

func (f *fakeEngine) Value(_ context.Context, ref bs.SessionRef, id string) (engine.ViewValue, error) {
	f.record("value "+id, ref)
	return f.value, f.valueErr
}

func (f *fakeEngine) Status(_ context.Context, ref bs.SessionRef) (engine.Status, error) {
	f.record("status", ref)
	return f.status, nil
}

func (f *fakeEngine) Compact(_ context.Context, ref bs.SessionRef, o engine.CompactOptions) (engine.CompactResult, error) {
	f.record("compact", ref)
	f.compactO = o
	return f.compact, nil
}

func (f *fakeEngine) Describe(_ context.Context, ref bs.SessionRef, id string) (engine.SummaryRecord, error) {
	f.record("describe "+id, ref)
	if id != f.summary.ID {
		return engine.SummaryRecord{}, fmt.Errorf("summary %s: %w", id, bs.ErrNotFound)
	}
	return f.summary, nil
}

func (f *fakeEngine) Expand(_ context.Context, ref bs.SessionRef, id string) ([][]byte, error) {
	f.record("expand "+id, ref)
	return f.expand, nil
}

var _ api.ContextEngine = (*fakeEngine)(nil)

// serveEngine starts the API over the plugin fixture with eng as its
// engine.
func serveEngine(tb testing.TB, f *plugFixture, eng *fakeEngine, readOnly bool) *client {
	tb.Helper()
	h, err := api.NewWithEngine(api.Options{Installation: f.set.Installation, Backend: f.set, ReadOnly: readOnly}, eng)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return &client{tb: tb, srv: srv}
}

func assembleBody(session string, msgs string) string {
	return fmt.Sprintf(`{"agent_id":"main","session_id":%q,"session_key":"agent:main:main","token_budget":32768,"model":"ollama/x","prompt_chars":12,"messages":%s}`, session, msgs)
}

// hostMessages is the skeleton of session A's messages.
const hostMessages = `[{"role":"user","timestamp":1767225601000,"chars":40},{"role":"assistant","timestamp":1767225602000,"tool_call_ids":["call_0"],"chars":90},
 {"role":"toolResult","timestamp":1767225603000,"tool_call_id":"call_0","chars":9000}]`

func TestEngineRoutesRefuseBadRequests(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{}
	c := serveEngine(t, f, eng, false)
	many := strings.TrimSuffix(strings.Repeat(`{"role":"user","timestamp":1,"chars":1},`, api.MaxAssembleMessages+1), ",")
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"no role", "assemble", assembleBody(plugSessA, `[{"role":"","timestamp":1,"chars":1}]`), 400, "messages[0].role: expected a role of 1 to 64 characters, found 0"},
		{"long role", "assemble", assembleBody(plugSessA, `[{"role":"user","timestamp":1,"chars":1},{"role":"`+strings.Repeat("r", 65)+`","timestamp":1,"chars":1}]`), 400, "messages[1].role: expected a role of 1 to 64 characters, found 65"},
		{"control in role", "assemble", assembleBody(plugSessA, `[{"role":"us\ner","timestamp":1,"chars":1}]`), 400, "messages[0].role: expected no control characters"},
		{"negative timestamp", "assemble", assembleBody(plugSessA, `[{"role":"user","timestamp":-5,"chars":1}]`), 400, "messages[0].timestamp: expected Unix milliseconds ≥ 0 (0 for none), found -5"},
		{"negative chars", "assemble", assembleBody(plugSessA, `[{"role":"user","timestamp":1,"chars":-1}]`), 400, "messages[0].chars: expected the content's length ≥ 0, found -1"},
		{"bad tool call id", "assemble", assembleBody(plugSessA, `[{"role":"toolResult","timestamp":1,"tool_call_id":"../x","chars":1}]`), 400, "messages[0].tool_call_id:"},
		{"bad tool call ids", "assemble", assembleBody(plugSessA, `[{"role":"assistant","timestamp":1,"tool_call_ids":["ok","a/b"],"chars":1}]`), 400, "messages[0].tool_call_ids[1]:"},
		{"string timestamp", "assemble", assembleBody(plugSessA, `[{"role":"user","timestamp":"now","chars":1}]`), 400, "request body: expected one JSON object"},
		{"too many", "assemble", assembleBody(plugSessA, "["+many+"]"), 400, fmt.Sprintf("messages: expected at most %d messages, found %d", api.MaxAssembleMessages, api.MaxAssembleMessages+1)},
		{"negative budget", "assemble", `{"session_id":"` + plugSessA + `","token_budget":-1,"messages":[]}`, 400, "token_budget: expected the context window in tokens ≥ 0"},
		{"negative prompt", "assemble", `{"session_id":"` + plugSessA + `","prompt_chars":-1,"messages":[]}`, 400, "prompt_chars: expected the prompt's length ≥ 0"},
		{"negative reserve", "assemble", `{"session_id":"` + plugSessA + `","host_call":"turn_start","max_output_tokens":-1,"messages":[]}`, 400, "max_output_tokens: expected the host's reserve in tokens ≥ 0, found -1"},
		{"bad session id", "assemble", assembleBody("../etc", `[]`), 400, "session_id: expected a session id"},
		{"bad agent", "assemble", `{"agent_id":"a/b","session_id":"` + plugSessA + `","messages":[]}`, 400, "agent_id: expected an agent name"},
		{"no session", "assemble", `{"messages":[]}`, 400, "expected session_id or session_key"},
		{"not an object", "assemble", `[1]`, 400, "request body: expected one JSON object"},
		{"compact negative count", "compact", `{"session_id":"` + plugSessA + `","current_token_count":-3}`, 400, "current_token_count: expected a token count ≥ 0, found -3"},
		{"compact negative budget", "compact", `{"session_id":"` + plugSessA + `","token_budget":-3}`, 400, "token_budget: expected the context window in tokens ≥ 0"},
		{"compact long instructions", "compact", `{"session_id":"` + plugSessA + `","custom_instructions":"` + strings.Repeat("x", api.MaxCompactInstructions+1) + `"}`, 400, "custom_instructions: expected at most 4096 bytes"},
		{"compact unknown session", "compact", `{"session_id":"cccccccc-0000-4000-8000-000000000003"}`, 404, "cccccccc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b, _ := c.do("POST", "/api/plugin/v1/"+tc.path, tc.body)
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("%d %s: not a JSON error", code, b)
			}
			if code != tc.status || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("%d %q, want %d and an error holding %q", code, e.Error, tc.status, tc.want)
			}
		})
	}
	if calls := eng.called(); len(calls) != 0 {
		t.Errorf("the engine was called for refused requests: %v", calls)
	}
	// A session (or agent) the store does not hold yet, as at a new
	// session's first model call on OpenClaw 2026.7: the host's messages
	// pass through, answered 200 with the reason, and no failure is
	// recorded.
	for _, body := range []string{assembleBody("cccccccc-0000-4000-8000-000000000003", hostMessages),
		`{"agent_id":"nobody","session_id":"` + plugSessA + `","messages":[]}`} {
		var ans api.AssembleResponse
		c.json("POST", "/api/plugin/v1/assemble", body, 200, &ans)
		if !ans.OK || !strings.Contains(ans.View.Passthrough, "not stored yet") || len(ans.View.Replace) != 0 || ans.View.Summary != nil {
			t.Errorf("assemble of a session not stored yet: %+v", ans)
		}
	}
	if calls := eng.called(); len(calls) != 0 {
		t.Errorf("the engine was called for a session not stored yet: %v", calls)
	}
	var health struct {
		Plugin api.PluginHealth `json:"plugin"`
	}
	c.json("GET", "/api/health", "", 200, &health)
	for _, f := range health.Plugin.RecentFailures {
		if strings.HasSuffix(f.Path, "/assemble") && (strings.Contains(f.Error, "cccccccc") || strings.Contains(f.Error, "nobody")) {
			t.Errorf("a pass-through of a session not stored yet was recorded as a failure: %+v", f)
		}
	}
	if !strings.Contains(health.Plugin.LastPassthrough, "not stored yet") {
		t.Errorf("health's last pass-through = %q, want the reason", health.Plugin.LastPassthrough)
	}
	// The plugin routes' guard: JSON only, no unlisted Origin.
	if code, b, _ := c.do("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), "Content-Type", "text/plain"); code != 415 {
		t.Errorf("text/plain: %d %s, want 415", code, b)
	}
	if code, b, _ := c.do("POST", "/api/plugin/v1/compact", `{"session_id":"`+plugSessA+`"}`, "Origin", "https://evil.example"); code != 403 {
		t.Errorf("foreign origin: %d %s, want 403", code, b)
	}
	// The body cap of assemble is its own (above the default 1 MiB) and
	// holds.
	big := assembleBody(plugSessA, "["+strings.TrimSuffix(strings.Repeat(`{"role":"user","timestamp":1767225601000,"tool_call_ids":["call_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"],"chars":1},`, 15_000), ",")+"]")
	if len(big) <= api.DefaultMaxBodyBytes {
		t.Fatalf("test body of %d bytes is not above the default cap", len(big))
	}
	c.json("POST", "/api/plugin/v1/assemble", big, 200, nil)
	huge := `{"session_id":"` + plugSessA + `","model":"` + strings.Repeat("m", api.MaxAssembleBodyBytes) + `"}`
	if code, b, _ := c.do("POST", "/api/plugin/v1/assemble", huge); code != 413 {
		t.Errorf("body above %d bytes: %d %.200s, want 413", api.MaxAssembleBodyBytes, code, b)
	}
}

func TestEngineRoutesWithoutEngine(t *testing.T) {
	f := newPlugFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: t, srv: srv}
	for _, path := range []string{"assemble", "compact"} {
		code, b, _ := c.do("POST", "/api/plugin/v1/"+path, assembleBody(plugSessA, hostMessages))
		if code != 501 || !strings.Contains(string(b), "the context engine is not available") {
			t.Errorf("%s without an engine: %d %s, want 501 saying so", path, code, b)
		}
	}
	var d map[string]json.RawMessage
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, &d)
	if _, ok := d["engine"]; ok {
		t.Errorf("session detail without an engine has an engine member: %s", d["engine"])
	}
	// A summary id without an engine: the tool says why.
	a := callTool(t, c, plugSessA, "recall_describe", `{"id":"sum-0123456789ab"}`)
	if a.OK || !strings.Contains(a.Error, "context engine, which this server does not run") {
		t.Errorf("recall_describe of a summary without an engine: %+v", a)
	}
	// A restore of an entry without a record is the ordinary one.
	a = callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	if a.OK {
		t.Errorf("restore of an entry never extracted, without an engine: %+v", a)
	}
}

// The stand-in engine (until the real one is merged) answers every call
// with an error wrapping ErrUnsupported: 422, which the plugin passes
// through.
func TestEngineRoutesOverTheEngineType(t *testing.T) {
	f := newPlugFixture(t)
	eng := &engine.Engine{Store: f.set.Store, StateDir: t.TempDir()}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Engine: eng})
	c := &client{tb: t, srv: srv}
	code, b, _ := c.do("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages))
	if code != 200 && code != 422 {
		t.Errorf("assemble over the engine: %d %s", code, b)
	}
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, nil)
}

func TestEngineAssembleAndCompact(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{view: engine.View{FirstKept: 0, Matched: 3, Turn: 1, EstimatedTokens: 100, PredictedTokens: 150}}
	c := serveEngine(t, f, eng, false)
	var v map[string]json.RawMessage
	c.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, &v)
	for member, want := range map[string]string{"ok": "true", "replace": "[]", "layers": "[]", "summary": "null", "first_kept": "0",
		"matched": "3", "predicted_tokens": "150", "estimated_tokens": "100", "turn": "1", "prefix_changed": "false"} {
		if got := string(v[member]); got != want {
			t.Errorf("assemble answer %s = %s, want %s", member, got, want)
		}
	}
	if eng.refs[0].ID != plugSessA || len(eng.req.Messages) != 3 || eng.req.TokenBudget != 32768 || eng.req.PromptChars != 12 || eng.req.Model != "ollama/x" ||
		eng.req.Messages[2].ToolCallID != "call_0" || eng.req.Messages[1].ToolCallIDs[0] != "call_0" || eng.req.Messages[2].Chars != 9000 {
		t.Errorf("engine got %+v for %v", eng.req, eng.refs)
	}

	eng.compact = engine.CompactResult{Compacted: true, Layer: "summarize", TokensBefore: 9000, TokensAfter: 800,
		Summary: &engine.SummaryRecord{ID: "sum-0123456789ab", Text: "the summary"}}
	var out api.CompactResponse
	c.json("POST", "/api/plugin/v1/compact", `{"agent_id":"main","session_key":"agent:main:main","token_budget":32768,"force":true,"current_token_count":9100,"custom_instructions":"keep the plan"}`, 200, &out)
	want := api.CompactResponse{OK: true, Compacted: true, Layer: "summarize", TokensBefore: 9000, TokensAfter: 800, Summary: "the summary"}
	if out != want {
		t.Errorf("compact answer %+v, want %+v", out, want)
	}
	if o := eng.compactO; o != (engine.CompactOptions{TokenBudget: 32768, Force: true, Focus: "keep the plan", CurrentTokens: 9100}) {
		t.Errorf("engine compact options %+v", o)
	}

	// Read-only: the view is served, compaction refused in the answer.
	ro := &fakeEngine{}
	rc := serveEngine(t, f, ro, true)
	rc.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, nil)
	var rout api.CompactResponse
	rc.json("POST", "/api/plugin/v1/compact", `{"session_id":"`+plugSessA+`","force":true}`, 200, &rout)
	if rout != (api.CompactResponse{OK: true, Reason: "read-only"}) {
		t.Errorf("read-only compact answer %+v", rout)
	}
	if calls := ro.called(); len(calls) != 1 || calls[0] != "assemble" {
		t.Errorf("read-only engine calls %v, want assemble only", calls)
	}
}

func TestEngineRestoreFromView(t *testing.T) {
	f := newPlugFixture(t)
	text := bigText(40_000, "NEEDLE-in-the-row")
	content := `[{"type":"text","text":` + escapedJSON(text) + `}]`
	eng := &fakeEngine{value: engine.ViewValue{EntryID: "r0", Content: json.RawMessage(content), Collapsed: true}}
	c := serveEngine(t, f, eng, false)
	before := readFile(t, f.path(plugSessA))

	// One page: the stored blocks exactly.
	a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0","max_chars":100000}`)
	if !a.OK || len(a.Content) != 1 || string(a.Content[0]) != content[1:len(content)-1] {
		t.Fatalf("restore from the view: ok %v %q, %d blocks, want the stored content exactly: %.300s", a.OK, a.Error, len(a.Content), a.Content[0])
	}
	if a.Details["restored"] != true || a.Details["collapsed"] != true || a.Details["written_back"] != false || a.Details["entry_id"] != "r0" {
		t.Errorf("details %v", a.Details)
	}
	// Pages of the default length concatenate to the text.
	var got strings.Builder
	offset := 0
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages")
		}
		a := callTool(t, c, plugSessA, "purge_control", fmt.Sprintf(`{"action":"restore","key":"r0","offset":%d}`, offset))
		if !a.OK || len(a.Content) != 2 {
			t.Fatalf("page at %d: %+v", offset, a)
		}
		var blk struct{ Text string }
		json.Unmarshal(a.Content[1], &blk)
		got.WriteString(blk.Text)
		next, ok := a.Details["next_offset"].(float64)
		if !ok {
			break
		}
		offset = int(next)
	}
	if got.String() != text {
		t.Errorf("pages concatenate to %d characters, want the %d of the text", len([]rune(got.String())), len([]rune(text)))
	}
	if after := readFile(t, f.path(plugSessA)); after != before {
		t.Error("the transcript changed")
	}

	// A string content, and content with blocks a tool result cannot
	// carry (returned as the text of its JSON).
	for _, tc := range []struct{ content, want string }{
		{`"just a string \u00e9"`, `[{"type":"text","text":"just a string \u00e9"}]`},
		{`[{"type":"thinking","thinking":"hm"},{"type":"toolCall","id":"c","name":"x","arguments":{}}]`,
			`[{"type":"text","text":"[{\"type\":\"thinking\",\"thinking\":\"hm\"},{\"type\":\"toolCall\",\"id\":\"c\",\"name\":\"x\",\"arguments\":{}}]"}]`},
	} {
		eng.value.Content = json.RawMessage(tc.content)
		a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"a0"}`)
		if !a.OK || len(a.Content) != 1 || string(a.Content[0]) != strings.TrimSuffix(strings.TrimPrefix(tc.want, "["), "]") {
			t.Errorf("content %s: %+v, want %s", tc.content, a, tc.want)
		}
	}

	// The row holds the entry's own placeholder (its record is gone):
	// the ordinary restore answers, never the placeholder as the value.
	eng.value.Content = json.RawMessage(`[{"type":"text","text":"[[extracted-a0]]"}]`)
	if a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"a0"}`); a.OK {
		t.Errorf("restore of a row holding its placeholder: %+v", a)
	}

	// The engine does not know the entry: the ordinary restore answers.
	eng.valueErr = fmt.Errorf("entry zz: %w", bs.ErrNotFound)
	a = callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"zz"}`)
	if a.OK {
		t.Errorf("restore of an unknown entry: %+v", a)
	}
	eng.valueErr = nil

	// An entry with a side record: the ordinary restore, never the engine.
	ref := f.ref(t, plugSessA)
	rec := &extract.Record{Session: ref.String(), EntryID: "u1", TriggerType: string(bs.TriggerToolResult), ExtractedAt: time.Now()}
	rec.Put(extract.NewStoredValueShared("/message/content/0/text", bs.TriggerToolResult, false, []byte(`"look at the logs"`), []byte(`"[[extracted-u1]]"`), time.Now()))
	if _, err := extract.SaveRecord(context.Background(), f.set.Side, ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := f.set.Side.Sync(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	n := len(eng.called())
	callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"u1"}`)
	for _, call := range eng.called()[n:] {
		if strings.HasPrefix(call, "value") {
			t.Errorf("the engine was asked for an entry with a side record: %v", call)
		}
	}
}

func TestEngineSummaryRecall(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{summary: engine.SummaryRecord{ID: "sum-0123456789ab", Level: 1, Layer: "summarize", Entries: []string{"u1", "a0", "r0"},
		Text: "the user asked for the logs", Tokens: 8, TokensBefore: 2300, Degraded: true, Reason: "model down", CreatedAt: plugClock},
		expand: [][]byte{[]byte(`{"id":"u1"}`), []byte(`{"id":"a0"}` + "\n"), []byte(`{"id":"r0"}`)}}
	c := serveEngine(t, f, eng, false)
	for _, tc := range []struct {
		tool, params string
		ok           bool
		want         []string
	}{
		{"recall_describe", `{"id":"sum-0123456789ab"}`, true, []string{"Summary:", "sum-0123456789ab", "1 (summarize)", "3 messages, u1 … r0", "2,300 before", "Degraded:", "model down", "the user asked for the logs", `recall_expand {"id":"sum-0123456789ab"}`}},
		{"recall_describe", `{"id":"sum-ffffffffffff"}`, false, []string{"recall_describe sum-ffffffffffff", "not found"}},
		{"recall_expand", `{"id":"sum-0123456789ab"}`, true, []string{"stands for 3 messages", "{\"id\":\"u1\"}\n{\"id\":\"a0\"}\n{\"id\":\"r0\"}\n"}},
		{"recall_expand", `{"id":"sum-0123456789ab","max":2}`, true, []string{"stands for 3 messages", "showing the first 2 (max 2)", "{\"id\":\"u1\"}\n{\"id\":\"a0\"}\n"}},
	} {
		a := callTool(t, c, plugSessA, tc.tool, tc.params)
		text := a.text(t)
		if a.OK != tc.ok {
			t.Errorf("%s %s: ok %v, want %v: %s", tc.tool, tc.params, a.OK, tc.ok, text)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %s: %q lacks %q", tc.tool, tc.params, text, w)
			}
		}
	}
	// An entry id still goes to the transcript's recall.
	if a := callTool(t, c, plugSessA, "recall_describe", `{"id":"u1"}`); !a.OK || !strings.Contains(a.text(t), "Entry:") {
		t.Errorf("recall_describe of an entry: %+v", a)
	}
}

func TestEngineStatusInDetail(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{}
	c := serveEngine(t, f, eng, false)
	var d map[string]json.RawMessage
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, &d)
	if _, ok := d["engine"]; ok {
		t.Errorf("a session the engine never served has an engine member: %s", d["engine"])
	}
	eng.status = engine.Status{Active: true, Collapsed: 2, CollapsedChars: 18000, Summaries: 1, TopSummaries: 1, Levels: 1, Compactions: 3,
		Risk: "medium", Warning: "BrainSurgeon: earlier parts of this conversation were summarized 3 times", Turns: 7, PrefixChanges: 2}
	d = nil
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, &d)
	var st engine.Status
	if err := json.Unmarshal(d["engine"], &st); err != nil || st.Collapsed != 2 || st.Compactions != 3 || st.Warning == "" {
		t.Errorf("engine member %s (%v)", d["engine"], err)
	}
}

func readFile(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestEngineFigures serves a view through the real engine, then reads the
// session detail, the sessions list and the context status: each shows
// the size of the view sent to the model (snake_case members), beside the
// stored transcript's figures, and the context status counts the
// engine's compactions and offers only the layers that can run.
func TestEngineFigures(t *testing.T) {
	f := newPlugFixture(t)
	eng := &engine.Engine{Store: f.set.Store, StateDir: t.TempDir()}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Engine: eng})}
	c.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, nil)
	viewKeys := []string{"turn", "at", "predicted_tokens", "measured_tokens", "measured_turn", "chars", "host_chars", "messages", "host_messages", "summarized"}
	checkView := func(where string, raw json.RawMessage) {
		t.Helper()
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: engine_view %s: %v", where, raw, err)
		}
		for _, k := range viewKeys {
			if _, ok := v[k]; !ok {
				t.Errorf("%s: engine_view %s lacks %q", where, raw, k)
			}
		}
		if v["turn"] != 1.0 || v["host_messages"] != 3.0 || v["host_chars"] != 9130.0 || v["predicted_tokens"].(float64) <= 0 {
			t.Errorf("%s: engine_view %s; want turn 1 of the host's 3 messages (9,130 chars), a prediction", where, raw)
		}
	}
	var d struct {
		EngineView json.RawMessage `json:"engine_view"`
		Engine     map[string]any  `json:"engine"`
	}
	c.json("GET", "/api/sessions/main/"+plugSessA, "", 200, &d)
	checkView("detail", d.EngineView)
	var list struct {
		Sessions []map[string]json.RawMessage `json:"sessions"`
	}
	c.json("GET", "/api/sessions", "", 200, &list)
	seen := 0
	for _, s := range list.Sessions {
		switch string(s["session_id"]) {
		case `"` + plugSessA + `"`:
			checkView("list", s["engine_view"])
			seen++
		case `"` + plugSessB + `"`:
			if _, ok := s["engine_view"]; ok {
				t.Errorf("list: session B, never served, has an engine_view %s", s["engine_view"])
			}
			seen++
		}
	}
	if seen != 2 {
		t.Errorf("list: %d of the 2 sessions", seen)
	}
	var st map[string]json.RawMessage
	c.json("GET", "/api/sessions/main/"+plugSessA+"/context/status", "", 200, &st)
	for k, want := range map[string]string{"engine_serves": "true", "layers": `["prune"]`, "engine_compactions": "0", "transcript_compactions": "0", "compactions": "0"} {
		if got := string(st[k]); got != want {
			t.Errorf("context status %s = %s, want %s", k, got, want)
		}
	}
	if !strings.Contains(string(st["compact_hint"]), "/compact in the chat is answered by it") || string(st["view_tokens"]) == "0" {
		t.Errorf("context status: hint %s, view tokens %s; want the engine's hint and the view's size", st["compact_hint"], st["view_tokens"])
	}
	// The layers it does not offer are refused, with the way to compact.
	code, b, _ := c.do("POST", "/api/sessions/main/"+plugSessA+"/context/compact", `{"layer":"summarize","dry_run":true}`)
	if code != 422 || !strings.Contains(string(b), "/compact in the chat is answered by it") {
		t.Errorf("summarize a session the engine serves: %d %s; want 422 with the engine's hint", code, b)
	}
	c.json("POST", "/api/sessions/main/"+plugSessA+"/context/compact", `{"dry_run":true}`, 200, nil)
	c.json("GET", "/api/sessions/main/"+plugSessB+"/context/status", "", 200, &st)
	if got := string(st["layers"]); got != `["prune","summarize","full"]` || string(st["engine_serves"]) != "false" || string(st["compact_hint"]) != `""` {
		t.Errorf("context status of a session the engine never served: layers %s, serves %s, hint %s", got, st["engine_serves"], st["compact_hint"])
	}
}
