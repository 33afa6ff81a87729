package doctor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/doctor"
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
			doctor.HealthBroken, "missing_tool_result@3:c1 orphan_tool_result@5:c1"},
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
		})
	}
}
