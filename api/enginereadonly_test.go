package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestEngineRestoreNoteReadOnly proves that the note of a restore of a
// value the view collapsed promises the full value from the next turn only
// when the restore is recorded: in read-only mode it says the view keeps
// the value collapsed.
func TestEngineRestoreNoteReadOnly(t *testing.T) {
	content := `[{"type":"text","text":` + escapedJSON(bigText(2_000, "NEEDLE")) + `}]`
	for _, tc := range []struct {
		name      string
		readOnly  bool
		collapsed bool
		want      []string
		not       []string
	}{
		{"recorded", false, true, []string{"shows it in full from the next turn"}, []string{"read-only"}},
		{"read-only", true, true, []string{"read-only mode", "nothing was recorded", "keeps it collapsed"}, []string{"from the next turn"}},
		{"not collapsed, read-only", true, false, []string{"was not collapsed"}, []string{"from the next turn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newPlugFixture(t)
			eng := &fakeEngine{value: engine.ViewValue{EntryID: "r0", Content: json.RawMessage(content), Collapsed: tc.collapsed}}
			c := serveEngine(t, f, eng, tc.readOnly)
			a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"r0","max_chars":100000}`)
			note, _ := a.Details["note"].(string)
			if !a.OK || note == "" {
				t.Fatalf("restore: ok %v %q, details %v", a.OK, a.Error, a.Details)
			}
			for _, w := range tc.want {
				if !strings.Contains(note, w) {
					t.Errorf("note %q lacks %q", note, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(note, w) {
					t.Errorf("note %q says %q", note, w)
				}
			}
		})
	}
}
