package extract_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// valueLimited is a JSONL store that accepts the edit of a value only
// when accept says so (its EditableValues).
type valueLimited struct {
	*session.Store
	accept func(e *bs.Entry, c bs.Candidate) bool
}

func (v valueLimited) EditableValues(_ bs.SessionRef, e *bs.Entry, cands []bs.Candidate, with [][]byte) []bool {
	out := make([]bool, len(cands))
	for i, c := range cands {
		out[i] = len(with) == len(cands) && v.accept(e, c)
	}
	return out
}

// TestValueEditLimiter runs a pass over a store that refuses some values:
// a thinking block's signature (while its text is accepted) and every
// value of one tool result. The values it refuses stay in place, byte for
// byte; the others are extracted and the refused entry is counted as
// not editable.
func TestValueEditLimiter(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	long := func(tag string) string { return strings.Repeat(tag+" output line. ", 60) }
	lines := []string{
		`{"type":"session","version":3,"id":"limit-0001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"` + long("think") + `","thinkingSignature":"` + long("sig") + `"},{"type":"toolCall","id":"c1","name":"exec","arguments":{"command":"ls"}}]}}`,
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[{"type":"text","text":"` + long("one") + `"}],"isError":false}}`,
		`{"type":"message","id":"r2","parentId":"r1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[{"type":"text","text":"` + long("two") + `"}],"isError":false}}`,
		`{"type":"message","id":"u1","parentId":"r2","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":[{"type":"text","text":"thanks"}]}}`,
	}
	path := filepath.Join(dir, "limit-0001.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js := session.NewStore(root)
	js.Writer.Quiet = 0
	st := valueLimited{Store: js, accept: func(e *bs.Entry, c bs.Candidate) bool {
		return e.ID != "r2" && !strings.HasSuffix(c.Pointer, "/thinkingSignature")
	}}
	ref, err := st.Resolve(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	x := &extract.Extractor{Policy: allTypes(100, 1), Store: st, Side: sidedir.New(js)}
	res, err := x.Run(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Written || res.Counts[extract.CodeNotEditable] != 1 {
		t.Fatalf("written %v, decisions %v; want written and one %q", res.Written, res.Counts, extract.CodeNotEditable)
	}
	keys := map[string][]string{}
	for _, d := range res.Details {
		keys[d.ID] = d.Keys
	}
	if len(keys) != 2 || len(keys["a1"]) != 1 || keys["a1"][0] != "/message/content/0/thinking" || len(keys["r1"]) != 1 {
		t.Fatalf("extracted %v, want a1's thinking text and r1's text", keys)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	now := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if now[3] != lines[3] {
		t.Fatalf("r2 changed: %s", now[3])
	}
	if !strings.Contains(now[1], `"thinkingSignature":"`+long("sig")+`"`) || !strings.Contains(now[1], extract.Placeholder("a1")) {
		t.Fatalf("a1: want its thinking extracted and its signature kept: %s", now[1])
	}
	if !bytes.Contains(got, []byte(extract.Placeholder("r1"))) {
		t.Fatal("r1 was not extracted")
	}
}
