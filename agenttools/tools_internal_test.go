package agenttools

import (
	"slices"
	"sort"
	"testing"
)

// TestEverySpecRuns checks that Call runs exactly the tools of Specs.
func TestEverySpecRuns(t *testing.T) {
	var run []string
	for name := range runners {
		run = append(run, name)
	}
	sort.Strings(run)
	names := Names()
	sort.Strings(names)
	if !slices.Equal(run, names) {
		t.Errorf("Call runs %q, Specs has %q: expected a runner for each spec and a spec for each runner", run, names)
	}
}

// TestExpectedTools checks the list of tools an error names.
func TestExpectedTools(t *testing.T) {
	if got, want := ExpectedTools(), "purge_control, recall_grep, recall_describe or recall_expand"; got != want {
		t.Errorf("ExpectedTools() = %q, want %q", got, want)
	}
}
