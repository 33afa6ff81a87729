package engine_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// epoch is when the synthetic sessions start; clock is the engine's time,
// a day and a half later.
var (
	epoch = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock = epoch.Add(36 * time.Hour)
)

// tsess is a synthetic OpenClaw-shaped session: one line per entry, on
// one branch, with message timestamps in milliseconds and recorded usage
// on the assistant messages.
type tsess struct {
	t      testing.TB
	path   string
	lines  []string
	ids    []string // the entry id of each line (the header's is "")
	n      int
	parent string
	at     time.Time
}

// newSession makes an empty session (its header) in a fresh agents dir.
func newSession(t testing.TB) *tsess {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "5e551011-0000-4000-8000-000000000001"
	s := &tsess{t: t, path: filepath.Join(dir, id+".jsonl"), at: epoch}
	s.lines = append(s.lines, fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":%q,"cwd":"/w"}`, id, bs.FormatTimestamp(epoch)))
	s.ids = append(s.ids, "")
	return s
}

// add appends a message entry with the given message members (without
// timestamp) and returns its id.
func (s *tsess) add(members string) string {
	s.n++
	id := fmt.Sprintf("%08x", uint32(s.n)*2654435761)
	parent := "null"
	if s.parent != "" {
		parent = fmt.Sprintf("%q", s.parent)
	}
	s.lines = append(s.lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{%s,"timestamp":%d}}`,
		id, parent, bs.FormatTimestamp(s.at), members, s.at.UnixMilli()))
	s.ids = append(s.ids, id)
	s.parent = id
	s.at = s.at.Add(time.Second)
	return id
}

// text returns a JSON string of n bytes of text with escapes and
// non-ASCII characters.
func text(n, seed int) string {
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "line %d of the output: café ✓ \"quoted\" \\ tab\t🚀\n", seed)
		seed++
	}
	q, _ := json.Marshal(b.String())
	return string(q)
}

// turn appends a tool turn: the user's request, the assistant's tool call
// (recording usage input), the tool's result of resultBytes (an image
// too when image is set) and the assistant's answer.
func (s *tsess) turn(k, resultBytes, usage int, image bool) {
	s.add(fmt.Sprintf(`"role":"user","content":[{"type":"text","text":"step %d"}]`, k))
	call := fmt.Sprintf("call_%d", k)
	s.add(fmt.Sprintf(`"role":"assistant","content":[{"type":"thinking","thinking":%s},{"type":"toolCall","id":%q,"name":"exec","arguments":{"command":"ls"}}],"provider":"anthropic","model":"m","usage":{"input":%d,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"toolUse"`,
		text(700, k), call, usage, usage+10))
	img := ""
	if image {
		img = fmt.Sprintf(`,{"type":"image","data":%q,"mimeType":"image/png"}`, base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{byte(k)}, 3000)))
	}
	s.add(fmt.Sprintf(`"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":%s}%s],"details":{"exitCode":0},"isError":false`,
		call, text(resultBytes, k*7), img))
	s.add(fmt.Sprintf(`"role":"assistant","content":[{"type":"text","text":"done %d"}],"provider":"anthropic","model":"m","usage":{"input":%d,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop"`,
		k, usage+500, usage+505))
}

// write writes the session's file.
func (s *tsess) write() {
	s.t.Helper()
	if err := os.WriteFile(s.path, []byte(strings.Join(s.lines, "\n")+"\n"), 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// open returns a JSONL store over the session's agents dir and its ref.
func openStore(t testing.TB, path string) (*session.Store, bs.SessionRef) {
	t.Helper()
	agents := filepath.Dir(filepath.Dir(filepath.Dir(path)))
	st := session.NewStore(agents)
	st.Writer.Quiet = 0
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return st, ref
}

// hostMsg is one message the host would hand the engine: its skeleton and
// the entry it came from.
type hostMsg struct {
	engine.Message
	id      string
	content []byte // the stored content, raw
}

// skeleton builds the host's messages from a transcript's lines as the
// plugin does (chars: the length of JSON.stringify(content)), taking
// every message entry in file order (the sessions here have one branch).
func skeleton(t testing.TB, path string) []hostMsg {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []hostMsg
	for _, line := range bytes.Split(b, []byte("\n")) {
		var j struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Message *struct {
				Role       string          `json:"role"`
				Timestamp  int64           `json:"timestamp"`
				ToolCallID string          `json:"toolCallId"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &j) != nil || j.Type != "message" || j.Message == nil {
			continue
		}
		m := hostMsg{id: j.ID, content: j.Message.Content}
		m.Role, m.Timestamp, m.ToolCallID = j.Message.Role, j.Message.Timestamp, j.Message.ToolCallID
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(j.Message.Content, &blocks) == nil {
			for _, bl := range blocks {
				if bl.Type == "toolCall" {
					m.ToolCallIDs = append(m.ToolCallIDs, bl.ID)
				}
			}
		}
		m.Chars = jsChars(j.Message.Content)
		out = append(out, m)
	}
	return out
}

// jsChars is the length of JSON.stringify of a JSON value: its compact
// encoding in UTF-16 code units (escapes aside).
func jsChars(raw []byte) int {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return len(raw)
	}
	return len(utf16.Encode([]rune(buf.String())))
}

// request builds an assemble request of the host messages.
func request(msgs []hostMsg, budget int) engine.Request {
	r := engine.Request{TokenBudget: budget, PromptChars: 40}
	for _, m := range msgs {
		r.Messages = append(r.Messages, m.Message)
	}
	return r
}

// testPolicy collapses thinking, tool results and images of 500 bytes or
// more outside the newest 3 messages, with no age threshold and no
// minimum saving.
func testPolicy() extract.Policy {
	return extract.Policy{Enabled: true, KeepRecent: 3, MinValueLength: 500,
		Triggers:         []bs.TriggerType{bs.TriggerThinking, bs.TriggerToolResult, bs.TriggerImage},
		KeepAfterRestore: 10 * time.Minute}
}

// newEngine returns an engine over st whose state lives in a fresh
// directory.
func newEngine(t testing.TB, st bs.Store, p extract.Policy) *engine.Engine {
	t.Helper()
	return &engine.Engine{Store: st, StateDir: t.TempDir(), Policy: p, Settings: compact.DefaultSettings(), Now: func() time.Time { return clock }}
}

// contentOf returns "/message/content" of the line of entry id in the
// file at path.
func contentOf(t testing.TB, path, id string) []byte {
	t.Helper()
	for _, m := range skeleton(t, path) {
		if m.id == id {
			return m.content
		}
	}
	t.Fatalf("entry %s not in %s", id, path)
	return nil
}
