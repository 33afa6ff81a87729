package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

const sessionID = "5d3c0a9e-1b2c-4d5e-8f90-a1b2c3d4e5f6"

// resultText is the tool output that gets extracted.
var resultText = strings.Repeat("line of tool output with \"quotes\", tabs\tand ünïcödé\n", 40)

// fixture is a synthetic agents dir with one session of agent main (key
// agent:main:direct:123) whose tool result r1 has been extracted.
type fixture struct {
	agents, path string
	ref          bs.SessionRef
	orig         []byte
}

func newFixture(t *testing.T, idleSeconds int) *fixture {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, sessionID+".jsonl")
	store := fmt.Sprintf(`{"agent:main:direct:123":{"sessionId":%q,"updatedAt":1771500000000,"status":"done","chatType":"direct"}}`, sessionID)
	if err := os.WriteFile(filepath.Join(dir, "sessions.json"), []byte(store), 0o600); err != nil {
		t.Fatal(err)
	}
	asst := func(content string) string {
		return `{"role":"assistant","content":[` + content + `],"api":"openai-completions","provider":"x","model":"m","usage":{"input":10,"output":5},"stopReason":"toolUse","timestamp":1771500000000}`
	}
	result := func(callID, text string) string {
		b, _ := json.Marshal(text)
		return fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":%s}],"isError":false,"timestamp":1771500000000}`, callID, b)
	}
	msgs := []struct{ id, body string }{
		{"u1", `{"role":"user","content":[{"type":"text","text":"list the files"}],"timestamp":1771500000000}`},
		{"a1", asst(`{"type":"toolCall","id":"call_1","name":"exec","arguments":{"command":"ls -l"}}`)},
		{"r1", result("call_1", resultText)},
		{"u2", `{"role":"user","content":[{"type":"text","text":"what was in that listing?"}],"timestamp":1771500000000}`},
		{"a2", asst(`{"type":"toolCall","id":"call_2","name":"exec","arguments":{"command":"purge_control restore r1 --agent main --session direct:123"}}`)},
		{"r2", result("call_2", "(running)")},
	}
	var b strings.Builder
	b.WriteString(fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`+"\n", sessionID))
	parent := "null"
	for i, m := range msgs {
		ts := time.Date(2026, 2, 18, 9, i+1, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000Z")
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":%s}`+"\n", m.id, parent, ts, m.body)
		parent = fmt.Sprintf("%q", m.id)
	}
	orig := []byte(b.String())
	if err := os.WriteFile(path, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.IdleSeconds = idleSeconds
	if err := config.Save(agents, c); err != nil {
		t.Fatal(err)
	}
	f := &fixture{agents: agents, path: path, ref: bs.SessionRef{Agent: "main", ID: sessionID, Path: path}, orig: orig}
	f.extract(t)
	return f
}

// extract extracts every tool result of 500+ bytes.
func (f *fixture) extract(t *testing.T) {
	t.Helper()
	x := &extract.Extractor{
		Policy: extract.Policy{Enabled: true, KeepRecent: 0, MinValueLength: 500, Triggers: []bs.TriggerType{bs.TriggerToolResult}},
		Store:  sidetest.Store(""), Side: sidedir.New(sidetest.Store("")),
	}
	res, err := x.Run(context.Background(), f.ref)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Written || res.Entries != 1 || res.Details[0].ID != "r1" {
		t.Fatalf("extraction: %+v", res)
	}
}

func (f *fixture) line(t *testing.T, id string) []byte {
	t.Helper()
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		if e := r.Entry(); e.Kind == bs.KindEntry && e.ID == id {
			return bytes.Clone(r.Raw())
		}
	}
	t.Fatalf("no entry %s", id)
	return nil
}

func value(t *testing.T, line []byte, ptr string) string {
	t.Helper()
	s, e, ok := jsonedit.Find(line, ptr)
	if !ok {
		t.Fatalf("no %s in %.300s", ptr, line)
	}
	return string(line[s:e])
}

func (f *fixture) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if len(args) > 0 {
		args = append(args, "--agents-dir", f.agents)
	}
	code := (&Main{Stdout: &out, Stderr: &errb}).Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func want(t *testing.T, code, wantCode int, out, errs string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errs)
	}
}

func TestPurgeControlGetContext(t *testing.T) {
	f := newFixture(t, 0)
	code, out, errs := f.run(t, "get_context", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	size := len(resultText) + strings.Count(resultText, "\"") + strings.Count(resultText, "\t") + strings.Count(resultText, "\n") + 2
	for _, w := range []string{
		"Session main/" + sessionID + " (agent:main:direct:123)",
		"6 entries, 6 messages in the model context",
		"1 entry holds placeholders",
		fmt.Sprintf("entry r1: content/0/text (%d bytes) extracted ", size),
	} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	code, out, errs = f.run(t, "get_context", "--json", "--session", sessionID, "--agent", "main")
	want(t, code, 0, out, errs)
	var cx restore.Context
	if err := json.Unmarshal([]byte(out), &cx); err != nil || len(cx.Extracted) != 1 || cx.Extracted[0].EntryID != "r1" ||
		cx.Extracted[0].Keys[0] != "/message/content/0/text" || cx.Extracted[0].Placeholders != 1 {
		t.Fatalf("%v: %s", err, out)
	}
}

// TestPurgeControlRestore: the content comes back at once and byte-exact,
// the value is written back, and the exec call that ran purge_control is
// redacted. A second restore after re-extraction carries the suggestion.
func TestPurgeControlRestore(t *testing.T) {
	f := newFixture(t, 0)
	origR1 := value(t, f.lineOf(t, f.orig, "r1"), "/message/content/0/text")
	code, out, errs := f.run(t, "restore", "r1", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if !strings.HasPrefix(out, resultText+"\n") {
		t.Fatalf("content not byte-exact:\n%.400q", out)
	}
	status := fmt.Sprintf("Restored keys: content/0/text (%d bytes). Written back now.\n", len(origR1))
	if !strings.HasSuffix(out, status) || errs != "" {
		t.Fatalf("stdout tail %q, stderr %q", out[len(out)-min(len(out), 200):], errs)
	}
	r1 := f.line(t, "r1")
	if value(t, r1, "/message/content/0/text") != origR1 || !strings.Contains(string(r1), `"_restored":"`) {
		t.Fatalf("not written back: %.300s", r1)
	}
	a2 := f.line(t, "a2")
	if value(t, a2, "/message/content/0/arguments") != `{"redacted":"purge_control restore r1"}` || value(t, a2, "/message/content/0/_redacted") != "true" {
		t.Fatalf("call not redacted: %s", a2)
	}
	if r2 := f.line(t, "r2"); !strings.Contains(string(r2), "[redacted: purge_control restore r1]") {
		t.Fatalf("result not redacted: %s", r2)
	}

	// Restored again: the same content and a note, exit 0, nothing written.
	code, out, errs = f.run(t, "restore", "r1", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if !strings.HasPrefix(out, resultText+"\n") || !strings.Contains(out, "Already restored") {
		t.Fatalf("second restore: stdout %q", out[max(0, len(out)-300):])
	}
	if string(f.line(t, "r1")) != string(r1) {
		t.Fatalf("second restore wrote: %.300s", f.line(t, "r1"))
	}

	// Extracted again, restored again: the suggestion.
	f.extract(t)
	code, out, errs = f.run(t, "--session", "direct:123", "restore", "--keys", "text", "--agent", "main", "r1", "--json")
	want(t, code, 0, out, errs)
	var res restore.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Restored || res.Content["/message/content/0/text"] != resultText ||
		res.PreviousRestoredAt == "" || res.Suggestion == "" || !res.Applied {
		t.Fatalf("%v: %+v", err, res)
	}
}

func (f *fixture) lineOf(t *testing.T, data []byte, id string) []byte {
	t.Helper()
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		if e := r.Entry(); e.Kind == bs.KindEntry && e.ID == id {
			return bytes.Clone(r.Raw())
		}
	}
	t.Fatalf("no entry %s", id)
	return nil
}

// TestPurgeControlQueued: while the session is in use the content is
// returned and the write-back queued; the suggestion follows a second
// request.
func TestPurgeControlQueued(t *testing.T) {
	f := newFixture(t, 300) // just written: not idle
	before, _ := os.ReadFile(f.path)
	code, out, errs := f.run(t, "restore", "r1", "--agent", "main", "--session", "direct:123", "--tool-call-id", "call_2")
	want(t, code, 0, out, errs)
	if !strings.HasPrefix(out, resultText) || !strings.Contains(out, "Queued: will be written back when the session is idle.") {
		t.Fatalf("stdout %q", out)
	}
	if after, _ := os.ReadFile(f.path); !bytes.Equal(before, after) {
		t.Fatal("a busy session was written")
	}
	_, out, _ = f.run(t, "restore", "r1", "--agent", "main", "--session", "direct:123")
	if !strings.Contains(out, "Previously restored at ") || !strings.Contains(out, "_extractable: false") {
		t.Fatalf("no suggestion: %q", out)
	}
	code, out, errs = f.run(t, "set_extractable", "r1", "false", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if !strings.Contains(out, "Queued: will be written when the session is idle.") {
		t.Fatalf("stdout %q", out)
	}
	code, out, errs = f.run(t, "get_context", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if !strings.Contains(out, "3 write-backs waiting for the session to be idle") {
		t.Fatalf("stdout %q", out)
	}
}

func TestPurgeControlSetExtractable(t *testing.T) {
	f := newFixture(t, 0)
	code, out, errs := f.run(t, "set_extractable", "r1", "false", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if out != "Entry r1: _extractable set to false (was unset): it will never be extracted. Written now.\n" {
		t.Fatalf("stdout %q", out)
	}
	if value(t, f.line(t, "r1"), "/_extractable") != "false" {
		t.Fatal("not set")
	}
	code, out, errs = f.run(t, "set_extractable", "u2", "10", "--agent", "main", "--session", "main/"+sessionID, "--json")
	want(t, code, 0, out, errs)
	var res struct {
		restore.SetResult
		Value any `json:"value"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.EntryID != "u2" || res.Value != 10.0 || !res.Applied || !res.Changed {
		t.Fatalf("%v: %s", err, out)
	}
	if value(t, f.line(t, "u2"), "/_extractable") != "10" {
		t.Fatal("not set")
	}
	_, out, _ = f.run(t, "set_extractable", "u2", "10", "--agent", "main", "--session", "direct:123")
	if !strings.Contains(out, "already 10") {
		t.Fatalf("stdout %q", out)
	}
}

// TestPurgeControlSession: the ways a session is named, and the errors
// naming what exists.
func TestPurgeControlSession(t *testing.T) {
	f := newFixture(t, 0)
	for _, s := range []string{"direct:123", sessionID, sessionID[:8], "agent:main:direct:123", "main/" + sessionID} {
		code, out, errs := f.run(t, "get_context", "--agent", "main", "--session", s)
		if code != 0 || !strings.Contains(out, sessionID) {
			t.Errorf("--session %s: exit %d\n%s%s", s, code, out, errs)
		}
	}
	code, out, errs := f.run(t, "get_context", "--session", "direct:123")
	if code != 0 || !strings.Contains(out, sessionID) {
		t.Errorf("without --agent: exit %d\n%s%s", code, out, errs)
	}
	for _, tt := range []struct {
		name  string
		agent string
		sess  string
		err   []string
	}{
		{"UnknownAgent", "other", "direct:123", []string{`agent "other"`, "agents: main"}},
		{"UnknownSession", "main", "direct:999", []string{"direct:999", sessionID, "agent:main:direct:123"}},
	} {
		code, out, errs := f.run(t, "get_context", "--agent", tt.agent, "--session", tt.sess)
		if code != 1 {
			t.Errorf("%s: exit %d\n%s%s", tt.name, code, out, errs)
		}
		for _, w := range tt.err {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr lacks %q: %s", tt.name, w, errs)
			}
		}
	}
}

func TestPurgeControlUsage(t *testing.T) {
	f := newFixture(t, 0)
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  []string
		err  []string
	}{
		{"Help", []string{"--help"}, 0, []string{"purge_control restore msg-abc123 --agent crix-claub --session direct:123",
			"purge_control set_extractable msg-abc123 10 --agent crix-claub --session direct:123", "Examples:"}, nil},
		{"HelpRestore", []string{"restore", "--help"}, 0, []string{"Usage: purge_control restore", "--tool-call-id", "Examples:"}, nil},
		{"HelpGetContext", []string{"help", "get_context"}, 0, []string{"Usage: purge_control get_context"}, nil},
		{"HelpSet", []string{"set_extractable", "-h"}, 0, []string{"true|false|N", "never extract"}, nil},
		{"NoArgs", nil, 2, nil, []string{"Usage:"}},
		{"UnknownCommand", []string{"purge"}, 2, nil, []string{`unknown command "purge"`}},
		{"NoSession", []string{"get_context", "--agent", "main"}, 2, nil, []string{"--session is required"}},
		{"ContextArgs", []string{"get_context", "x", "--session", "direct:123"}, 2, nil, []string{"no arguments"}},
		{"RestoreNoEntry", []string{"restore", "--session", "direct:123"}, 2, nil, []string{"one entry id"}},
		{"SetNoValue", []string{"set_extractable", "r1", "--session", "direct:123"}, 2, nil, []string{"true, false or a number"}},
		{"SetBadValue", []string{"set_extractable", "r1", "sometimes", "--session", "direct:123"}, 2, nil, []string{"sometimes"}},
		{"BadFlag", []string{"restore", "r1", "--session", "direct:123", "--force"}, 2, nil, []string{"force"}},
		{"UnknownEntry", []string{"restore", "zz9", "--session", "direct:123"}, 1, nil, []string{`entry "zz9" not found`, "ids look like"}},
		{"UnknownKey", []string{"restore", "r1", "--keys", "thinking", "--session", "direct:123"}, 1, nil, []string{"thinking", "/message/content/0/text"}},
		{"BadEntry", []string{"restore", "../x", "--session", "direct:123"}, 1, nil, []string{"not allowed"}},
		{"NotExtracted", []string{"restore", "u1", "--session", "direct:123"}, 1, nil, []string{"nothing to restore"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := f.run(t, tt.args...)
			want(t, code, tt.code, out, errs)
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.err {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}
