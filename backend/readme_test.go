package backend_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMESnippet checks that the README's library snippet is, line for
// line, the body of Example, which the tests compile and run: the snippet
// a new user copies works as written.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i := strings.Index(s, "Open an installation, run a pass, restore")
	if i < 0 {
		t.Fatal("README: the library section's snippet is gone")
	}
	start := strings.Index(s[i:], "```go\n")
	end := strings.Index(s[i+start+6:], "```\n")
	if start < 0 || end < 0 {
		t.Fatal("README: no go block after the library section's first paragraph")
	}
	snippet := s[i+start+6 : i+start+6+end]
	e := string(ex)
	b := strings.Index(e, "func Example() {\n")
	o := strings.Index(e, "\t// Output:")
	if b < 0 || o < 0 {
		t.Fatal("example_test.go: no Example with an Output")
	}
	var body []string
	for _, l := range strings.Split(strings.TrimRight(e[b+len("func Example() {\n"):o], "\n"), "\n") {
		body = append(body, strings.TrimPrefix(l, "\t"))
	}
	if got, want := strings.TrimRight(snippet, "\n"), strings.Join(body, "\n"); got != want {
		t.Fatalf("the README snippet differs from Example's body:\n--- README\n%s\n--- Example\n%s", got, want)
	}
}

// TestExampleMultiSession runs the README's library snippet (Example) on
// an agents dir with several agents and sessions, the snippet's session
// neither the first listed nor alone, and a file that is not a
// transcript: it finds its own session's result by the resolved ref and
// prints what it prints on the demo data.
func TestExampleMultiSession(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("..", "testdata", "demo", "agents", "main", "sessions", "7f3e2a10-5b6c-4d8e-9f01-23456789abcd.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	demoExtra = func(agents string) error {
		for _, s := range []struct{ agent, id string }{
			{"alpha", "0a1b2c3d-0000-4000-8000-000000000001"},
			{"alpha", "0a1b2c3d-0000-4000-8000-000000000002"},
			{"main", "00000000-0000-4000-8000-00000000000a"},
		} {
			dir := filepath.Join(agents, s.agent, "sessions")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			data := strings.Replace(string(demo), "7f3e2a10-5b6c-4d8e-9f01-23456789abcd", s.id, 1)
			if err := os.WriteFile(filepath.Join(dir, s.id+".jsonl"), []byte(data), 0o600); err != nil {
				return err
			}
		}
		return os.WriteFile(filepath.Join(agents, "main", "sessions", "readme.jsonl"), []byte("hello\n"), 0o600)
	}
	defer func() { demoExtra = nil }()
	got := captureStdout(t, Example)
	want := "main/7f3e2a10-5b6c-4d8e-9f01-23456789abcd jsonl extracted 5 entries\n" +
		"restored: true written back: true\n" +
		"pristine undo written: true\n"
	if got != want {
		t.Fatalf("Example on a multi-session agents dir printed\n%s\nwant\n%s", got, want)
	}
}

// captureStdout returns what f prints on os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	func() {
		defer func() { os.Stdout = old }()
		f()
	}()
	w.Close()
	return string(<-done)
}
