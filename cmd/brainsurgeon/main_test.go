package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const demoAgents = "../../testdata/demo/agents"
const demoFile = demoAgents + "/main/sessions/7f3e2a10-5b6c-4d8e-9f01-23456789abcd.jsonl"

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := (&Main{Stdout: &out, Stderr: &errb}).Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func TestInspect(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		out  []string
		err  []string
	}{
		{"ByPath", []string{"inspect", demoFile, "--agents-dir", demoAgents}, 0,
			[]string{"main/7f3e2a10-5b6c-4d8e-9f01-23456789abcd", "format v3", "Compactions  1", "line 6", "thinking"}, nil},
		{"ByKey", []string{"inspect", "agent:main:main", "--agents-dir", demoAgents}, 0, []string{"(agent:main:main)"}, nil},
		{"FlagWithoutCommand", []string{"--agents-dir=" + demoAgents}, 2, nil, []string{"unknown command"}},
		{"FlagsFirst", []string{"inspect", "--agents-dir", demoAgents, "main:main"}, 0, []string{"Active path  19 entries"}, nil},
		{"NoArgs", []string{"inspect"}, 2, nil, []string{"one transcript file or session name", "Try: brainsurgeon inspect --help"}},
		{"Help", []string{"inspect", "--help"}, 0, []string{"Usage: brainsurgeon inspect", "Examples:"}, nil},
		{"HelpCommand", []string{"help", "inspect"}, 0, []string{"Usage: brainsurgeon inspect"}, nil},
		{"UnknownSession", []string{"inspect", "nope", "--agents-dir", demoAgents}, 1, nil, []string{"nope", "7f3e2a10"}},
		{"MissingAgentsDir", []string{"inspect", "x", "--agents-dir", "/nonexistent/agents"}, 1, nil, []string{"/nonexistent/agents"}},
		{"NotAnAgentsDir", []string{"inspect", "x", "--agents-dir", "../../internal"}, 1, nil, []string{"expected"}},
		{"MissingFile", []string{"inspect", "/nonexistent/x.jsonl"}, 1, nil, []string{"/nonexistent/x.jsonl", "no such file"}},
		{"UnknownCommand", []string{"frobnicate"}, 2, nil, []string{"unknown command \"frobnicate\""}},
		{"NoCommand", nil, 2, nil, []string{"Commands:"}},
		{"Version", []string{"version"}, 0, []string{"brainsurgeon devel"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.out {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.err {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
}

func TestInspectJSON(t *testing.T) {
	code, out, errs := run(t, "inspect", "--json", demoFile, "--agents-dir", demoAgents)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Entries     int            `json:"entries"`
		EntryTypes  map[string]int `json:"entry_types"`
		Leaf        string         `json:"leaf"`
		Malformed   []struct{ Line int }
		Compactions []struct{ Active bool }
		Triggers    map[string]struct{ Values, Bytes int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Entries != 20 || rep.EntryTypes["message"] != 17 || rep.Leaf == "" || len(rep.Malformed) != 1 || rep.Malformed[0].Line != 6 ||
		len(rep.Compactions) != 1 || !rep.Compactions[0].Active || rep.Triggers["image"].Values != 1 {
		t.Fatalf("unexpected report: %+v", rep)
	}
}

// TestInspectWritesNothing checks that inspecting leaves every file of the
// agents dir untouched (content and modification time).
func TestInspectWritesNothing(t *testing.T) {
	snap := func() map[string]string {
		m := map[string]string{}
		filepath.Walk(demoAgents, func(p string, fi os.FileInfo, err error) error {
			if err == nil {
				b, _ := os.ReadFile(p)
				m[p] = fi.ModTime().String() + string(b)
			}
			return nil
		})
		return m
	}
	before := snap()
	run(t, "inspect", "agent:main:main", "--agents-dir", demoAgents)
	run(t, "inspect", demoFile, "--json")
	after := snap()
	if len(before) != len(after) {
		t.Fatalf("files changed: %d → %d", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("%s changed", k)
		}
	}
}

// TestContextGrepExitStatus checks that context grep exits as grep does:
// 0 when something matched, 1 when nothing did (with nothing on stderr,
// and under --json no error member), 2 for any error.
func TestContextGrepExitStatus(t *testing.T) {
	sess := []string{"--session", "agent:main:main", "--agents-dir", demoAgents}
	for _, tt := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"Match", []string{"the repo"}, 0, ""},
		{"NoMatch", []string{"no such text anywhere"}, 1, ""},
		{"NoMatchJSON", []string{"no such text anywhere", "--json"}, 1, ""},
		{"BadRegex", []string{"(", "--regex"}, 2, "bad --regex pattern"},
		{"NoPattern", nil, 2, "takes one non-empty PATTERN"},
		{"UnknownSession", []string{"x", "--session", "nope"}, 2, "nope"},
		{"MissingAgentsDir", []string{"x", "--agents-dir", "/nonexistent/agents"}, 2, "agents directory /nonexistent/agents does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := run(t, append(append([]string{"context", "grep"}, sess...), tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			if tt.err == "" && errs != "" {
				t.Errorf("stderr is not empty:\n%s", errs)
			}
			if !strings.Contains(errs, tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, errs)
			}
			if tt.name == "NoMatchJSON" {
				var doc map[string]any
				if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["count"] != 0.0 || doc["error"] != nil {
					t.Errorf("stdout is not one JSON document with count 0 and no error (%v):\n%s", err, out)
				}
			}
		})
	}
}
