package doctor_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// piMessage is what the pairing check reads of a context message.
type piMessage struct {
	Role       string `json:"role"`
	StopReason string `json:"stopReason"`
	ToolCallID string `json:"toolCallId"`
	Content    json.RawMessage
}

// unpaired applies pi-ai's request transform (assistant messages with
// stopReason "error"/"aborted" are dropped) to the context messages pi's
// SessionManager built and lists every tool call without a result in the
// run of results right after it, and every result that is not in such a
// run: what a provider rejects.
func unpaired(t testing.TB, msgs []json.RawMessage) []string {
	t.Helper()
	var bad []string
	var open map[string]bool // calls of the current frame still unanswered
	var frame map[string]bool
	closeFrame := func() {
		for id := range open {
			bad = append(bad, "call "+id+" has no result")
		}
		open, frame = nil, nil
	}
	for i, raw := range msgs {
		var m piMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("context message %d: %v", i, err)
		}
		switch m.Role {
		case "assistant":
			closeFrame()
			if m.StopReason == "error" || m.StopReason == "aborted" {
				continue
			}
			var blocks []struct{ Type, ID string }
			_ = json.Unmarshal(m.Content, &blocks)
			open, frame = map[string]bool{}, map[string]bool{}
			for _, b := range blocks {
				if b.Type == "toolCall" {
					open[b.ID], frame[b.ID] = true, true
				}
			}
		case "toolResult":
			if !open[m.ToolCallID] {
				bad = append(bad, fmt.Sprintf("result %d for %s has no call before it", i, m.ToolCallID))
				continue
			}
			delete(open, m.ToolCallID)
		default:
			closeFrame()
		}
	}
	closeFrame()
	return bad
}

// checkOracle loads path with pi's SessionManager and fails on any
// unpaired tool block in the context it builds.
func checkOracle(t *testing.T, path string) {
	t.Helper()
	c, err := oracle.Context(ctx(), path)
	if err != nil {
		t.Fatal(err)
	}
	if bad := unpaired(t, c.Messages); len(bad) > 0 {
		t.Errorf("pi's context of the fixed transcript has unpaired tool blocks: %v", bad)
	}
}

func TestFix(t *testing.T) {
	oracle.Require(t)
	tests := []struct {
		name               string
		lines              []ln
		inserted, detached int
		after              string // health after
	}{
		{"missing result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2", "c3")}, {"r1", "", result("c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			2, 0, doctor.HealthOK},
		{"result after a user message", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"r1", "", result("c1")}, {"a2", "", text("done")}},
			1, 1, doctor.HealthOK},
		{"call on another branch", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "u1", user("instead")}, {"r1", "", result("c1")}, {"a2", "", text("done")}},
			0, 1, doctor.HealthOK},
		{"aborted assistant", []ln{{"u1", "", user("go")}, {"a1", "", calls("aborted", "c1", "c2")}, {"r1", "", result("c1")}, {"r2", "", result("c2")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			0, 2, doctor.HealthOK},
		{"duplicate result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"r1", "", result("c1")}, {"r2", "", result("c1")}, {"a2", "", text("done")}},
			0, 1, doctor.HealthOK},
		{"calls at the end", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}},
			2, 0, doctor.HealthOK},
		{"orphan first then missing", []ln{{"r0", "", result("c0")}, {"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("more")}, {"a2", "", text("done")}},
			1, 1, doctor.HealthOK},
		{"orphan leaf stays", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("more")}, {"r9", "", result("c9")}},
			1, 0, doctor.HealthBroken},
	}
	for _, agent := range []string{"main", ""} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/agent=%q", tc.name, agent), func(t *testing.T) {
				data := transcript(tc.lines...)
				e := install(t, agent, "s1", data)
				res, err := e.doc.Fix(ctx(), e.ref)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Applied || res.Inserted != tc.inserted || res.Detached != tc.detached || res.After == nil || res.After.Health != tc.after {
					t.Fatalf("fix: applied %v, inserted %d, detached %d, after %+v; want %d, %d, %s", res.Applied, res.Inserted, res.Detached, res.After, tc.inserted, tc.detached, tc.after)
				}
				fixed := read(t, e.path)
				if n := bytes.Count(fixed, []byte("\n")) - bytes.Count(data, []byte("\n")); n != tc.inserted {
					t.Errorf("the fix added %d lines, want %d", n, tc.inserted)
				}
				for _, l := range strings.Split(string(data), "\n") {
					if !bytes.Contains(fixed, []byte(l)) && !strings.Contains(l, `"parentId"`) {
						t.Errorf("line lost: %s", l)
					}
				}
				if tc.after == doctor.HealthOK {
					checkOracle(t, e.path)
				}
				again, err := e.doc.Fix(ctx(), e.ref)
				if err != nil || again.Applied {
					t.Errorf("a second fix: %+v, %v; want nothing to do", again, err)
				}
				if _, err := e.doc.Restorer.RestoreAll(ctx(), e.ref, true); err != nil {
					t.Fatal(err)
				}
				if got := read(t, e.path); !bytes.Equal(got, data) {
					t.Errorf("restore --all --pristine after the fix is not byte-identical:\n%s\nwant\n%s", got, data)
				}
			})
		}
	}
}

// TestSyntheticShape pins the synthetic result lines: OpenClaw's message
// for an OpenClaw session, pi-ai's for a pi session, in pi's entry shape.
func TestSyntheticShape(t *testing.T) {
	lines := []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}}
	for _, tc := range []struct{ agent, msg string }{
		{"main", `{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."}],"details":{"openclawSyntheticMissingToolResult":true,"reason":"missing_tool_result"},"isError":true,"timestamp":1771608600000}`},
		{"", `{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"No result provided"}],"isError":true,"timestamp":1771608600000}`},
	} {
		e := install(t, tc.agent, "s1", transcript(lines...))
		if _, err := e.doc.Fix(ctx(), e.ref); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(string(read(t, e.path)), "\n")
		line := got[3] // header, u1, a1, then the synthetic result
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		id := strings.Trim(string(m["id"]), `"`)
		want := fmt.Sprintf(`{"type":"message","id":%q,"parentId":"a1","timestamp":"2026-02-20T17:30:00.000Z","message":%s}`, id, tc.msg)
		if line != want || len(id) != 8 {
			t.Errorf("agent %q: synthetic line\n%s\nwant\n%s", tc.agent, line, want)
		}
		if !strings.Contains(got[4], fmt.Sprintf(`"parentId":%q`, id)) {
			t.Errorf("the entry after the anchor is not re-parented to the synthetic result: %s", got[4])
		}
	}
}

// TestFixBusy holds the host's lock: Fix fails with a clear message and
// writes nothing.
func TestFixBusy(t *testing.T) {
	data := transcript(ln{"u1", "", user("go")}, ln{"a1", "", calls("toolUse", "c1")}, ln{"u2", "", user("again")}, ln{"a2", "", text("done")})
	e := install(t, "main", "s1", data)
	holder := exec.Command("sleep", "30") // a live process that is not this one holds the lock
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	lock := e.path + ".lock"
	if err := os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"createdAt":"%s"}`, holder.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.doc.Fix(ctx(), e.ref)
	if !errors.Is(err, bs.ErrBusy) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("fix of a locked session: %v; want ErrBusy saying nothing was written", err)
	}
	if got := read(t, e.path); !bytes.Equal(got, data) {
		t.Error("the fix of a busy session changed the transcript")
	}
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
