package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
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
	if !strings.Contains(out, "fixed main/"+demoID+": inserted 1 synthetic tool result,") {
		t.Errorf("doctor --fix output:\n%s", out)
	}
	code, out, errs = run(t, "doctor", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	got = doctorOutput{}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Sessions[0].Unpaired() != 0 {
		t.Fatalf("doctor after the fix: %s", out)
	}

	code, out, errs = run(t, "doctor", "--collect", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "would move 1 file (") || !strings.Contains(out, "    "+leftover+"  bak  ") {
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

// TestDoctorFixBusy holds the host's lock: doctor --fix skips the session
// with a clear message, exits 1 and writes nothing.
func TestDoctorFixBusy(t *testing.T) {
	agents, path := demoCopy(t)
	corrupted := dropResult(t, path)
	holder := exec.Command("sleep", "30") // a live process that is not this one holds the lock
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	lock := fmt.Sprintf(`{"pid":%d,"createdAt":%q}`, holder.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(path+".lock", []byte(lock), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "doctor", "--fix", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(out, "not fixed main/"+demoID+": ") || !strings.Contains(out, "the host is using the session, nothing was written") ||
		!strings.Contains(errs, "the fix of main/"+demoID+" skipped") {
		t.Errorf("doctor --fix of a locked session:\n%s\n%s", out, errs)
	}
	if !bytes.Equal(readFile(t, path), corrupted) {
		t.Error("doctor --fix changed a locked session")
	}
}

// TestDoctorSQLiteRefused diagnoses a broken session of an OpenClaw SQLite
// store: doctor reports it and exits 0; doctor --fix refuses with the
// reason, exits 1 and changes no byte of the store.
func TestDoctorSQLiteRefused(t *testing.T) {
	agents := filepath.Join(t.TempDir(), "agents")
	rows := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go"}],"timestamp":1771405201000}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{}}],"stopReason":"toolUse","timestamp":1771405202000}}`,
		`{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-02-18T09:00:03.000Z","message":{"role":"user","content":[{"type":"text","text":"again"}],"timestamp":1771405203000}}`,
	}
	db := testcorpus.WriteStore(t, agents, "main", testcorpus.StoreSession{ID: "s1", Rows: rows})
	before := readFile(t, db)

	code, out, errs := run(t, "doctor", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var got doctorOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Sessions) != 1 || got.Sessions[0].Health != doctor.HealthBroken || got.Sessions[0].FixRefused != doctor.RefusedSQLite {
		t.Fatalf("doctor of the SQLite store: %v\n%s", err, out)
	}
	code, out, errs = run(t, "doctor", "--fix", "--agents-dir", agents)
	wantCode(t, code, 1, out, errs)
	if !strings.Contains(out, "not fixed main/s1: "+doctor.RefusedSQLite) || !strings.Contains(errs, "was refused") {
		t.Errorf("doctor --fix of the SQLite store:\n%s\n%s", out, errs)
	}
	if !bytes.Equal(readFile(t, db), before) {
		t.Error("doctor --fix changed the SQLite store")
	}
}

// TestDoctorJustCrashed cuts the transcript after its last tool call, as a
// gateway crash in the middle of a tool leaves it, and leaves it recently
// written (within idle_seconds): doctor does not call it ok (it is busy,
// not judged), and doctor --fix, which does not wait for the quiet period,
// judges the calls and repairs them.
func TestDoctorJustCrashed(t *testing.T) {
	agents, path := demoCopy(t)
	lines := strings.SplitAfter(string(readFile(t, path)), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"role":"assistant"`) && strings.Contains(l, `"type":"toolCall"`) {
			cut = i
		}
	}
	if cut < 0 {
		t.Fatal("no tool call in the demo transcript")
	}
	crashed := []byte(strings.Join(lines[:cut+1], ""))
	if err := os.WriteFile(path, crashed, 0o600); err != nil { // written just now
		t.Fatal(err)
	}

	code, out, errs := run(t, "doctor", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "busy    main/"+demoID) || !strings.Contains(out, "last turn may still be running; not judged") || !strings.Contains(out, "ok: 0 of 1 session (1 busy") {
		t.Errorf("doctor right after a crash:\n%s", out)
	}
	code, out, errs = run(t, "doctor", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var got doctorOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Sessions) != 1 || !got.Sessions[0].Busy {
		t.Fatalf("doctor --json right after a crash: %s (%v)", out, err)
	}

	code, out, errs = run(t, "doctor", "--fix", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "fixed main/"+demoID+": inserted 1 ") || strings.Contains(out, "nothing to fix") {
		t.Errorf("doctor --fix right after a crash:\n%s", out)
	}
	age(t, path) // restore waits for the quiet period
	code, out, errs = run(t, "restore", "--all", "--pristine", "main/"+demoID, "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !bytes.Equal(readFile(t, path), crashed) {
		t.Error("restore --all --pristine after doctor --fix is not byte-identical to the crashed transcript")
	}
}

// TestDoctorCollectPiSession collects for one pi session: the leftovers of
// its project dir are listed and would be moved, those of another project
// dir are not.
func TestDoctorCollectPiSession(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	const id = "0b0b0b0b-0000-4000-8000-000000000001"
	session := `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}` + "\n" +
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1767225601000}}` + "\n"
	var baks []string
	for _, project := range []string{"--work--", "--other--"} {
		dir := filepath.Join(root, project)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		name := "2026-01-01T00-00-00-000Z_" + id + ".jsonl"
		if project != "--work--" {
			name = "2026-01-01T00-00-00-000Z_0b0b0b0b-0000-4000-8000-000000000002.jsonl"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(session), 0o600); err != nil {
			t.Fatal(err)
		}
		bak := filepath.Join(dir, name+".bak")
		if err := os.WriteFile(bak, []byte(session), 0o600); err != nil {
			t.Fatal(err)
		}
		baks = append(baks, bak)
	}
	code, out, errs := run(t, "doctor", "--session", id, "--collect", "--agents-dir", root)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "would move 1 file (") || !strings.Contains(out, baks[0]) || strings.Contains(out, baks[1]) {
		t.Errorf("doctor --session <pi session> --collect:\n%s", out)
	}
}

// TestPrintDoctorCounts: each count agrees with its noun ("1 missing tool
// result", "2 malformed lines").
func TestPrintDoctorCounts(t *testing.T) {
	r := &doctor.Report{Session: "main/abc", Backend: bs.BackendJSONL, Health: doctor.HealthBroken,
		MissingResults: 1, OrphanResults: 2, MissingValues: 1, Pending: 1, Malformed: 2,
		Problems: []doctor.Problem{{}}}
	var b strings.Builder
	printDoctor(&b, &doctorOutput{Sessions: []*doctor.Report{r}})
	want := "1 missing tool result, 2 orphan tool results, 1 placeholder without value, 1 pending write-back, 2 malformed lines"
	if !strings.Contains(b.String(), want) {
		t.Errorf("doctor prints\n%s\nexpected it to say %q", b.String(), want)
	}
}
