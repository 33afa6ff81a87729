package doctor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// brief renders a report's problems as "kind@line:call[+other][!]" ("!"
// marks a problem Fix cannot repair).
func brief(r *doctor.Report) string {
	var out []string
	for _, p := range r.Problems {
		s := fmt.Sprintf("%s@%d", p.Kind, p.Line)
		if p.ToolCallID != "" {
			s += ":" + p.ToolCallID
		}
		if p.OtherBranch {
			s += "+other"
		}
		if !p.Fixable {
			s += "!"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestDiagnose(t *testing.T) {
	tests := []struct {
		name   string
		lines  []ln
		health string
		want   string
	}{
		{"clean", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}, {"r1", "", result("c1")}, {"r2", "", result("c2")}, {"a2", "", text("done")}},
			doctor.HealthOK, ""},
		{"missing result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}, {"r1", "", result("c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "missing_tool_result@3:c2"},
		{"result after a user message", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"r1", "", result("c1")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "displaced_tool_result@5:c1"},
		{"result after a user and a plain assistant message", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}, {"r2", "", result("c2")}, {"u2", "", user("again")}, {"a2", "", text("hm")}, {"r1", "", result("c1")}, {"u3", "", user("more")}},
			doctor.HealthBroken, "displaced_tool_result@7:c1"},
		{"result after an aborted assistant message without calls", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"a2", "", `{"role":"assistant","content":[],"stopReason":"aborted"}`}, {"r1", "", result("c1")}, {"u3", "", user("more")}},
			doctor.HealthBroken, "displaced_tool_result@6:c1"},
		{"result after the next tool call", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"a2", "", calls("toolUse", "c2")}, {"r2", "", result("c2")}, {"r1", "", result("c1")}, {"u3", "", user("more")}},
			doctor.HealthBroken, "missing_tool_result@3:c1 orphan_tool_result@7:c1"},
		{"displaced leaf", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"r1", "", result("c1")}},
			doctor.HealthBroken, "displaced_tool_result@5:c1!"},
		{"displaced after a compaction", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"k1", "", compaction("u1")}, {"r1", "", result("c1")}, {"u3", "", user("more")}},
			doctor.HealthBroken, "displaced_tool_result@6:c1"},
		{"result of no call", []ln{{"u1", "", user("go")}, {"r9", "", result("c9")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "orphan_tool_result@3:c9"},
		{"call on another branch", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "u1", user("instead")}, {"r1", "", result("c1")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "orphan_tool_result@5:c1+other"},
		{"aborted assistant", []ln{{"u1", "", user("go")}, {"a1", "", calls("aborted", "c1", "c2")}, {"r1", "", result("c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "orphan_tool_result@4:c1"},
		{"errored assistant without results", []ln{{"u1", "", user("go")}, {"a1", "", calls("error", "c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			doctor.HealthOK, ""},
		{"duplicate result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"r1", "", result("c1")}, {"r2", "", result("c1")}, {"a2", "", text("done")}},
			doctor.HealthBroken, "orphan_tool_result@5:c1"},
		{"orphan leaf", []ln{{"u1", "", user("go")}, {"a2", "", text("done")}, {"r9", "", result("c9")}},
			doctor.HealthBroken, "orphan_tool_result@4:c9!"},
		{"calls at the end of an idle session", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}, {"r1", "", result("c1")}},
			doctor.HealthBroken, "missing_tool_result@3:c2"},
		{"dead branch is not judged", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"a2", "u1", text("done")}},
			doctor.HealthOK, ""},
		{"other block and id names", []ln{{"u1", "", user("go")},
			{"a1", "", `{"role":"assistant","content":[{"type":"functionCall","id":"f1","name":"x"},{"type":"toolUse","id":"f2","name":"y"}],"stopReason":"toolUse"}`},
			{"r1", "", `{"role":"toolResult","tool_call_id":"f1","content":[]}`}, {"r2", "", `{"role":"toolResult","toolUseId":" f2 ","content":[]}`}, {"a2", "", text("done")}},
			doctor.HealthOK, ""},
		{"malformed line", []ln{{"u1", "", user("go")}, {"", "", `{"type":"message",`}, {"a2", "u1", text("done")}},
			doctor.HealthWarn, "malformed_line@3!"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := install(t, "main", "s1", transcript(tc.lines...))
			rep, err := e.doc.Diagnose(ctx(), e.ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := brief(rep); got != tc.want || rep.Health != tc.health {
				t.Errorf("got %s %q, want %s %q\n%+v", rep.Health, got, tc.health, tc.want, rep.Problems)
			}
			if rep.Fixable != strings.Contains(tc.want, "_tool_result@") && !strings.Contains(tc.want, "!") {
				t.Errorf("fixable = %v for %q", rep.Fixable, tc.want)
			}
			// The same diagnosis made inside a caller's own read (the
			// sessions list), with a Want that parses nothing more.
			rd := e.doc.Reading()
			tr, err := e.st.Open(ctx(), e.ref, &bs.Visitor{Want: rd.Want, Visit: rd.Visit})
			if err != nil {
				t.Fatal(err)
			}
			again, err := rd.Report(ctx(), tr)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(again, rep) {
				t.Errorf("Reading: %+v\nDiagnose: %+v", again, rep)
			}
		})
	}
}

// TestDiagnoseBusyTurn holds the host's lock: the calls of the last turn
// that have no result yet are not reported (the turn may be running).
func TestDiagnoseBusyTurn(t *testing.T) {
	e := install(t, "main", "s1", transcript(ln{"u1", "", user("go")}, ln{"a1", "", calls("toolUse", "c1", "c2")}, ln{"r1", "", result("c1")}))
	holder := exec.Command("sleep", "30") // a live process that is not this one holds the lock
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	lock := fmt.Sprintf(`{"pid":%d,"createdAt":%q}`, holder.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(e.path+".lock", []byte(lock), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := e.doc.Diagnose(ctx(), e.ref)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Health != doctor.HealthOK || !rep.Busy || len(rep.Problems) != 0 {
		t.Errorf("diagnosis of a session in a turn: %+v", rep)
	}
}

// TestDiagnoseQuietPeriod diagnoses a session written just now whose last
// turn ends in a call without result (a crash a minute ago): the quiet
// period makes it busy and the call is not judged; with an explicit-write
// context, as the fix uses, the quiet period does not count and the call
// is reported.
func TestDiagnoseQuietPeriod(t *testing.T) {
	e := install(t, "main", "s1", transcript(ln{"u1", "", user("go")}, ln{"a1", "", calls("toolUse", "c1")}))
	e.st.(*session.Store).Writer.Quiet = time.Minute
	n := time.Now()
	if err := os.Chtimes(e.path, n, n); err != nil {
		t.Fatal(err)
	}
	rep, err := e.doc.Diagnose(ctx(), e.ref)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Busy || rep.MissingResults != 0 {
		t.Errorf("diagnosis within the quiet period: %+v", rep)
	}
	rep, err = e.doc.Diagnose(bs.ExplicitWrite(ctx()), e.ref)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Busy || rep.MissingResults != 1 || rep.Health != doctor.HealthBroken || !rep.Fixable {
		t.Errorf("diagnosis with an explicit-write context: %+v", rep)
	}
}

// readCounter is a side store that counts the values read.
type readCounter struct {
	bs.SideStore
	gets int
}

func (r *readCounter) Get(ctx context.Context, ref bs.SessionRef, key string) (bs.SideRecord, error) {
	r.gets++
	return r.SideStore.Get(ctx, ref, key)
}

// TestDiagnoseValues diagnoses placeholders whose side records are
// damaged (x1) and missing (x2): the full check reads the values and
// reports both; the listed check reads none and reports only the missing
// one.
func TestDiagnoseValues(t *testing.T) {
	e := install(t, "main", "s1", transcript(ln{"x1", "", user("[[extracted-x1]]")}, ln{"a1", "", text("ok")}, ln{"x2", "", user("[[extracted-x2]]")}, ln{"a2", "", text("ok")}))
	side := &readCounter{SideStore: e.doc.Side}
	if err := side.Put(ctx(), e.ref, []bs.SideRecord{{EntryID: "x1", Data: []byte("not a record")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values doctor.ValueCheck
		want   string
		reads  bool
	}{
		{doctor.ValuesVerify, "placeholder_without_value@2! placeholder_without_value@4!", true},
		{doctor.ValuesListed, "placeholder_without_value@4!", false},
	} {
		side.gets = 0
		doc := *e.doc
		doc.Side, doc.Values = side, tc.values
		rep, err := doc.WithQueue().Diagnose(ctx(), e.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := brief(rep); got != tc.want || rep.Health != doctor.HealthWarn || (side.gets > 0) != tc.reads {
			t.Errorf("values %d: %s %q after %d reads, want warn %q (reads: %v)", tc.values, rep.Health, got, side.gets, tc.want, tc.reads)
		}
	}
}
