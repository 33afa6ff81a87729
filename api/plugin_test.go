package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
)

// The sessions of the plugin tests: agent main, session A (key
// agent:main:main) and session B (key agent:main:other).
const (
	plugSessA = "aaaaaaaa-0000-4000-8000-000000000001"
	plugSessB = "bbbbbbbb-0000-4000-8000-000000000002"
	plugKeyA  = "agent:main:main"
	plugKeyB  = "agent:main:other"
)

// plugLine is one transcript line of the plugin tests.
type plugLine = map[string]any

var plugClock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func plugTS(i int) string { return bs.FormatTimestamp(plugClock.Add(time.Duration(i) * time.Second)) }

func plugMsg(id, parent string, i int, msg plugLine) plugLine {
	var p any
	if parent != "" {
		p = parent
	}
	msg["timestamp"] = plugClock.Add(time.Duration(i) * time.Second).UnixMilli()
	return plugLine{"type": "message", "id": id, "parentId": p, "timestamp": plugTS(i), "message": msg}
}

func textContent(s string) []any { return []any{map[string]any{"type": "text", "text": s}} }

func assistantCall(id, parent string, i int, callID string) plugLine {
	return plugMsg(id, parent, i, plugLine{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": callID, "name": "exec",
		"arguments": map[string]any{"command": "cat big.log"}}}, "provider": "test", "model": "test", "stopReason": "toolUse",
		"usage": map[string]any{"input": 10, "output": 10, "totalTokens": 20}})
}

func appendLines(tb testing.TB, path string, lines ...any) {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		var b []byte
		switch v := l.(type) {
		case []byte:
			b = v
		default:
			var err error
			if b, err = json.Marshal(v); err != nil {
				tb.Fatal(err)
			}
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			tb.Fatal(err)
		}
	}
}

// plugFixture is a small agents dir: session A asks for tool call call_1
// (its result not yet written, as when the middleware runs), session B
// holds one user message.
type plugFixture struct {
	root, agents, dir string
	set               *backend.Set
}

func (f *plugFixture) path(id string) string { return filepath.Join(f.dir, id+".jsonl") }

func (f *plugFixture) ref(tb testing.TB, id string) bs.SessionRef {
	tb.Helper()
	ref, err := f.set.Store.Resolve(context.Background(), "main/"+id)
	if err != nil {
		tb.Fatal(err)
	}
	return ref
}

func newPlugFixture(tb testing.TB) *plugFixture {
	tb.Helper()
	root := tb.TempDir()
	f := &plugFixture{root: root, agents: filepath.Join(root, "agents"), dir: filepath.Join(root, "agents", "main", "sessions")}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	for _, id := range []string{plugSessA, plugSessB} {
		appendLines(tb, f.path(id), plugLine{"type": "session", "version": 3, "id": id, "timestamp": plugTS(0), "cwd": "/tmp"},
			plugMsg("u1", "", 1, plugLine{"role": "user", "content": textContent("look at the logs")}))
	}
	appendLines(tb, f.path(plugSessA),
		assistantCall("a0", "u1", 2, "call_0"),
		plugMsg("r0", "a0", 3, plugLine{"role": "toolResult", "toolCallId": "call_0", "toolName": "exec",
			"content": textContent(strings.Repeat("an ordinary tool result line\n", 300)), "isError": false}),
		assistantCall("a1", "r0", 4, "call_1"))
	sj, _ := json.Marshal(map[string]any{
		plugKeyA: map[string]any{"sessionId": plugSessA, "updatedAt": plugClock.UnixMilli()},
		plugKeyB: map[string]any{"sessionId": plugSessB, "updatedAt": plugClock.UnixMilli()},
	})
	if err := os.WriteFile(filepath.Join(f.dir, "sessions.json"), sj, 0o600); err != nil {
		tb.Fatal(err)
	}
	set, err := backend.Open(context.Background(), f.agents, backend.Options{Idle: 0, SideStore: plugSideStore})
	if err != nil {
		tb.Fatal(err)
	}
	f.set = set
	return f
}

// plugSideStore is the side_store of the fixtures newPlugFixture makes:
// "" (the local pack store), or an S3 server's while onSideStores runs
// a test's S3 case.
var plugSideStore string

// onSideStores runs test on the local pack store and on an S3 server
// (versitygw on loopback; the S3 case skips without one unless it is
// required).
func onSideStores(t *testing.T, test func(t *testing.T)) {
	t.Run("local", test)
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Optional(t)
		s3test.SkipWithout(t, srv)
		plugSideStore = srv.URL("plugin")
		defer func() { plugSideStore = "" }()
		test(t)
	})
}

// bigText returns n characters of text holding a marker in the middle,
// unicode of one to four UTF-8 bytes, and characters JSON escapes.
func bigText(n int, marker string) string {
	unit := []rune("ascii é ü 中文 😀 tab\t quote\" back\\ slash/ <html> & \u2028 line\n")
	r := make([]rune, 0, n+len(unit))
	for len(r) < n {
		r = append(r, unit...)
	}
	r = r[:n]
	mid := len(r) / 2
	return string(r[:mid]) + marker + string(r[mid+len([]rune(marker)):])
}

// escapedJSON encodes s as a JSON string the way a JavaScript host does
// not: every non-ASCII character as \u escapes (surrogate pairs for the
// astral ones) and "/" as "\/", so that byte identity is not an accident
// of Go's encoder.
func escapedJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '/':
			b.WriteString(`\/`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04X`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// placeholderContent is what the plugin puts in place of a result.
func placeholderContent(key, head, tail string) string {
	t := "[[extracted-" + key + "]] BrainSurgeon stored this exec result (200000 characters) outside the transcript.\n" +
		`Restore it exactly with purge_control {"action":"restore","key":"` + key + "\"}.\n--- first 2000 characters ---\n" +
		head + "\n--- last 2000 characters ---\n" + tail
	b, _ := json.Marshal(textContent(t))
	return string(b)
}

// sourceBody is a source request; content and details are inserted as
// they are.
func sourceBody(sessionID, sessionKey, callID, content, details string) string {
	ph := placeholderContent("tc-"+callID, "head", "tail")
	body := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"session_key":%q,"run_id":"run-1","tool_call_id":%q,"tool_name":"exec","key":%q,
 "content": %s ,"placeholder_content":%s`, sessionID, sessionKey, callID, "tc-"+callID, content, ph)
	if details != "" {
		body += `, "details":` + details + `,"placeholder_details":{"brainsurgeon":{"key":"tc-` + callID + `","bytes":1},"exitCode":0}`
	}
	return body + "}"
}

type toolAnswer struct {
	OK      bool              `json:"ok"`
	Error   string            `json:"error"`
	Content []json.RawMessage `json:"content"`
	Details map[string]any    `json:"details"`
}

func (a toolAnswer) text(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, c := range a.Content {
		var blk struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(c, &blk); err != nil {
			tb.Fatal(err)
		}
		b.WriteString(blk.Text)
	}
	return b.String()
}

func callTool(tb testing.TB, c *client, session, tool, params string) toolAnswer {
	tb.Helper()
	var a toolAnswer
	c.json("POST", "/api/plugin/v1/tool", fmt.Sprintf(`{"agent_id":"main","session_id":%q,"tool_call_id":"call_t","tool":%q,"params":%s}`, session, tool, params), 200, &a)
	return a
}

func TestPluginSourceAndTools(t *testing.T) { onSideStores(t, testPluginSourceAndTools) }

func testPluginSourceAndTools(t *testing.T) {
	ctx := context.Background()
	f := newPlugFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: t, srv: srv}
	refA := f.ref(t, plugSessA)

	// Two text blocks of 100,000 characters each, escaped as no Go
	// encoder would, and details with reserved keys.
	marker := "NEEDLE-4242-only-in-the-side-record"
	text := bigText(200_000, marker)
	half := len([]rune(text)) / 2
	content := `[ {"type":"text","text":` + escapedJSON(string([]rune(text)[:half])) + `}, {"type" : "text", "text":` + escapedJSON(string([]rune(text)[half:])) + `} ]`
	details := `{"status":"completed","exitCode":0,"ok":true,"timedOut":false,"aggregated":"x\u00e9\/y","nested":{"a":[1,2.50,"\ud83d\ude00"]}}`
	body := sourceBody(plugSessA, plugKeyA, "call_1", content, details)

	var out api.SourceResponse
	c.json("POST", "/api/plugin/v1/source", body, 200, &out)
	sum := sha256.Sum256([]byte(content))
	if out.Key != "tc-call_1" || out.Bytes != len(content) || out.SHA256 != hex.EncodeToString(sum[:]) || out.Placeholder != "[[extracted-tc-call_1]]" {
		t.Fatalf("source answer %+v, want key tc-call_1, %d bytes", out, len(content))
	}
	check := func() {
		t.Helper()
		rec, err := extract.LoadRecord(ctx, f.set.Side, refA, "tc-call_1")
		if err != nil {
			t.Fatal(err)
		}
		got, err := extract.SourceContent(rec)
		if err != nil || !bytes.Equal(got, []byte(content)) {
			t.Fatalf("stored content differs from the request's bytes (%d vs %d bytes): %v", len(got), len(content), err)
		}
		d, err := extract.SourceDetails(rec)
		if err != nil || string(d) != details {
			t.Fatalf("stored details %s, want %s (%v)", d, details, err)
		}
		var src map[string]string
		if err := json.Unmarshal(rec.Extra["source"], &src); err != nil || src["tool_call_id"] != "call_1" || src["tool_name"] != "exec" || src["run_id"] != "run-1" || src["session_key"] != plugKeyA {
			t.Fatalf("source member %s: %v", rec.Extra["source"], err)
		}
	}
	check()
	// A retry with the same bytes replaces the record.
	c.json("POST", "/api/plugin/v1/source", body, 200, &out)
	check()
	infos, err := f.set.Side.List(ctx, refA)
	if err != nil || len(infos) != 1 {
		t.Fatalf("side records after a retry: %v %v", infos, err)
	}
	audit, _ := os.ReadFile(filepath.Join(f.set.StateDir, "audit.jsonl"))
	if n := strings.Count(string(audit), `"action":"extract_source"`); n != 2 {
		t.Errorf("audit log holds %d extract_source lines, want 2:\n%s", n, audit)
	}

	// The host writes the placeholder entry, the run goes on, and an
	// extraction pass runs: r0 is extracted, r1 is not re-extracted.
	head, tail := string([]rune(text)[:2000]), string([]rune(text)[len([]rune(text))-2000:])
	r1 := fmt.Sprintf(`{"type":"message","id":"r1","parentId":"a1","timestamp":%q,"message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":%s,"details":{"brainsurgeon":{"key":"tc-call_1","bytes":%d},"exitCode":0},"isError":false,"timestamp":1767225605000}}`,
		plugTS(5), placeholderContent("tc-call_1", head, tail), len(content))
	appendLines(t, f.path(plugSessA), []byte(r1),
		plugMsg("u2", "r1", 6, plugLine{"role": "user", "content": textContent("thanks")}),
		plugMsg("a2", "u2", 7, plugLine{"role": "assistant", "content": textContent("ok"), "stopReason": "stop"}),
		plugMsg("u3", "a2", 8, plugLine{"role": "user", "content": textContent("next")}),
		plugMsg("a3", "u3", 9, plugLine{"role": "assistant", "content": textContent("done"), "stopReason": "stop"}))
	cfg := config.Default()
	cfg.Enabled, cfg.IdleSeconds, cfg.AgeThresholdHours, cfg.MinSavingTokens, cfg.KeepRecent = true, 0, 0, 0, 1
	if _, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil).Run(ctx, nil); err != nil {
		t.Fatal(err)
	}
	lines, _ := os.ReadFile(f.path(plugSessA))
	if !bytes.Contains(lines, []byte(r1+"\n")) {
		t.Fatalf("the extraction pass changed the entry holding the source placeholder")
	}
	if !bytes.Contains(lines, []byte("[[extracted-r0]]")) {
		t.Fatalf("r0 was not extracted; the test needs one extracted entry")
	}
	if _, err := f.set.Side.Get(ctx, refA, "r1"); err == nil {
		t.Fatalf("r1 got its own side record: a value holding a placeholder was extracted again")
	}
	appendLines(t, f.path(plugSessA),
		plugLine{"type": "compaction", "id": "c1", "parentId": "a3", "timestamp": plugTS(10), "summary": "the logs were read", "firstKeptEntryId": "u3", "tokensBefore": 60000},
		plugMsg("u4", "c1", 11, plugLine{"role": "user", "content": textContent("and now?")}))

	// purge_control restore of the tc- key: its first page
	// (TestPluginRestorePages reads all of them).
	a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"tc-call_1"}`)
	// bigText holds CJK characters and emoji, which the host counts as
	// more than one: the page holds fewer than 15,000 characters.
	if !a.OK || len(a.Content) != 2 || !strings.HasPrefix(a.text(t), "[BrainSurgeon tc-call_1: characters 0–13,334 of 200,000 (page 1 of 16). Next:") ||
		a.Details["sha256"] != out.SHA256 || a.Details["value_id"] != "tc-call_1" || a.Details["next_offset"] != 13334.0 {
		t.Fatalf("restore tc-call_1: ok %v, %d blocks, details %v, error %s: %.200s", a.OK, len(a.Content), a.Details, a.Error, a.text(t))
	}
	// The same key asked from session B is not found there.
	b := callTool(t, c, plugSessB, "purge_control", `{"action":"restore","key":"tc-call_1"}`)
	if b.OK || !strings.Contains(b.Error, "not found in this session") || b.text(t) != b.Error {
		t.Fatalf("restore tc-call_1 in session B: %+v", b)
	}
	// get_context lists the source record by its key.
	g := callTool(t, c, plugSessA, "purge_control", `{"action":"get_context"}`)
	if !g.OK || !strings.Contains(g.text(t), "entry tc-call_1: content, details") || !strings.Contains(g.text(t), "entry r0: content/0/text") {
		t.Fatalf("get_context:\n%s", g.text(t))
	}
	// Restoring the entry r1 by its id points to the key.
	r := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r1"}`)
	if r.OK || !strings.Contains(r.Error, "tc-call_1") {
		t.Fatalf("restore r1: %+v", r)
	}
	// grep --in extracted finds the marker only in the source record.
	gr := callTool(t, c, plugSessA, "recall_grep", `{"pattern":"`+marker+`","in":"extracted"}`)
	grep1 := gr
	if !gr.OK || !strings.Contains(gr.text(t), "tc-call_1") || !strings.Contains(gr.text(t), "1 hit\n") {
		t.Fatalf("recall_grep in extracted:\n%s", gr.text(t))
	}
	gr = callTool(t, c, plugSessA, "recall_grep", `{"pattern":"`+marker+`","in":["active","compacted","off_path"]}`)
	if !gr.OK || !strings.Contains(gr.text(t), "no match") {
		t.Fatalf("recall_grep in the transcript:\n%s", gr.text(t))
	}
	gr = callTool(t, c, plugSessA, "recall_grep", `{"pattern":"(","regex":true}`)
	if gr.OK || !strings.Contains(gr.Error, "bad regex") {
		t.Fatalf("recall_grep with a bad regex: %+v", gr)
	}
	// describe says r1 holds extracted values; expand --resolve puts the
	// stored result back in the output.
	d := callTool(t, c, plugSessA, "recall_describe", `{"id":"r1"}`)
	if !d.OK || d.Details["extracted"] != true || !strings.Contains(d.text(t), "Extracted:") {
		t.Fatalf("recall_describe r1:\n%s\n%v", d.text(t), d.Details)
	}
	x := callTool(t, c, plugSessA, "recall_expand", `{"id":"c1","resolve":true}`)
	if !x.OK || !strings.Contains(x.text(t), marker) || !strings.HasPrefix(x.text(t), "compaction c1") {
		t.Fatalf("recall_expand c1 --resolve: ok %v, marker %v: %.300s", x.OK, strings.Contains(x.text(t), marker), x.text(t))
	}
	// That text is longer than a block the host keeps: it comes in blocks.
	if len(x.Content) < 2 {
		t.Errorf("recall_expand --resolve: %d blocks for %d characters", len(x.Content), len([]rune(x.text(t))))
	}
	for i, blk := range x.Content {
		var tb struct{ Text string }
		_ = json.Unmarshal(blk, &tb)
		if n := len(utf16.Encode([]rune(tb.Text))); n > api.MaxToolTextBlock {
			t.Errorf("recall_expand block %d: %d UTF-16 units", i, n)
		}
	}
	x = callTool(t, c, plugSessA, "recall_expand", `{"id":"c1"}`)
	if !x.OK || strings.Contains(x.text(t), marker) {
		t.Fatalf("recall_expand c1 without resolve holds the stored text")
	}
	// The extracted counts of the session list count r1 and r0.
	var list struct {
		Sessions []api.SessionInfo `json:"sessions"`
	}
	c.json("GET", "/api/sessions?agent=main", "", 200, &list)
	for _, s := range list.Sessions {
		if s.SessionID == plugSessA && s.Extracted != 2 {
			t.Errorf("session A extracted count %d, want 2 (r0 and r1)", s.Extracted)
		}
	}
	// The UI's extracted value of r1 is the stored content, by the
	// pointer of its placeholder.
	code, raw, _ := c.do("GET", "/api/sessions/main/"+plugSessA+"/entries/r1/extracted?key=/message/content/0/text&raw=true", "")
	if code != 200 || string(raw) != content {
		t.Fatalf("GET …/entries/r1/extracted raw: %d, %d bytes, want the %d bytes sent", code, len(raw), len(content))
	}
	// verify: every placeholder has its value, the source record is no orphan.
	rep, err := restore.Verify(ctx, f.set.Store, f.set.Side, refA)
	if err != nil || !rep.OK() || len(rep.Orphans) != 0 || rep.Placeholders != 2 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	// Entry restore and set_extractable write.
	// The answer is the value exactly; what the restore did is in the
	// details.
	e := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	if !e.OK || len(e.Content) != 1 || e.text(t) != strings.Repeat("an ordinary tool result line\n", 300) || e.Details["value_id"] != "r0" {
		t.Fatalf("restore r0: %d blocks:\n%s", len(e.Content), e.text(t))
	}
	if note, _ := e.Details["note"].(string); !strings.Contains(note, "Restored keys: content/0/text") {
		t.Errorf("restore r0: note %q", note)
	}
	// Details are small metadata: the host keeps them in the transcript.
	for name, a := range map[string]toolAnswer{"restore r0": e, "grep": grep1, "get_context": g, "expand": x} {
		if d, _ := json.Marshal(a.Details); len(d) > 1024 || bytes.Contains(d, []byte("an ordinary tool result line")) || bytes.Contains(d, []byte(marker)) {
			t.Errorf("%s: details of %d bytes: %.300s", name, len(d), d)
		}
	}
	if e.Details["restored"] != true || e.Details["result"] != nil || grep1.Details["count"] != 1.0 || x.Details["total"] == nil {
		t.Errorf("details: restore %v, grep %v, expand %v", e.Details, grep1.Details, x.Details)
	}
	s := callTool(t, c, plugSessA, "purge_control", `{"action":"set_extractable","key":"u2","value":false}`)
	if !s.OK || !strings.Contains(s.text(t), "Entry u2: _extractable set to false") {
		t.Fatalf("set_extractable: %+v %s", s, s.text(t))
	}
	bad := callTool(t, c, plugSessA, "purge_control", `{"action":"explode"}`)
	if bad.OK || !strings.Contains(bad.Error, "expected get_context, restore or set_extractable") {
		t.Fatalf("unknown action: %+v", bad)
	}

	// Retention keeps the source record while its placeholder is in
	// the transcript, even in scope "all".
	rcfg := config.Default()
	rcfg.RetentionScope = config.ScopeAll
	if _, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: f.set.Side, StateDir: f.set.StateDir, Config: rcfg, MaxAge: time.Nanosecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.set.Side.Get(ctx, refA, "tc-call_1"); err != nil {
		t.Fatalf("retention removed a source record whose placeholder is in the transcript: %v", err)
	}
}

func TestPluginSourceOnePage(t *testing.T) {
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	// 100,000 characters fit in one page of max_chars 100,000: the stored
	// blocks exactly, the image included.
	text := strings.Repeat("abcdé", 20_000)
	content := `[{"type":"text","text":` + escapedJSON(text) + `},{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_9", content, ""), 200, nil)
	a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"tc-call_9","max_chars":100000}`)
	var want []json.RawMessage
	_ = json.Unmarshal([]byte(content), &want)
	if !a.OK || len(a.Content) != 2 || string(a.Content[0]) != string(want[0]) || string(a.Content[1]) != string(want[1]) {
		t.Fatalf("restore: ok %v, %d blocks, want the text and the image as stored: %s", a.OK, len(a.Content), a.Error)
	}
}

// pageRequest restores one page of key.
func pageRequest(key string, offset, maxChars int) string {
	p := `{"action":"restore","value_id":"` + key + `"`
	if offset >= 0 {
		p += fmt.Sprintf(`,"offset":%d`, offset)
	}
	if maxChars > 0 {
		p += fmt.Sprintf(`,"max_chars":%d`, maxChars)
	}
	return p + "}"
}

func TestPluginRestorePages(t *testing.T) {
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	const image = `{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}`
	// tc-call_p: 200,000 characters of one to three UTF-8 bytes, none
	// that the host counts as more than one, in two text blocks, and an
	// image.
	unit := []rune("ascii é ü € — tab\t quote\" back\\ slash/ <html> & \u2028 line\n")
	var tb strings.Builder
	for i := 0; i < 200_000; i++ {
		tb.WriteRune(unit[i%len(unit)])
	}
	text := tb.String()
	rs := []rune(text)
	content := `[{"type":"text","text":` + escapedJSON(string(rs[:123_457])) + `},` + image + `,{"type":"text","text":` + escapedJSON(string(rs[123_457:])) + `}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_p", content, ""), 200, nil)
	// tc-call_a: astral and two-byte characters only.
	astral := strings.Repeat("é😀中", 2_000)
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_a", `[{"type":"text","text":`+escapedJSON(astral)+`}]`, ""), 200, nil)
	// tc-call_s: a value that fits in one page.
	small := `[ {"type":"text","text":"sm\u00e9ll"}, {"type":"text", "text":"` + strings.Repeat("x", 14_990) + `"}, ` + image + `]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_s", small, ""), 200, nil)

	readAll := func(t *testing.T, key string, maxChars int) (string, []toolAnswer) {
		var b strings.Builder
		var pages []toolAnswer
		for off := 0; ; {
			a := callTool(t, c, plugSessA, "purge_control", pageRequest(key, off, maxChars))
			if !a.OK || len(a.Content) < 2 || len(pages) > 300 {
				t.Fatalf("page at %d: ok %v, %d blocks: %s", off, a.OK, len(a.Content), a.Error)
			}
			// The page's characters are its last block.
			var blk struct{ Type, Text string }
			if err := json.Unmarshal(a.Content[len(a.Content)-1], &blk); err != nil || blk.Type != "text" {
				t.Fatalf("page at %d: last block %.80s", off, a.Content[len(a.Content)-1])
			}
			if a.Details["offset"] != float64(off) || a.Details["total_chars"] != float64(len([]rune(text))) && key == "tc-call_p" {
				t.Fatalf("page at %d: details %v", off, a.Details)
			}
			b.WriteString(blk.Text)
			pages = append(pages, a)
			next, ok := a.Details["next_offset"].(float64)
			if !ok {
				if a.Details["next_offset"] != nil {
					t.Fatalf("next_offset %v", a.Details["next_offset"])
				}
				return b.String(), pages
			}
			off = int(next)
		}
	}
	header := func(a toolAnswer) string {
		var blk struct{ Text string }
		_ = json.Unmarshal(a.Content[0], &blk)
		return blk.Text
	}
	for _, tc := range []struct {
		name          string
		maxChars      int
		pages         int
		first, last   string
		firstBlocks   int
		lastNextEmpty bool
	}{
		{"default", 0, 14,
			`[BrainSurgeon tc-call_p: characters 0–15,000 of 200,000 (page 1 of 14). Next: purge_control {"action":"restore","value_id":"tc-call_p","offset":15000}]`,
			`[BrainSurgeon tc-call_p: characters 195,000–200,000 of 200,000 (page 14 of 14, the last page).]`, 3, true},
		{"max_chars 60000", 60_000, 4,
			`[BrainSurgeon tc-call_p: characters 0–60,000 of 200,000 (page 1 of 4). Next: purge_control {"action":"restore","value_id":"tc-call_p","offset":60000,"max_chars":60000}]`,
			`[BrainSurgeon tc-call_p: characters 180,000–200,000 of 200,000 (page 4 of 4, the last page).]`, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pages := readAll(t, "tc-call_p", tc.maxChars)
			if got != text {
				t.Fatalf("the %d pages do not reassemble the text (%d of %d characters)", len(pages), len([]rune(got)), len(rs))
			}
			if len(pages) != tc.pages || header(pages[0]) != tc.first || header(pages[len(pages)-1]) != tc.last {
				t.Fatalf("%d pages, first header %q, last %q", len(pages), header(pages[0]), header(pages[len(pages)-1]))
			}
			if len(pages[0].Content) != tc.firstBlocks || string(pages[0].Content[1]) != image || len(pages[1].Content) != 2 {
				t.Fatalf("first page %d blocks (want the header, the image and the text), second %d", len(pages[0].Content), len(pages[1].Content))
			}
		})
	}

	// Offsets count code points: a page never splits a character. The
	// host counts "é😀中" as 1+2+4 characters: a page of max_chars 1000
	// holds 428 or 429 of them.
	ar := []rune(astral)
	for _, tc := range []struct{ off, end int }{{1, 429}, {2, 430}, {5_999, 6_000}} {
		a := callTool(t, c, plugSessA, "purge_control", pageRequest("tc-call_a", tc.off, 1000))
		var blk struct{ Text string }
		if !a.OK || json.Unmarshal(a.Content[1], &blk) != nil || blk.Text != string(ar[tc.off:tc.end]) || a.Details["end"] != float64(tc.end) {
			t.Fatalf("astral page at %d: ok %v %s, details %v: %.40q", tc.off, a.OK, a.Error, a.Details, blk.Text)
		}
	}

	// A value that fits: the stored blocks exactly, as before paging.
	a := callTool(t, c, plugSessA, "purge_control", pageRequest("tc-call_s", -1, 0))
	var want []json.RawMessage
	_ = json.Unmarshal([]byte(small), &want)
	if !a.OK || len(a.Content) != 3 || string(a.Content[0]) != string(want[0]) || string(a.Content[2]) != image ||
		a.Details["total_chars"] != 14_995.0 || a.Details["next_offset"] != nil || a.Details["offset"] != 0.0 {
		t.Fatalf("a value that fits: ok %v, blocks %.100s, details %v", a.OK, a.Content, a.Details)
	}

	// Errors: ok:false, saying what was expected.
	for _, tc := range []struct{ name, params, want string }{
		{"offset at the end", pageRequest("tc-call_p", 200_000, 0), "offset: expected 0…199999 (the text has 200,000 characters), found 200000"},
		{"offset beyond", pageRequest("tc-call_s", 20_000, 0), "expected 0…14994"},
		{"offset -1", `{"action":"restore","key":"tc-call_p","offset":-1}`, "offset: expected an integer ≥ 0"},
		{"offset fraction", `{"action":"restore","key":"tc-call_p","offset":1.5}`, "offset: expected an integer, found 1.5"},
		{"offset word", `{"action":"restore","key":"tc-call_p","offset":"ten"}`, `offset: expected an integer, found "ten"`},
		{"max_chars small", pageRequest("tc-call_p", 0, 999), "max_chars: expected an integer from 1,000 to 100,000, found 999"},
		{"max_chars large", pageRequest("tc-call_p", 0, 100_001), "found 100001"},
		{"max_chars object", `{"action":"restore","key":"tc-call_p","max_chars":{}}`, "max_chars: expected an integer, found {}"},
		{"entry offset", pageRequest("r0", 10, 0), "nothing to restore (it was never extracted)"},
	} {
		a := callTool(t, c, plugSessA, "purge_control", tc.params)
		if a.OK || !strings.Contains(a.Error, tc.want) {
			t.Errorf("%s: ok %v, error %q, want %q", tc.name, a.OK, a.Error, tc.want)
		}
	}
	// Strings of digits are taken as integers.
	if a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"tc-call_p","offset":"195000","max_chars":"5000"}`); !a.OK || a.Details["next_offset"] != nil {
		t.Fatalf("offset and max_chars as strings: %+v", a.Details)
	}
}

func TestPluginSplitTextBlocks(t *testing.T) {
	// Astral characters are two UTF-16 units: a cut never splits one.
	text := strings.Repeat("a😀", 7)
	blocks, err := api.SplitTextBlocks([]byte(`[{"type":"text","text":`+escapedJSON(text)+`}]`), 4)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, b := range blocks {
		var tb struct{ Text string }
		_ = json.Unmarshal(b, &tb)
		parts = append(parts, tb.Text)
	}
	if strings.Join(parts, "") != text || parts[0] != "a😀a" || parts[1] != "😀a" || len(parts) != 7 {
		t.Fatalf("parts %q", parts)
	}
	short := `[{"type":"text","text":"\u00e9"}]`
	blocks, _ = api.SplitTextBlocks([]byte(short), 4)
	if len(blocks) != 1 || string(blocks[0]) != `{"type":"text","text":"\u00e9"}` {
		t.Fatalf("a short block is not kept as its bytes: %s", blocks)
	}
}

func TestPluginRequests(t *testing.T) {
	f := newPlugFixture(t)
	content := `[{"type":"text","text":"hello"}]`
	ok := sourceBody(plugSessA, plugKeyA, "call_1", content, "")
	tool := func(extra string) string {
		return `{"agent_id":"main","session_id":"` + plugSessA + `","tool":"purge_control","params":{"action":"get_context"}` + extra + `}`
	}
	cases := []struct {
		name, path, body string
		key              string // X-API-Key
		want             int
		errHas           string
		hdr              []string
	}{
		{"text/plain", "/api/plugin/v1/source", ok, "k1", 415, "expected application/json", []string{"Content-Type", "text/plain"}},
		{"form", "/api/plugin/v1/tool", tool(""), "k1", 415, "expected application/json", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"json with charset", "/api/plugin/v1/tool", tool(""), "k1", 200, "", []string{"Content-Type", "application/json; charset=utf-8"}},
		{"cross-site origin", "/api/plugin/v1/tool", tool(""), "k1", 403, "not allowed on the plugin routes", []string{"Origin", "https://evil.example"}},
		{"source ok", "/api/plugin/v1/source", ok, "k1", 200, "", nil},
		{"source by session key", "/api/plugin/v1/source", sourceBody("", plugKeyB, "call_2", content, ""), "k1", 200, "", nil},
		// A session id not listed (yet) never falls back to the key's
		// session when that session has another id: 404, fail open.
		{"session key when the id is unknown", "/api/plugin/v1/source", sourceBody("cccccccc-0000-4000-8000-000000000003", plugKeyB, "call_3", content, ""), "k1", 404, "not session_id", nil},
		{"tool_call_id breaking the placeholder", "/api/plugin/v1/source", strings.ReplaceAll(ok, "call_1", "call]]1"), "k1", 400, "would break the placeholder", nil},
		{"no key", "/api/plugin/v1/source", ok, "", 401, "API key required", nil},
		{"wrong key", "/api/plugin/v1/tool", tool(""), "nope", 403, "invalid API key", nil},
		{"bad tool_call_id", "/api/plugin/v1/source", strings.Replace(ok, `"call_1"`, `"call 1"`, 1), "k1", 400, "expected", nil},
		{"key mismatch", "/api/plugin/v1/source", strings.Replace(ok, `"key":"tc-call_1"`, `"key":"tc-call_2"`, 1), "k1", 400, "and the tool_call_id", nil},
		{"bad agent", "/api/plugin/v1/source", strings.Replace(ok, `"agent_id":"main"`, `"agent_id":"../etc"`, 1), "k1", 400, "agent_id: expected an agent name", nil},
		{"bad session id", "/api/plugin/v1/source", strings.Replace(ok, plugSessA, "../"+plugSessA, 1), "k1", 400, "session_id: expected", nil},
		{"no session", "/api/plugin/v1/source", strings.Replace(strings.Replace(ok, plugSessA, "", 1), plugKeyA, "", 1), "k1", 400, "expected session_id or session_key", nil},
		{"unknown session", "/api/plugin/v1/source", strings.Replace(strings.Replace(ok, plugSessA, "dddddddd-0000-4000-8000-000000000004", 1), plugKeyA, "", 1), "k1", 404, "", nil},
		{"content not an array", "/api/plugin/v1/source", strings.Replace(ok, content, `"hello"`, 1), "k1", 400, "content: expected", nil},
		{"placeholder missing", "/api/plugin/v1/source", strings.Replace(ok, "[[extracted-tc-call_1]]", "[[extracted-x]]", 1), "k1", 400, "placeholder_content: expected", nil},
		{"bad json", "/api/plugin/v1/source", `{"agent_id":`, "k1", 400, "request body", nil},
		{"unknown tool", "/api/plugin/v1/tool", strings.Replace(tool(""), "purge_control", "rm_rf", 1), "k1", 400, "tool: expected purge_control", nil},
		{"bad tool_call_id on tool", "/api/plugin/v1/tool", tool(`,"tool_call_id":"a/b"`), "k1", 400, "expected", nil},
		{"tool ok", "/api/plugin/v1/tool", tool(""), "k1", 200, "", nil},
		{"source body cap", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_5", `[{"type":"text","text":"`+strings.Repeat("x", api.MaxSourceBodyBytes)+`"}]`, ""), "k1", 413, "larger than the limit", nil},
		{"tool body cap", "/api/plugin/v1/tool", tool(`,"pad":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `"`), "k1", 413, "larger than the limit", nil},
		{"source under its cap", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_6", `[{"type":"text","text":"`+strings.Repeat("x", 2*api.DefaultMaxBodyBytes)+`"}]`, ""), "k1", 200, "", nil},
	}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, APIKeys: []string{"k1"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &client{tb: t, srv: srv, key: tc.key}
			code, b, _ := c.do("POST", tc.path, tc.body, tc.hdr...)
			if code != tc.want || !strings.Contains(string(b), tc.errHas) {
				t.Fatalf("status %d, want %d with %q: %.300s", code, tc.want, tc.errHas, b)
			}
		})
	}
	refB := f.ref(t, plugSessB)
	if _, err := f.set.Side.Get(context.Background(), refB, "tc-call_2"); err != nil {
		t.Errorf("tc-call_2 was not stored in session B (by its session key): %v", err)
	}
	if _, err := f.set.Side.Get(context.Background(), refB, "tc-call_3"); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("tc-call_3 was stored in session B although the request named another session id: %v", err)
	}
}

func TestPluginReadOnly(t *testing.T) {
	f := newPlugFixture(t)
	// A source record and a normally extracted entry, written before the
	// server goes read-only.
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_1", `[{"type":"text","text":"stored"}]`, ""), 200, nil)
	appendLines(t, f.path(plugSessA),
		plugMsg("u2", "a1", 6, plugLine{"role": "user", "content": textContent("a")}),
		plugMsg("a2", "u2", 7, plugLine{"role": "assistant", "content": textContent("b"), "stopReason": "stop"}))
	cfg := config.Default()
	cfg.Enabled, cfg.IdleSeconds, cfg.AgeThresholdHours, cfg.MinSavingTokens, cfg.KeepRecent = true, 0, 0, 0, 1
	if _, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.path(plugSessA))
	if !bytes.Contains(before, []byte("[[extracted-r0]]")) {
		t.Fatal("r0 was not extracted")
	}
	ro := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, ReadOnly: true})}
	code, b, _ := ro.do("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_2", `[{"type":"text","text":"x"}]`, ""))
	if code != http.StatusForbidden || !strings.Contains(string(b), "read-only") {
		t.Fatalf("source in read-only mode: %d %s", code, b)
	}
	if a := callTool(t, ro, plugSessA, "purge_control", `{"action":"get_context"}`); !a.OK {
		t.Fatalf("get_context in read-only mode: %+v", a)
	}
	if a := callTool(t, ro, plugSessA, "purge_control", `{"action":"restore","key":"tc-call_1"}`); !a.OK || a.text(t) != "stored" {
		t.Fatalf("tc- restore in read-only mode: %+v", a)
	}
	if a := callTool(t, ro, plugSessA, "recall_grep", `{"pattern":"stored"}`); !a.OK {
		t.Fatalf("recall_grep in read-only mode: %+v", a)
	}
	a := callTool(t, ro, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	note, _ := a.Details["note"].(string)
	if !a.OK || a.text(t) != strings.Repeat("an ordinary tool result line\n", 300) || !strings.Contains(note, "Not written back.") || !strings.Contains(note, "read-only") {
		t.Fatalf("entry restore in read-only mode: note %q:\n%s", note, a.text(t))
	}
	if a := callTool(t, ro, plugSessA, "purge_control", `{"action":"set_extractable","key":"u2","value":"false"}`); a.OK || !strings.Contains(a.Error, "read-only") {
		t.Fatalf("set_extractable in read-only mode: %+v", a)
	}
	after, _ := os.ReadFile(f.path(plugSessA))
	if !bytes.Equal(before, after) {
		t.Fatal("the read-only server changed the transcript")
	}
	if q, _ := os.ReadDir(filepath.Join(f.set.StateDir, "pending")); len(q) > 0 {
		t.Fatalf("the read-only server queued %d write-backs", len(q))
	}
}

func TestPluginRetentionIdle(t *testing.T) {
	ctx := context.Background()
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessB, "", "call_7", `[{"type":"text","text":"no entry yet"}]`, ""), 200, nil)
	refB := f.ref(t, plugSessB)
	run := func(idle int) {
		cfg := config.Default()
		cfg.RetentionScope, cfg.IdleSeconds = config.ScopeAll, idle
		if _, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: f.set.Side, StateDir: f.set.StateDir, Config: cfg, MaxAge: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond)
	run(300)
	if _, err := f.set.Side.Get(ctx, refB, "tc-call_7"); err != nil {
		t.Fatalf("retention removed a source record younger than the idle delay whose entry is not written yet: %v", err)
	}
	run(0)
	if rec, err := f.set.Side.Get(ctx, refB, "tc-call_7"); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("after retention, Get of the expired source record no placeholder names: record of %d bytes, error %v; want an error wrapping ErrNotFound (deleted)", len(rec.Data), err)
	}
}

// TestPluginSourceRandomBytes sends random text, escaped in the ways JSON
// allows, and finds the request's bytes in the side record.
func TestPluginSourceRandomBytes(t *testing.T) { onSideStores(t, testPluginSourceRandomBytes) }

func testPluginSourceRandomBytes(t *testing.T) {
	ctx := context.Background()
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	refA := f.ref(t, plugSessA)
	r := rand.New(rand.NewPCG(7, 21))
	pieces := []string{`\ud83d\ude00`, `\uD800`, `\udfff`, `\u0000`, `\/`, `\"`, `\\`, `\n`, "é", "中", "😀", "\u2028", "<&>", " ", "a", `\u00E9`}
	for i := range 25 {
		var b strings.Builder
		for range r.IntN(2000) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		content := "[\n" + `{"type":"text","text":"` + b.String() + `"}` + strings.Repeat(" ", i%3) + "]"
		if !json.Valid([]byte(content)) {
			t.Fatalf("invalid test content %s", content)
		}
		id := fmt.Sprintf("call_r%d", i)
		c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", id, content, ""), 200, nil)
		rec, err := extract.LoadRecord(ctx, f.set.Side, refA, "tc-"+id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := extract.SourceContent(rec)
		if err != nil || string(got) != content {
			t.Fatalf("case %d: stored %q, sent %q (%v)", i, got, content, err)
		}
	}
}

// TestPluginSQLite stores a tool result of a session of OpenClaw's SQLite
// store (agent ops), found by its session key, and reads it back.
func TestPluginSQLite(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	const id, key = "5e550000-0000-4000-8000-00000000000a", "agent:ops:telegram:direct:42"
	row := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	content := `[{"type":"text","text":"` + strings.Repeat(`sqlite \u00e9\ud83d\ude00 `, 5000) + `"}]`
	r1 := fmt.Sprintf(`{"type":"message","id":"r1","parentId":"a1","timestamp":%q,"message":{"role":"toolResult","toolCallId":"call_s","toolName":"exec","content":%s,"isError":false,"timestamp":1767225605000}}`,
		plugTS(5), placeholderContent("tc-call_s", "head", "tail"))
	testcorpus.WriteStore(t, agents, "ops", testcorpus.StoreSession{ID: id, Key: key, Status: "done", Rows: []string{
		row(plugLine{"type": "session", "version": 3, "id": id, "timestamp": plugTS(0), "cwd": "/tmp"}),
		row(plugMsg("u1", "", 1, plugLine{"role": "user", "content": textContent("read it")})),
		row(assistantCall("a1", "u1", 2, "call_s")),
		r1,
	}})
	set, err := backend.Open(ctx, agents, backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	body := strings.Replace(sourceBody("", key, "call_s", content, ""), `"agent_id":"main"`, `"agent_id":"ops"`, 1)
	c.json("POST", "/api/plugin/v1/source", body, 200, nil)
	ref, err := set.Store.Resolve(ctx, key)
	if err != nil || ref.Backend != bs.BackendSQLite {
		t.Fatalf("resolve %s: %v %v", key, ref, err)
	}
	rec, err := extract.LoadRecord(ctx, set.Side, ref, "tc-call_s")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := extract.SourceContent(rec); err != nil || string(got) != content {
		t.Fatalf("stored content differs from the request's bytes: %v", err)
	}
	var a toolAnswer
	c.json("POST", "/api/plugin/v1/tool", `{"agent_id":"ops","session_key":"`+key+`","tool":"purge_control","params":{"action":"restore","key":"tc-call_s","max_chars":60000}}`, 200, &a)
	var want []struct{ Text string }
	_ = json.Unmarshal([]byte(content), &want)
	if !a.OK || a.text(t) != want[0].Text {
		t.Fatalf("restore tc-call_s: %+v", a.Error)
	}
	rep, err := restore.Verify(ctx, set.Store, set.Side, ref)
	if err != nil || !rep.OK() || rep.Verified != 1 || len(rep.Orphans) != 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}
