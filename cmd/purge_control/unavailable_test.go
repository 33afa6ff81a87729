package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
)

// TestPurgeControlSideStoreUnavailable runs the agent's commands while the
// side store cannot be reached: each exits 1 and says, in the agent's
// wording, that the value cannot be read now, why, that it is kept, and
// to try again later; --json gives the kind "unavailable"; the transcript
// is untouched.
func TestPurgeControlSideStoreUnavailable(t *testing.T) {
	f := newFixture(t, 0)
	before := f.line(t, "r1")
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"restore", []string{"restore", "r1"}, []string{"The stored value r1 cannot be read now", "purge_control restore of r1 again later"}},
		{"restore of a source key", []string{"restore", "tc-call_1"}, []string{"The stored value tc-call_1 cannot be read now"}},
		{"get_context", []string{"get_context"}, []string{"cannot be listed now", "get_context again later"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, asJSON := range []bool{false, true} {
				args := append(tt.args, "--agent", "main", "--session", "direct:123", "--agents-dir", f.agents)
				if asJSON {
					args = append(args, "--json")
				}
				var out, errs bytes.Buffer
				m := &Main{Stdout: &out, Stderr: &errs, wrapSide: func(s bs.SideStore) bs.SideStore {
					d := sidefault.New(s)
					d.Down()
					return d
				}}
				code := m.Run(context.Background(), args)
				want(t, code, 1, out.String(), errs.String())
				for _, w := range append(tt.want, "side store that", sidefault.Cause, "kept there") {
					if !strings.Contains(errs.String(), w) {
						t.Errorf("stderr lacks %q:\n%s", w, errs.String())
					}
				}
				if asJSON {
					var doc struct{ Error, Kind string }
					if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Kind != "unavailable" || !strings.Contains(doc.Error, "again later") {
						t.Errorf("--json: %v, %+v; want kind unavailable and the agent's text", err, doc)
					}
				}
			}
			if !bytes.Equal(f.line(t, "r1"), before) {
				t.Fatal("the transcript changed")
			}
		})
	}
}
