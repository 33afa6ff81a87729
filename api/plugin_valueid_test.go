package api_test

import (
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
)

// TestPurgeControlValueID checks that purge_control names the value by
// value_id and still accepts key, its old name (OpenClaw masks an
// argument named key in its transcript; older placeholders name it), and
// that both given with different ids is an error that says so.
func TestPurgeControlValueID(t *testing.T) {
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_v", `[{"type":"text","text":"the stored value"}]`, ""), 200, nil)
	for _, tc := range []struct {
		name, params string
		// wantErr is a part of the error; "" means the call succeeds.
		wantErr string
	}{
		{"restore by value_id", `{"action":"restore","value_id":"tc-call_v"}`, ""},
		{"restore by key, the old name", `{"action":"restore","key":"tc-call_v"}`, ""},
		{"restore by both, the same id", `{"action":"restore","value_id":"tc-call_v","key":"tc-call_v"}`, ""},
		{"restore by both, different ids", `{"action":"restore","value_id":"tc-call_v","key":"tc-call_w"}`,
			`purge_control restore: value_id "tc-call_v" and key "tc-call_w" (the old name of value_id) name different values: expected value_id only`},
		{"restore by neither", `{"action":"restore"}`, `purge_control restore: expected "value_id", the id of a [[extracted-<id>]] placeholder, found none`},
		{"set_extractable by neither", `{"action":"set_extractable","value":"false"}`, `purge_control set_extractable: expected "value_id", an entry id, found none`},
		{"set_extractable by both, different ids", `{"action":"set_extractable","value_id":"u1","key":"r0","value":"false"}`,
			`purge_control set_extractable: value_id "u1" and key "r0" (the old name of value_id) name different values`},
		{"set_extractable by value_id", `{"action":"set_extractable","value_id":"u1","value":"false"}`, ""},
		{"set_extractable by key, the old name", `{"action":"set_extractable","key":"r0","value":"5"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := callTool(t, c, plugSessA, "purge_control", tc.params)
			if tc.wantErr != "" {
				if a.OK || !strings.Contains(a.Error, tc.wantErr) {
					t.Fatalf("ok %v, error %q; want a failure saying %q", a.OK, a.Error, tc.wantErr)
				}
				return
			}
			if !a.OK {
				t.Fatalf("failed: %s", a.Error)
			}
			if strings.Contains(tc.params, `"restore"`) && !strings.Contains(a.text(t), "the stored value") {
				t.Fatalf("restore answered %q, want the stored value", a.text(t))
			}
		})
	}
}
