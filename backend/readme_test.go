package backend_test

import (
	"os"
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
