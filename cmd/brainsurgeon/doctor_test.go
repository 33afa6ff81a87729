package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/doctor"
)

// dropResult removes the last tool result line of the transcript at path
// and re-parents the entry after it to its parent, as a crash between a
// tool call and its result leaves a session; it returns the new bytes.
func dropResult(t *testing.T, path string) []byte {
	t.Helper()
	lines := strings.SplitAfter(string(readFile(t, path)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		var e struct {
			ID       string `json:"id"`
			ParentID string `json:"parentId"`
			Message  struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(l), &e) != nil || e.Message.Role != "toolResult" {
			continue
		}
		out := append(append([]string{}, lines[:i]...), lines[i+1:]...)
		for j := range out {
			out[j] = strings.Replace(out[j], fmt.Sprintf(`"parentId":%q`, e.ID), fmt.Sprintf(`"parentId":%q`, e.ParentID), 1)
		}
		data := []byte(strings.Join(out, ""))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		age(t, path)
		return data
	}
	t.Fatal("no tool result in the transcript")
	return nil
}

func TestDoctorCommand(t *testing.T) {
	agents, path := demoCopy(t)
	corrupted := dropResult(t, path)
	leftover := filepath.Join(agents, "main", "sessions", demoID+".jsonl.bak")
	if err := os.WriteFile(leftover, corrupted, 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errs := run(t, "doctor", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var got doctorOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != 1 || got.Sessions[0].Health != doctor.HealthBroken || got.Sessions[0].MissingResults != 1 || !got.Sessions[0].Fixable {
		t.Fatalf("doctor --json: %s", out)
	}
	code, out, errs = run(t, "doctor", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "broken  main/"+demoID) || !strings.Contains(out, "missing_tool_result") || !strings.Contains(out, "doctor --fix") {
		t.Errorf("doctor text output:\n%s", out)
	}

	code, out, errs = run(t, "doctor", "--fix", "--session", "main/"+demoID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "fixed main/"+demoID+": inserted 1 synthetic tool results") {
		t.Errorf("doctor --fix output:\n%s", out)
	}
	code, out, errs = run(t, "doctor", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	got = doctorOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Sessions[0].MissingResults+got.Sessions[0].OrphanResults != 0 {
		t.Fatalf("doctor after the fix: %s", out)
	}

	code, out, errs = run(t, "doctor", "--collect", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "would move 1 files (") {
		t.Errorf("doctor --collect (dry run):\n%s", out)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("the dry run moved the leftover: %v", err)
	}
	code, out, errs = run(t, "doctor", "--collect", "--yes", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	got = doctorOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Collect == nil || got.Collect.DryRun || got.Collect.Files != 1 || got.Collect.TrashID == "" {
		t.Fatalf("doctor --collect --yes: %s", out)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the leftover is still there after the collect: %v", err)
	}

	code, out, errs = run(t, "restore", "--all", "--pristine", "main/"+demoID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !bytes.Equal(readFile(t, path), corrupted) {
		t.Error("restore --all --pristine after doctor --fix is not byte-identical to the transcript before the fix")
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"doctor", "extra"}, {"doctor", "--yes"}, {"doctor", "--include-unique"}} {
		if code, out, errs := run(t, args...); code != 2 {
			t.Errorf("%q: exit %d, want 2\n%s%s", args, code, out, errs)
		}
	}
}
