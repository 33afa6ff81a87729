package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestContextSQLite runs the context commands on a copy of a corpus OpenClaw
// SQLite store: the read-only ones work, compaction, branch and import are
// refused with the reason (BrainSurgeon never inserts rows), and the store
// is left as it was.
func TestContextSQLite(t *testing.T) {
	agents := testcorpus.Store(t)
	store := filepath.Join(agents, "main", testcorpus.StoreFile)
	before, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "context", "status", "--json", "--agents-dir", agents)
	if code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
	var st struct {
		Backend    string `json:"backend"`
		Session    string `json:"session"`
		Tokens     int    `json:"tokens"`
		CanCompact bool   `json:"can_compact"`
		Refusal    string `json:"refusal"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status: not JSON: %v\n%s", err, out)
	}
	if st.Backend != "sqlite" || st.Tokens <= 0 || st.CanCompact || !strings.Contains(st.Refusal, "SQLite") {
		t.Fatalf("status: %+v", st)
	}
	if !strings.Contains(errs, "the most recently modified session of agent main") {
		t.Errorf("status did not say which session it chose: %s", errs)
	}
	sess := []string{"--agents-dir", agents, "--session", st.Session}
	export := filepath.Join(t.TempDir(), "x.json")
	for _, args := range [][]string{
		{"context", "inspect"}, {"context", "history", "--depth", "0"}, {"context", "grep", "a", "--max", "3"},
		{"context", "export", export},
	} {
		if code, out, errs := run(t, append(args, sess...)...); code != 0 {
			t.Errorf("%s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"compact", "--layer", "full", "--yes"}, "SQLite"},
		{[]string{"session", "branch"}, "SQLite"},
		{[]string{"context", "import", export, "--agents-dir", agents}, "SQLite"},
	} {
		args := tt.args
		if tt.args[1] != "import" {
			args = append(args, sess...)
		}
		code, out, errs := run(t, args...)
		if code != 1 || !strings.Contains(errs, tt.want) {
			t.Errorf("%s: exit %d, want 1 and %q in stderr\n%s\n%s", strings.Join(tt.args, " "), code, tt.want, out, errs)
		}
	}
	after, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Fatal("the SQLite store changed")
	}
}
