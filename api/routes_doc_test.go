package api_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestRoutesDocumented checks that every route the API serves is in the
// package documentation's route list and in the README: adding a route
// means documenting it in both (see docs/ARCHITECTURE.md, "To add an API
// route").
func TestRoutesDocumented(t *testing.T) {
	src, err := os.ReadFile("api.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	pkg := strings.Index(s, "\npackage api")
	if pkg < 0 {
		t.Fatal("api.go: no package clause")
	}
	doc := s[:pkg]
	routes := regexp.MustCompile(`"(GET|POST|PUT|PATCH|DELETE) (/[^" ]*)"`).FindAllStringSubmatch(s[pkg:], -1)
	if len(routes) < 30 {
		t.Fatalf("found %d routes in api.go's route table, expected the whole table (30 or more): has its form changed?", len(routes))
	}
	// A documented line names its method and one or more paths: "GET /a, /b".
	documented := func(text, method, path string) bool {
		for _, line := range strings.Split(text, "\n") {
			if !strings.Contains(line, method) {
				continue
			}
			for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' || r == '`' || r == '?' }) {
				if f == path {
					return true
				}
			}
		}
		return false
	}
	for _, r := range routes {
		method, path := r[1], r[2]
		if !documented(doc, method, path) {
			t.Errorf("route %s %s is not in the package documentation's route list (api.go)", method, path)
		}
		if !documented(string(readme), method, path) {
			t.Errorf("route %s %s is not in the README", method, path)
		}
	}
}
