package portable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/portable"
)

func TestExport(t *testing.T) {
	tr, side := open(t, fixture)
	ctx := context.Background()
	var factLines int
	x, err := portable.Export(ctx, tr, side, portable.ExportOptions{Clock: fixedClock{},
		Facts: func(lines [][]byte) any { factLines = len(lines); return map[string]int{"lines": len(lines)} }})
	if err != nil {
		t.Fatal(err)
	}
	s := x.Summary
	if s == nil || s.EntryID != "c2" || s.Text != "Condensed: alpha to epsilon" || s.FirstKeptEntryID != "u3" || s.TokensBefore != 7000 {
		t.Fatalf("summary %+v", s)
	}
	if x.SchemaVersion != 1 || x.Source.SessionID != "sess-1" || x.Source.Agent != "main" || x.Source.Version != 3 || x.Source.LeafID != "u4" || x.Source.Cwd != "/w" {
		t.Errorf("source %+v", x.Source)
	}
	if factLines != 11 || string(x.Facts) != `{"lines":11}` {
		t.Errorf("facts saw %d lines: %s", factLines, x.Facts)
	}
	want := fixture[9:]
	if len(x.Tail) != len(want) {
		t.Fatalf("tail has %d lines, want %d", len(x.Tail), len(want))
	}
	for k := range want {
		if string(x.Tail[k]) != want[k] {
			t.Errorf("tail line %d differs", k)
		}
	}
	// Encode keeps the tail byte for byte; Decode reads it back.
	var b bytes.Buffer
	if err := x.Encode(&b); err != nil {
		t.Fatal(err)
	}
	y, err := portable.Decode(b.Bytes())
	if err != nil {
		t.Fatalf("decode own export: %v\n%s", err, b.Bytes())
	}
	for k := range want {
		if string(y.Tail[k]) != want[k] {
			t.Errorf("decoded tail line %d differs", k)
		}
	}
	// Session: header, tail, our summary entry keeping from the tail's start.
	ns, err := y.Session(portable.ImportOptions{ID: "imp-1", Clock: fixedClock{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := idsOf(t, ns.Lines[:len(ns.Lines)-1]); got != "u3 a4 c2 u4" {
		t.Errorf("imported ids %s", got)
	}
	var c struct {
		Type, ParentID, FirstKeptEntryID, Summary string
		ID                                        string
		TokensBefore                              int64
		FromHook                                  bool
	}
	if err := json.Unmarshal(ns.Lines[len(ns.Lines)-1], &c); err != nil {
		t.Fatal(err)
	}
	if c.Type != "compaction" || c.ParentID != "u4" || c.FirstKeptEntryID != "u3" || c.Summary != s.Text || c.TokensBefore != 7000 || !c.FromHook || len(c.ID) != 8 {
		t.Errorf("summary entry %s", ns.Lines[len(ns.Lines)-1])
	}
	if !strings.Contains(string(ns.Lines[0]), `"parentSession":`+quote(tr.Ref().Path)) {
		t.Errorf("header %s", ns.Lines[0])
	}
}

func TestExportResolve(t *testing.T) {
	// Without the compactions, the tail is the whole path and r1's value is
	// put back from the side store.
	lines := append([]string{}, fixture[:8]...)
	tr, side := open(t, lines)
	x, err := portable.Export(context.Background(), tr, side, portable.ExportOptions{Resolve: true})
	if err != nil {
		t.Fatal(err)
	}
	if x.Summary != nil || len(x.Tail) != 6 {
		t.Fatalf("summary %+v, %d tail lines", x.Summary, len(x.Tail))
	}
	if !strings.Contains(string(x.Tail[2]), `"text":`+secret) {
		t.Errorf("r1 not resolved: %s", x.Tail[2])
	}
	ns, err := x.Session(portable.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ns.Lines) != 7 {
		t.Errorf("no summary: want header and 6 lines, got %d lines", len(ns.Lines))
	}
}

// validDoc is an export document Decode accepts; the malformed variants
// below each break one rule.
const validDoc = `{"schema_version":1,"source":{"agent":"main","session_id":"s1","backend":"jsonl","path":"/a/s1.jsonl","version":3,"cwd":"/w","leaf_id":"b"},
"created_at":"2026-07-02T08:00:00Z","summary":{"entry_id":"c","text":"sum","first_kept_entry_id":"a","tokens_before":10,"read_files":[],"modified_files":[]},
"tail":[
{"type":"message","id":"a","parentId":"z","message":{"role":"user","content":"hi"}},
{"type":"compaction","id":"c","parentId":"a","summary":"sum","firstKeptEntryId":"a","tokensBefore":10},
{"type":"message","id":"b","parentId":"c","message":{"role":"user","content":"<&>"}}
]}`

func TestDecodeMalformed(t *testing.T) {
	if _, err := portable.Decode([]byte(validDoc)); err != nil {
		t.Fatalf("valid document: %v", err)
	}
	for _, tt := range []struct {
		name, from, to, want string
	}{
		{"schema version", `"schema_version":1`, `"schema_version":2`, "schema_version: expected 1, found 2"},
		{"unknown member", `"created_at"`, `"extra":1,"created_at"`, `unknown field "extra"`},
		{"no session id", `"session_id":"s1"`, `"session_id":""`, "source.session_id"},
		{"bad version", `"version":3`, `"version":1`, "expected the transcript format version 2 or 3, found 1"},
		{"no time", `"created_at":"2026-07-02T08:00:00Z",`, ``, "created_at"},
		{"empty tail", "\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"z\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}},\n{\"type\":\"compaction\",\"id\":\"c\",\"parentId\":\"a\",\"summary\":\"sum\",\"firstKeptEntryId\":\"a\",\"tokensBefore\":10},\n{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"c\",\"message\":{\"role\":\"user\",\"content\":\"<&>\"}}\n", "", "tail: expected at least one entry line"},
		{"tail not object", `{"type":"message","id":"b"`, `["x"],{"type":"message","id":"b"`, "tail line 3: expected a JSON object"},
		{"no type", `{"type":"message","id":"b"`, `{"id":"b"`, `tail line 3: expected a "type" string`},
		{"header in tail", `{"type":"message","id":"b"`, `{"type":"session","id":"b"`, "found a session header"},
		{"leaf line", `{"type":"message","id":"b"`, `{"type":"leaf","id":"b"`, "found a leaf control line"},
		{"no id", `"id":"b",`, ``, `tail line 3 (message): expected an "id" string`},
		{"duplicate id", `"id":"b"`, `"id":"a"`, `id "a" already used by tail line 1`},
		{"broken chain", `"parentId":"c"`, `"parentId":"a"`, `tail line 3 (b): expected parentId "c" (the id of tail line 2), found "a"`},
		{"null parent", `"parentId":"c"`, `"parentId":null`, `expected parentId "c" (the id of tail line 2), found none`},
		{"parent not string", `"parentId":"c"`, `"parentId":7`, `expected "parentId" to be a string or null, found "7"`},
		{"summary first kept", `"first_kept_entry_id":"a"`, `"first_kept_entry_id":"q"`, `summary.first_kept_entry_id: expected "a"`},
		{"summary no entry", `"entry_id":"c"`, `"entry_id":""`, "summary.entry_id"},
		{"trailing data", "\n]}", "\n]} {}", "expected the document to end"},
		{"not json", `{"schema_version"`, `{schema_version`, "expected one JSON object"},
		{"wrong type", `"tokens_before":10`, `"tokens_before":"10"`, "expected one JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(validDoc, tt.from, tt.to, 1)
			if doc == validDoc {
				t.Fatalf("variant changes nothing")
			}
			st, dir := newStore(t)
			_, err := portable.Import(context.Background(), st, "main", []byte(doc), portable.ImportOptions{})
			if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant ErrInvalid saying %q", err, tt.want)
			}
			if l := listing(t, dir); l != "" {
				t.Errorf("malformed import wrote %s", l)
			}
		})
	}
}

func TestImport(t *testing.T) {
	st, dir := newStore(t)
	ref, err := portable.Import(context.Background(), st, "main", []byte(validDoc), portable.ImportOptions{ID: "imp-2", Clock: fixedClock{}})
	if err != nil {
		t.Fatal(err)
	}
	if l := listing(t, dir); l != "imp-2.jsonl" {
		t.Errorf("sessions dir holds %s", l)
	}
	tr, err := st.Open(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The host's context: our summary, then every message of the tail.
	c := tr.Context()
	nodes := tr.Nodes()
	if c.Compaction < 0 || nodes[c.Compaction].Line != 5 || c.FirstKept < 0 || nodes[c.FirstKept].ID != "a" || len(c.Messages) != 2 {
		t.Errorf("context %+v", c)
	}
	if h := tr.Header(); h.ParentSession != "/a/s1.jsonl" || h.Version != 3 || h.Cwd != "/w" {
		t.Errorf("header %+v", h)
	}
	// Lines are copied as they are: no HTML escaping.
	b, _ := readFile(ref.Path)
	if !strings.Contains(b, `"content":"<&>"`) {
		t.Errorf("tail line re-encoded:\n%s", b)
	}
	// SQLite refuses, and nothing is written.
	if _, err := portable.Import(context.Background(), nil, "main", []byte(validDoc), portable.ImportOptions{}); !errors.Is(err, bs.ErrUnsupported) {
		t.Errorf("nil creator: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(validDoc))
	f.Add([]byte(strings.Replace(validDoc, `"parentId":"c"`, `"parentId":"a"`, 1)))
	f.Add([]byte(`{"schema_version":1}`))
	f.Add([]byte(`{"schema_version":1,"source":{"session_id":"s","version":2},"created_at":"2026-01-01T00:00:00Z","summary":null,"tail":[{"type":"x","id":"1","parentId":null}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := portable.Decode(data)
		if err != nil {
			if !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		ns, err := x.Session(portable.ImportOptions{ID: "f"})
		if err != nil {
			t.Fatalf("valid document, Session: %v", err)
		}
		// Every line is one JSON object on one line, the header first, and
		// each entry's parentId names the entry before it.
		prev := ""
		for k, l := range ns.Lines {
			if bytes.IndexByte(l, '\n') >= 0 || !json.Valid(l) || bytes.TrimSpace(l)[0] != '{' {
				t.Fatalf("line %d not one JSON object on one line: %q", k, l)
			}
			var e struct {
				Type, ID string
				ParentID *string
			}
			if err := json.Unmarshal(l, &e); err != nil {
				t.Fatal(err)
			}
			if (k == 0) != (e.Type == "session") {
				t.Fatalf("line %d type %q", k, e.Type)
			}
			if k >= 2 && (e.ParentID == nil || *e.ParentID != prev) {
				t.Fatalf("line %d parent %v, want %q", k, e.ParentID, prev)
			}
			prev = e.ID
		}
	})
}
