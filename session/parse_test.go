package session_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

func TestParseEntry(t *testing.T) {
	ts := time.Date(2026, 7, 1, 9, 0, 3, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		line    string
		kind    bs.LineKind
		typ, id string
		parent  string
		role    string
		time    time.Time
		blocks  []string
	}{
		{name: "Header", line: `{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T09:00:03.000Z","cwd":"/w"}`,
			kind: bs.KindHeader, typ: "session", id: "s1", time: ts},
		{name: "Message", line: `{"type":"message","id":"e5f60718","parentId":"d4e5f607","timestamp":"2026-07-01T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Use exec.","thinkingSignature":"EuYB"},{"type":"toolCall","id":"toolu_01A","name":"exec","arguments":{"command":"ls"}}]}}`,
			kind: bs.KindEntry, typ: "message", id: "e5f60718", parent: "d4e5f607", role: "assistant", time: ts, blocks: []string{"thinking", "toolCall"}},
		{name: "DunderIDWins", line: `{"id":"b","__id":"a","type":"tool_result","output":"x"}`, kind: bs.KindEntry, typ: "tool_result", id: "a"},
		{name: "DunderIDFirst", line: `{"__id":"a","id":"b","type":"tool_result"}`, kind: bs.KindEntry, typ: "tool_result", id: "a"},
		{name: "EpochMillis", line: `{"type":"x","timestamp":1782896403000}`, kind: bs.KindEntry, typ: "x", time: ts},
		{name: "DunderTs", line: `{"type":"x","__ts":"2026-07-01T09:00:03Z"}`, kind: bs.KindEntry, typ: "x", time: ts},
		{name: "CreatedAt", line: `{"type":"x","message":{"created_at":1782896403000}}`, kind: bs.KindEntry, typ: "x", time: ts},
		{name: "TimeMillis", line: `{"type":"x","time":1782896403000}`, kind: bs.KindEntry, typ: "x", time: ts},
		{name: "TimestampBeatsTime", line: `{"time":1,"type":"x","timestamp":"2026-07-01T09:00:03Z"}`, kind: bs.KindEntry, typ: "x", time: ts},
		{name: "CustomMessageBlocks", line: `{"type":"custom_message","customType":"c","content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"id":"c1"}`,
			kind: bs.KindEntry, typ: "custom_message", id: "c1", blocks: []string{"text", "image"}},
		{name: "CRLF", line: "{\"type\":\"message\",\"id\":\"a1\"}\r", kind: bs.KindEntry, typ: "message", id: "a1"},
		{name: "LoneSurrogate", line: `{"type":"message","id":"a2","message":{"role":"user","content":"x\ud83d y"}}`, kind: bs.KindEntry, typ: "message", id: "a2", role: "user"},
		{name: "InvalidUTF8", line: "{\"type\":\"message\",\"id\":\"a3\",\"message\":{\"role\":\"user\",\"content\":\"\xff\xfe\"}}", kind: bs.KindEntry, typ: "message", id: "a3", role: "user"},
		{name: "DuplicateNames", line: `{"type":"a","type":"b","id":"d"}`, kind: bs.KindEntry, typ: "b", id: "d"},
		{name: "UnknownType", line: `{"type":"future_thing","id":"f1","parentId":null,"payload":{"deep":[1,2,{"x":"y"}]}}`, kind: bs.KindEntry, typ: "future_thing", id: "f1"},
		{name: "Blank", line: "", kind: bs.KindBlank},
		{name: "Spaces", line: " \t\r", kind: bs.KindBlank},
		{name: "Glued", line: `{"type":"message","id":"a"}{"type":"message","id":"b"}`, kind: bs.KindMalformed},
		{name: "GluedAfterSpace", line: `{"a":1} {"b":2}`, kind: bs.KindMalformed},
		{name: "Truncated", line: `{"type":"message","id":"a","message":{"role":"us`, kind: bs.KindMalformed},
		{name: "NotAnObject", line: `[1,2,3]`, kind: bs.KindMalformed},
		{name: "Garbage", line: `hello world`, kind: bs.KindMalformed},
		{name: "NUL", line: "{\"a\":1}\x00", kind: bs.KindMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.line)
			e := entry.Parse(raw, 7, 100)
			if e.Kind != tt.kind {
				t.Fatalf("kind = %v, want %v (err %v)", e.Kind, tt.kind, e.Err)
			}
			if !bytes.Equal(e.Raw, []byte(tt.line)) || e.Line != 7 || e.Offset != 100 {
				t.Fatalf("raw/line/offset not kept: %q %d %d", e.Raw, e.Line, e.Offset)
			}
			if tt.kind == bs.KindMalformed {
				if !errors.Is(e.Err, bs.ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", e.Err)
				}
				return
			}
			if e.Type != tt.typ || e.ID != tt.id || e.ParentID != tt.parent || e.Role != tt.role {
				t.Errorf("type/id/parent/role = %q/%q/%q/%q, want %q/%q/%q/%q", e.Type, e.ID, e.ParentID, e.Role, tt.typ, tt.id, tt.parent, tt.role)
			}
			if !e.Timestamp.Equal(tt.time) {
				t.Errorf("timestamp = %v, want %v", e.Timestamp, tt.time)
			}
			var blocks []string
			for _, b := range e.Blocks {
				blocks = append(blocks, b.Type)
				if raw[b.Start] != '{' || raw[b.End-1] != '}' {
					t.Errorf("block %d span %d:%d is not an object: %q", b.Index, b.Start, b.End, raw[b.Start:b.End])
				}
			}
			if strings.Join(blocks, ",") != strings.Join(tt.blocks, ",") {
				t.Errorf("blocks = %v, want %v", blocks, tt.blocks)
			}
			for _, v := range e.Strings {
				if raw[v.Start] != '"' || raw[v.End-1] != '"' {
					t.Errorf("string %s span %d:%d is not a JSON string: %q", v.Pointer, v.Start, v.End, raw[v.Start:v.End])
				}
			}
		})
	}
}

func TestParseEntryPointers(t *testing.T) {
	line := `{"type":"message","id":"m1","message":{"role":"toolResult","content":[{"type":"text","text":"out"}],"details":{"a/b":{"c~d":["x","y"]}}}}`
	e := entry.Parse([]byte(line), 1, 0)
	var got []string
	for _, v := range e.Strings {
		got = append(got, v.Pointer+"="+line[v.Start:v.End])
	}
	want := []string{`/type="message"`, `/id="m1"`, `/message/role="toolResult"`, `/message/content/0/type="text"`,
		`/message/content/0/text="out"`, `/message/details/a~1b/c~0d/0="x"`, `/message/details/a~1b/c~0d/1="y"`}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("strings:\n got %v\nwant %v", got, want)
	}
}

func TestReaderLines(t *testing.T) {
	for _, tt := range []struct {
		name  string
		in    string
		lines []string
		term  bool
	}{
		{"Empty", "", nil, true},
		{"OneTerminated", "a\n", []string{"a"}, true},
		{"OneUnterminated", "a", []string{"a"}, false},
		{"BlankLines", "a\n\n\nb\n", []string{"a", "", "", "b"}, true},
		{"CRLF", "a\r\nb\r\n", []string{"a\r", "b\r"}, true},
		{"OnlyNewline", "\n", []string{""}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := session.NewReader(strings.NewReader(tt.in))
			var got []string
			term := true
			var out []byte
			for r.Next() {
				got = append(got, string(r.Raw()))
				term = r.Terminated()
				out = append(out, r.Raw()...)
				if r.Terminated() {
					out = append(out, '\n')
				}
			}
			if r.Err() != nil {
				t.Fatal(r.Err())
			}
			if strings.Join(got, "|") != strings.Join(tt.lines, "|") || len(got) != len(tt.lines) {
				t.Fatalf("lines = %q, want %q", got, tt.lines)
			}
			if term != tt.term {
				t.Fatalf("terminated = %v, want %v", term, tt.term)
			}
			if string(out) != tt.in {
				t.Fatalf("round trip %q != %q", out, tt.in)
			}
		})
	}
}

// TestReaderHugeLine reads a single 50 MB line between two small ones.
func TestReaderHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("reads a 50 MB line; skipped with -short")
	}
	big := make([]byte, 0, 50<<20+64)
	big = append(big, `{"type":"message","id":"big","message":{"role":"toolResult","content":[{"type":"text","text":"`...)
	for len(big) < 50<<20 {
		big = append(big, "0123456789abcdef\\n"...)
	}
	big = append(big, `"}]}}`...)
	in := "{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n" + string(big) + "\n{\"type\":\"x\",\"id\":\"z\",\"parentId\":\"big\"}"
	// A strings.Reader can be measured ahead (ReaderAt + Seeker); the
	// wrapped one cannot and takes the growing-buffer path.
	for _, src := range []io.Reader{strings.NewReader(in), struct{ io.Reader }{strings.NewReader(in)}} {
		readHuge(t, src, len(big))
	}
	// A huge unterminated last line.
	readHuge(t, strings.NewReader("{}\n"+string(big)+"\n{}\n"+string(big)), len(big))
}

func readHuge(t *testing.T, src io.Reader, bigLen int) {
	t.Helper()
	r := session.NewReader(src)
	var sizes []int
	for r.Next() {
		sizes = append(sizes, len(r.Raw()))
		if r.Line() == 2 || r.Line() == 4 {
			e := r.Entry()
			if e.Kind != bs.KindEntry || e.ID != "big" || len(e.Strings) == 0 {
				t.Fatalf("big line parsed as %v %q (%v)", e.Kind, e.ID, e.Err)
			}
			c := entry.Classify(e)
			if len(c) != 1 || c[0].Trigger != bs.TriggerToolResult || c[0].Len() < 50<<20-200 {
				t.Fatalf("classify big line: %+v", c)
			}
		}
	}
	if len(sizes) < 3 || sizes[1] != bigLen || (len(sizes) == 4 && sizes[3] != bigLen) {
		t.Fatalf("sizes = %v, want [_, %d, _ …]", sizes, bigLen)
	}
}

const treeSample = `{"type":"session","version":3,"id":"s","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}
{"type":"model_change","id":"a","parentId":null,"timestamp":"2026-07-01T09:00:00.010Z","provider":"p","modelId":"m"}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-07-01T09:00:01Z","message":{"role":"user","content":"hi"}}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-07-01T09:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"x"}]}}
not json at all
{"type":"message","id":"d","parentId":"b","timestamp":"2026-07-01T09:00:03Z","message":{"role":"assistant","content":[{"type":"text","text":"y"}]}}

{"type":"compaction","id":"e","parentId":"d","timestamp":"2026-07-01T09:00:04Z","summary":"s","firstKeptEntryId":"d","tokensBefore":10}
{"type":"custom_message","customType":"openclaw.runtime-context","content":"ctx","display":false,"id":"f","parentId":"e","timestamp":"2026-07-01T09:00:05Z"}
{"type":"custom","customType":"model-snapshot","data":{},"id":"g","parentId":"f","timestamp":"2026-07-01T09:00:06Z"}
{"type":"message","id":"h","parentId":"g","timestamp":"2026-07-01T09:00:07Z","message":{"role":"user","content":"go"}}
`

func TestTranscriptTree(t *testing.T) {
	tr, err := session.ReadIndex(context.Background(), strings.NewReader(treeSample), "")
	if err != nil {
		t.Fatal(err)
	}
	if h := tr.Header(); h.Version != 3 || h.ID != "s" || h.Cwd != "/w" || h.Line != 1 {
		t.Fatalf("header = %+v", h)
	}
	leaf, ok := tr.Leaf()
	if !ok || leaf.ID != "h" {
		t.Fatalf("leaf = %+v", leaf)
	}
	if got := tr.EntryCount(); got != 8 {
		t.Fatalf("entries = %d, want 8", got)
	}
	if got := tr.BranchPoints(); got != 1 {
		t.Fatalf("branch points = %d, want 1", got)
	}
	if m := tr.Malformed(); len(m) != 1 || m[0].Line != 5 {
		t.Fatalf("malformed = %v", m)
	}
	var path []string
	for _, i := range tr.ActivePath() {
		path = append(path, tr.Nodes()[i].ID)
	}
	if strings.Join(path, "") != "abdefgh" {
		t.Fatalf("active path = %v", path)
	}
	c := tr.Context()
	var msgs []string
	for _, i := range c.Messages {
		msgs = append(msgs, tr.Nodes()[i].ID)
	}
	if strings.Join(msgs, "") != "dfh" || c.Count() != 4 || tr.Nodes()[c.Compaction].ID != "e" || tr.Nodes()[c.FirstKept].ID != "d" {
		t.Fatalf("context = %v (count %d)", msgs, c.Count())
	}
	pos := tr.MessagePositions()
	// h=0, f=1, d=2, b=3; c is off the active path.
	for line, want := range map[int]int{11: 0, 9: 1, 6: 2, 3: 3} {
		if got, ok := pos[line]; !ok || got != want {
			t.Errorf("position of line %d = %d,%v, want %d", line, got, ok, want)
		}
	}
	if _, ok := pos[4]; ok {
		t.Errorf("line 4 is off the active path but has a position")
	}
}

func TestTranscriptLeafControl(t *testing.T) {
	in := `{"type":"session","version":3,"id":"s"}
{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"1"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[]}}
{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"2"}}
{"type":"leaf","id":"l1","parentId":"c","targetId":"b"}
{"type":"custom","customType":"x","id":"s1","parentId":"l1","appendMode":"side"}
`
	tr, err := session.ReadIndex(context.Background(), strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if leaf, _ := tr.Leaf(); leaf.ID != "b" {
		t.Fatalf("leaf = %q, want b (target of the leaf line; side appends do not move it)", leaf.ID)
	}
}

func TestTranscriptV1(t *testing.T) {
	in := `{"type":"session","id":"s","timestamp":"2025-11-20T23:33:50.805Z","cwd":"/w"}
{"type":"message","timestamp":"2025-11-20T23:33:51Z","message":{"role":"user","content":[{"type":"text","text":"a"}]}}
{"type":"message","timestamp":"2025-11-20T23:33:52Z","message":{"role":"assistant","content":[{"type":"text","text":"b"}]}}
{"type":"compaction","timestamp":"2025-11-20T23:33:53Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":1}
{"type":"message","timestamp":"2025-11-20T23:33:54Z","message":{"role":"user","content":[{"type":"text","text":"c"}]}}
`
	tr, err := session.ReadIndex(context.Background(), strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header().Version != 1 || len(tr.ActivePath()) != 4 {
		t.Fatalf("version %d, path %v", tr.Header().Version, tr.ActivePath())
	}
	if c := tr.Context(); c.Count() != 3 {
		t.Fatalf("v1 context count = %d, want 3 (summary, b, c)", c.Count())
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := session.Open(context.Background(), dir+"/missing.jsonl", bs.SessionRef{}, nil)
	if !errors.Is(err, bs.ErrNotFound) || !strings.Contains(err.Error(), "missing.jsonl") || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("missing file: %v", err)
	}
	_, err = session.Open(context.Background(), dir, bs.SessionRef{}, nil)
	if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("directory: %v", err)
	}
}
