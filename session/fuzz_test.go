package session_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

func openReader(t testing.TB, path string) *session.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return session.NewReader(f)
}

// FuzzReadLines feeds arbitrary bytes to the reader and the parser: the raw
// lines must always add up to the input, spans must lie inside their line
// and point at JSON strings or objects, and nothing may panic.
func FuzzReadLines(f *testing.F) {
	for _, s := range []string{
		treeSample,
		"{\"a\":1}\r\n\n{\"b\":\"\\ud800\"}",
		"{\"type\":\"message\",\"id\":\"a\"}{\"type\":\"message\"}",
		"\xff\xfe{\"x\":\"\xff\"}\n",
		`{"type":"message","id":"m","message":{"role":"assistant","content":[{"type":"thinking","thinking":"T"},{"type":"image","data":"A"}]}}`,
		`{"__id":"e","type":"tool_result","output":"o","data":{"thinking":"t"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := session.NewReader(bytes.NewReader(in))
		var out []byte
		for r.Next() {
			raw := r.Raw()
			out = append(out, raw...)
			if r.Terminated() {
				out = append(out, '\n')
			}
			e := r.Entry()
			if e.Kind == bs.KindMalformed && e.Err == nil {
				t.Fatalf("malformed line without an error")
			}
			for _, v := range e.Strings {
				if v.Start < 0 || v.End > len(raw) || v.Start >= v.End || raw[v.Start] != '"' || raw[v.End-1] != '"' {
					t.Fatalf("bad string span %+v in %q", v, raw)
				}
			}
			for _, c := range entry.Classify(e) {
				if c.Start < 0 || c.End > len(raw) || c.Start >= c.End {
					t.Fatalf("bad candidate span %+v in %q", c, raw)
				}
			}
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("lines do not add up to the input")
		}
		if _, err := session.ReadIndex(context.Background(), bytes.NewReader(in), ""); err != nil {
			t.Fatal(err)
		}
	})
}

func refOf(path string) bs.SessionRef { return bs.SessionRef{Path: path} }
