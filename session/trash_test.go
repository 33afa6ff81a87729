package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/session"
)

// header returns a session header line, naming parent when not empty.
func header(id, parent string) string {
	p := ""
	if parent != "" {
		p = `,"parentSession":"` + parent + `"`
	}
	return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"` + p + "}\n"
}

// TestFamily checks that Family finds a session's children by their
// header's parentSession and by their sessions.json entry's spawnedBy,
// recursively, and leaves an unrelated session out.
func TestFamily(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(filepath.Join(dir, "extracted", "p1"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"p1.jsonl": header("p1", ""),
		"c1.jsonl": header("c1", filepath.Join(dir, "p1.jsonl")),
		"c2.jsonl": header("c2", ""),
		"g1.jsonl": header("g1", "c2.jsonl"),
		"u1.jsonl": header("u1", ""),
		"sessions.json": `{"agent:main:main":{"sessionId":"p1"},` +
			`"agent:main:sub":{"sessionId":"c2","spawnedBy":"agent:main:main"},"agent:main:u":{"sessionId":"u1"}}`,
		"extracted/p1/x.json": "{}",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := session.NewStore(root)
	ref, err := st.Resolve(ctx, "main/p1")
	if err != nil {
		t.Fatal(err)
	}
	fam, err := st.Family(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fam {
		got = append(got, f.Ref.ID+"<"+f.Parent)
	}
	if strings.Join(got, ",") != "p1<,c1<p1,c2<p1,g1<c2" {
		t.Errorf("family %v, want p1 with its children c1, c2 and grandchild g1", got)
	}
	p1 := fam[0]
	if p1.Transcript != filepath.Join(dir, "p1.jsonl") || p1.TranscriptBytes != int64(len(files["p1.jsonl"])) ||
		p1.SideDir != filepath.Join(dir, "extracted", "p1") ||
		p1.Index != filepath.Join(dir, "sessions.json") || p1.Entries["agent:main:main"] != `{"sessionId":"p1"}` {
		t.Errorf("files of p1: %+v", p1)
	}
}

// TestIndexEntries checks the sessions.json edits: removal keeps the other
// bytes and returns the entries as they were, adding them back restores
// the file's entries, and a key already there is refused.
func TestIndexEntries(t *testing.T) {
	st := session.NewStore(t.TempDir())
	path := filepath.Join(t.TempDir(), "sessions.json")
	orig := `{"a": {"sessionId": "x"}, "b": {"sessionId":"y", "label": "keep"}}`
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := st.RemoveIndexEntries(path, []string{"a", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || string(removed["a"]) != `{"sessionId": "x"}` {
		t.Errorf("removed %s", removed)
	}
	left := st.IndexEntries(path)
	if len(left) != 1 || string(left["b"]) != `{"sessionId":"y", "label": "keep"}` {
		t.Errorf("left %s", left)
	}
	if err := st.AddIndexEntries(path, map[string]json.RawMessage{"b": json.RawMessage(`{}`)}); !errors.Is(err, fs.ErrExist) {
		t.Errorf("adding a key already there: %v, want fs.ErrExist", err)
	}
	if err := st.AddIndexEntries(path, removed); err != nil {
		t.Fatal(err)
	}
	back := st.IndexEntries(path)
	if len(back) != 2 || string(back["a"]) != `{"sessionId": "x"}` {
		t.Errorf("after adding back: %s", back)
	}
}
