package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

type atClock struct{ t time.Time }

func (c atClock) Now() time.Time { return c.t }

// hostRequest is the assemble request the plugin would send for the
// session's transcript at path: every message line, in order, with its
// content's length.
func hostRequest(tb testing.TB, path string) (engine.Request, []string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var req engine.Request
	var ids []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var l struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Message *struct {
				Role       string          `json:"role"`
				Timestamp  int64           `json:"timestamp"`
				ToolCallID string          `json:"toolCallId"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "message" || l.Message == nil {
			continue
		}
		m := engine.Message{Role: l.Message.Role, Timestamp: l.Message.Timestamp, ToolCallID: l.Message.ToolCallID, Chars: len(l.Message.Content)}
		var blocks []struct{ Type, ID string }
		if json.Unmarshal(l.Message.Content, &blocks) == nil {
			for _, bl := range blocks {
				if bl.Type == "toolCall" {
					m.ToolCallIDs = append(m.ToolCallIDs, bl.ID)
				}
			}
		}
		req.Messages = append(req.Messages, m)
		ids = append(ids, l.ID)
	}
	return req, ids
}

// holdLock holds the host's lock of the transcript at path with the pid
// of a live child process, as a running OpenClaw would; release ends it.
func holdLock(tb testing.TB, path string) (release func()) {
	tb.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	release = func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
		_ = os.Remove(path + ".lock")
	}
	tb.Cleanup(release)
	payload := fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": %q\n}", cmd.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(path+".lock", []byte(payload), 0o644); err != nil {
		tb.Fatal(err)
	}
	return release
}

// TestRestoreOneNotion replays the live finding of issue 32: the agent
// restores a value through the engine's view (nothing is written to the
// host's row); a prune pass within keep_after_restore_seconds leaves the
// entry alone (it extracted it before the restore log existed); after the
// window it extracts it; a second restore, through the side store while
// the session is busy (queued), answers the very blocks of the first,
// the value alone, with the notes in the details; and the next view shows
// the value in full although the row still holds the placeholder.
func TestRestoreOneNotion(t *testing.T) {
	ctx := context.Background()
	f := newPlugFixture(t)
	value := strings.Repeat("an ordinary tool result line\n", 300)
	cfg := pruneConfig()
	cfg.KeepRecent, cfg.TriggerTypes = 0, []string{"tool_result"}
	t0 := time.Now()
	engineAt := t0.Add(-11 * time.Minute) // the view's restore, 11 minutes ago
	eng := &engine.Engine{Store: f.set.Store, StateDir: f.set.StateDir, Side: f.set.Side, Policy: extract.FromConfig(cfg),
		Now: func() time.Time { return engineAt }}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Engine: eng})}
	ref := f.ref(t, plugSessA)

	// 1. The restore through the engine's view: the row's content.
	first := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	if !first.OK || first.Details["from"] != "transcript" || len(first.Content) != 1 || first.text(t) != value {
		t.Fatalf("restore through the view: %+v", first.Details)
	}
	if log, _ := eng.Restores(ctx, ref); !log["r0"].Equal(engineAt) {
		t.Fatalf("the engine did not record its restore: %v", log)
	}

	// 2. A prune pass within the window leaves the entry alone; without
	// the log it would have extracted it.
	pass := func(at time.Time, log bs.RestoreLog, dry bool) *prune.SessionReport {
		t.Helper()
		p := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil)
		p.Clock, p.Restores, p.DryRun = atClock{at}, log, dry
		rep, err := p.Run(ctx, []bs.SessionRef{ref})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Session(ref)
	}
	if sr := pass(engineAt.Add(time.Minute), nil, true); sr.Status != prune.StatusWouldExtract {
		t.Fatalf("without the log the pass would not extract r0: %s %s", sr.Status, sr.Note)
	}
	if sr := pass(engineAt.Add(time.Minute), eng, false); sr.Status == prune.StatusExtracted || sr.Result.Counts[extract.CodeRestoreProtected] != 1 {
		t.Fatalf("a pass within the window: %s, decisions %v; want r0 restore-protected", sr.Status, sr.Result.Counts)
	}
	if b, _ := os.ReadFile(f.path(plugSessA)); bytes.Contains(b, []byte("[[extracted-r0]]")) {
		t.Fatal("r0 was extracted within its protection window")
	}
	// After the window it goes.
	if sr := pass(t0, eng, false); sr.Status != prune.StatusExtracted {
		t.Fatalf("a pass after the window: %s %s", sr.Status, sr.Note)
	}
	if b, _ := os.ReadFile(f.path(plugSessA)); !bytes.Contains(b, []byte("[[extracted-r0]]")) {
		t.Fatal("r0 was not extracted after its protection window")
	}

	// 3. A second restore, the session busy: queued, the same blocks.
	defer holdLock(t, f.path(plugSessA))()
	engineAt = time.Now()
	second := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	if !second.OK || second.Details["queued"] != true || second.Details["from"] != "side_store" {
		t.Fatalf("second restore: %+v", second.Details)
	}
	if len(second.Content) != len(first.Content) || !bytes.Equal(second.Content[0], first.Content[0]) {
		t.Fatalf("the second restore answers other blocks than the first:\n%.200s\n%.200s", second.Content, first.Content)
	}
	if second.text(t) != value {
		t.Errorf("the answer is not the value alone: %q", second.text(t)[max(len(second.text(t))-120, 0):])
	}
	if note, _ := second.Details["note"].(string); !strings.Contains(note, "Queued: will be written back when the session is idle.") {
		t.Errorf("note %q", note)
	}
	third := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0"}`)
	if !third.OK || len(third.Content) != 1 || !bytes.Equal(third.Content[0], first.Content[0]) {
		t.Errorf("a third restore answers other blocks: %.200s", third.Content)
	}

	// 4. The next view shows the value in full; the row holds the
	// placeholder.
	req, ids := hostRequest(t, f.path(plugSessA))
	v, err := eng.Assemble(ctx, ref, req)
	if err != nil {
		t.Fatal(err)
	}
	var shown json.RawMessage
	for _, r := range v.Replace {
		if ids[r.Index] == "r0" {
			shown = r.Content
		}
	}
	want, _ := json.Marshal(textContent(value))
	if !bytes.Equal(shown, want) {
		t.Fatalf("the view shows r0 as\n%.200s\nwant the value\n%.200s", shown, want)
	}
	if b, _ := os.ReadFile(f.path(plugSessA)); !bytes.Contains(b, []byte("[[extracted-r0]]")) {
		t.Error("the busy session's row changed")
	}
}

// TestRestoreAnswerIsTheValue checks the answers of purge_control restore
// through the side store: the first blocks are exactly the values (the
// content blocks of a tool result restored whole, else one block per
// value), a warning comes after them in a block of its own, and the notes
// are in the details, never inside a value's text.
func TestRestoreAnswerIsTheValue(t *testing.T) {
	f := newPlugFixture(t)
	thinking := strings.Repeat("let me think about the logs. ", 40)
	one, two := strings.Repeat("first block line\n", 60), strings.Repeat("second block line\n", 60)
	appendLines(t, f.path(plugSessA),
		plugMsg("a5", "a1", 5, plugLine{"role": "assistant", "content": []any{map[string]any{"type": "thinking", "thinking": thinking, "thinkingSignature": "sig"},
			map[string]any{"type": "toolCall", "id": "call_5", "name": "exec", "arguments": map[string]any{"command": "ls"}}},
			"provider": "test", "model": "test", "stopReason": "toolUse", "usage": map[string]any{"input": 10, "output": 10, "totalTokens": 20}}),
		plugMsg("r5", "a5", 6, plugLine{"role": "toolResult", "toolCallId": "call_5", "toolName": "exec",
			"content": []any{map[string]any{"type": "text", "text": one}, map[string]any{"type": "text", "text": two}}, "isError": false}),
		plugMsg("u6", "r5", 7, plugLine{"role": "user", "content": textContent("thanks")}))
	cfg := pruneConfig()
	cfg.KeepRecent = 0
	if rep, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil).Run(context.Background(), nil); err != nil || rep.Written == 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	defer holdLock(t, f.path(plugSessA))() // every write-back is queued: the row keeps its placeholders
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	block := func(s string) string {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return string(b)
	}
	for _, tt := range []struct {
		name, params string
		want         []string // the blocks' texts, in order
		warning      bool     // a last block holds a warning
	}{
		{"a thinking value", `{"action":"restore","key":"a5"}`, []string{thinking}, false},
		{"one block of two", `{"action":"restore","key":"r5","keys":"content/1/text"}`, []string{two}, false},
		{"the whole content", `{"action":"restore","key":"r5"}`, []string{one, two}, false},
		{"a key that matches nothing", `{"action":"restore","key":"r5","keys":["content/0/text","content/9/text"]}`, []string{one}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := callTool(t, c, plugSessA, "purge_control", tt.params)
			if !a.OK {
				t.Fatalf("restore: %s", a.Error)
			}
			n := len(tt.want)
			if tt.warning {
				n++
			}
			if len(a.Content) != n {
				t.Fatalf("%d blocks, want %d: %.300s", len(a.Content), n, a.Content)
			}
			for i, w := range tt.want {
				var got struct{ Type, Text string }
				json.Unmarshal(a.Content[i], &got)
				if got.Type != "text" || got.Text != w {
					t.Errorf("block %d: %.120q, want exactly the value %.60q…", i, got.Text, w)
				}
			}
			if tt.name == "the whole content" {
				for i, w := range tt.want {
					if string(a.Content[i]) != block(w) {
						t.Errorf("block %d is not the stored block: %.120s", i, a.Content[i])
					}
				}
			}
			if tt.warning {
				last := a.text(t)[len(strings.Join(tt.want, "")):]
				if !strings.Contains(last, "warning") || !strings.Contains(last, "content/9/text") {
					t.Errorf("last block %q, want the warning", last)
				}
			}
			note, _ := a.Details["note"].(string)
			if !strings.Contains(note, "Queued") || a.Details["queued"] != true {
				t.Errorf("details %v: want the note that the write-back is queued", a.Details)
			}
		})
	}
}

// TestRestorePagesFromSideStore checks that a long tool result restored
// through the side store comes a page at a time, as from the engine's view:
// the pages concatenate to the value, and only the first page's call
// writes.
func TestRestorePagesFromSideStore(t *testing.T) {
	f := newPlugFixture(t)
	text := bigText(40_000, "NEEDLE-paged")
	appendLines(t, f.path(plugSessA),
		plugMsg("r7", "a1", 5, plugLine{"role": "toolResult", "toolCallId": "call_1", "toolName": "exec", "content": textContent(text), "isError": false}),
		plugMsg("u7", "r7", 6, plugLine{"role": "user", "content": textContent("thanks")}))
	cfg := pruneConfig()
	cfg.KeepRecent = 0
	if rep, err := prune.New(f.set.Store, f.set.Side, f.set.StateDir, cfg, nil).Run(context.Background(), nil); err != nil || rep.Written == 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	var got strings.Builder
	offset := 0
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("more than 10 pages")
		}
		a := callTool(t, c, plugSessA, "purge_control", fmt.Sprintf(`{"action":"restore","key":"r7","offset":%d}`, offset))
		if !a.OK || len(a.Content) != 2 || a.Details["from"] != "side_store" {
			t.Fatalf("page at %d: %+v", offset, a)
		}
		if note, _ := a.Details["note"].(string); (page == 0) != strings.Contains(note, "Written back now.") {
			t.Errorf("page %d: note %q", page, note)
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
		t.Errorf("pages concatenate to %d characters, want the %d of the value", len([]rune(got.String())), len([]rune(text)))
	}
}

// memLog is a restore log in memory.
type memLog struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (l *memLog) RecordRestore(_ context.Context, _ bs.SessionRef, entryID string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[entryID] = at
	return nil
}

func (l *memLog) Restores(context.Context, bs.SessionRef) (map[string]time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.m), nil
}

// TestSourceRestoreRecordsWholeOnly records a restore of a tool result
// stored at the source in the restore log (the view then shows it in full)
// when the agent gets it whole, and not when it pages through it: asking
// for one page never brings the whole value into the context.
func TestSourceRestoreRecordsWholeOnly(t *testing.T) {
	f := newPlugFixture(t)
	log := &memLog{m: map[string]time.Time{}}
	r := restore.New(f.set.Store, f.set.Side, f.set.StateDir)
	r.Restores = log
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Restorer: r})}
	big := `[{"type":"text","text":` + escapedJSON(bigText(60_000, "NEEDLE")) + `}]`
	small := `[{"type":"text","text":"a small result"}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, plugKeyA, "call_big", big, ""), 200, nil)
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, plugKeyA, "call_small", small, ""), 200, nil)
	for _, p := range []string{`{"action":"restore","key":"tc-call_big"}`, `{"action":"restore","key":"tc-call_big","offset":15000}`, `{"action":"restore","key":"tc-call_small"}`} {
		if a := callTool(t, c, plugSessA, "purge_control", p); !a.OK {
			t.Fatalf("%s: %+v", p, a)
		}
	}
	got, _ := log.Restores(context.Background(), bs.SessionRef{})
	if _, ok := got["tc-call_big"]; ok {
		t.Error("paging through a result recorded it as restored whole")
	}
	if _, ok := got["tc-call_small"]; !ok {
		t.Error("a result restored whole was not recorded")
	}
}
