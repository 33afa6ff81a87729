package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// TestIsTranscript is the one rule of what a transcript is: the first
// whole JSON object has a string "type". Malformed lines before it are
// kept, not a reason to refuse; anything else is refused with what was
// expected and what was found.
func TestIsTranscript(t *testing.T) {
	header := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`
	long := `{"type":"message","id":"m1","message":{"role":"user","content":"` + strings.Repeat("x", 100<<10) + `"}}`
	longNoType := `{"id":"m1","message":{"role":"user","content":"` + strings.Repeat("x", 100<<10) + `"}}`
	for _, tt := range []struct {
		name, data string
		// found is what the error says was found; "" for a transcript.
		found string
	}{
		{"Header", header + "\n", ""},
		{"HeaderCRLF", header + "\r\n", ""},
		{"NoTrailingNewline", header, ""},
		{"FlatShape", `{"__id":"e1","type":"tool_result","output":"o"}` + "\n", ""},
		{"V1Entry", `{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}` + "\n", ""},
		{"MalformedFirst", "oops\n\n" + header + "\n", ""},
		{"GluedFirst", header + header + "\n" + header + "\n", ""},
		{"LongFirstEntry", long + "\n", ""},
		{"LongMalformedFirst", strings.Repeat("x", 5000) + "\n" + header + "\n", ""},
		{"LongFirstTypeNotString", `{"type":{"a":"` + strings.Repeat("x", 100<<10) + `"}}` + "\n", ""}, // its head does not tell
		{"LongFirstNoTypeEarly", `{"a":1,"type":2,"b":"` + strings.Repeat("x", 100<<10) + `"}` + "\n", `without a string "type" member`},
		{"ObjectsWithoutType", "{\"a\":1}\n{\"a\":2}\n", `the JSON object {"a":1}, which has no "type" member`},
		{"TypeNotString", "{\"type\":3}\n", `which has a "type" that is not a string`},
		{"LongFirstWithoutType", longNoType + "\n", ""}, // cannot be told from its first 64 KiB
		{"Hello", "hello\n", "found no JSON object, 1 line that is not a JSON object"},
		{"Array", "[1,2]\n", "found no JSON object"},
		{"Blank", "\n \n", "found only blank lines (2)"},
		{"Empty", "", "found an empty file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			err := session.IsTranscript(path)
			_, oerr := session.Open(context.Background(), path, bs.SessionRef{}, nil)
			if tt.found == "" {
				if err != nil || errors.Is(oerr, session.ErrNotTranscript) {
					t.Fatalf("IsTranscript: %v; Open: %v", err, oerr)
				}
				return
			}
			for _, e := range []error{err, oerr} {
				if !errors.Is(e, session.ErrNotTranscript) || !errors.Is(e, bs.ErrInvalid) {
					t.Fatalf("got %v; want an error wrapping ErrNotTranscript", e)
				}
				if msg := e.Error(); !strings.Contains(msg, path+" is not a transcript: expected ") || !strings.Contains(msg, tt.found) {
					t.Errorf("error %q: want the path, what was expected and %q", msg, tt.found)
				}
			}
		})
	}
}

// TestDiscoverSkipsNotTranscripts: a file with a transcript's name but
// not a transcript's content is not a session, and resolving it by path
// says why; once it becomes a transcript it is listed.
func TestDiscoverSkipsNotTranscripts(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	header := `{"type":"session","version":3,"id":"good","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	files := map[string]string{"good.jsonl": header, "readme.jsonl": "hello\n", "data.jsonl": "{\"a\":1}\n"}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		refs, err := session.Discover(ctx, agents)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range refs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := list(); len(got) != 1 || got[0] != "good" {
		t.Fatalf("sessions %v, want [good]", got)
	}
	st := session.NewStore(agents)
	for _, n := range []string{filepath.Join(dir, "readme.jsonl"), filepath.Join(dir, "data.jsonl"), "main/readme", "data"} {
		_, err := st.Resolve(ctx, n)
		if !errors.Is(err, session.ErrNotTranscript) || !strings.Contains(err.Error(), "not a transcript") {
			t.Errorf("resolve %s: %v, want it refused as not a transcript", n, err)
		}
	}
	if _, err := st.Resolve(ctx, "other/readme"); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("resolve other/readme: %v, want not found (no agent other)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "readme.jsonl"), []byte(strings.Replace(header, "good", "readme", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 2 {
		t.Fatalf("sessions %v after readme.jsonl became a transcript, want 2", got)
	}
}
