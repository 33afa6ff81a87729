package agenttools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// TestCallRefuses answers the mistakes a call can make before any store
// is read: an unknown tool (ErrInvalid), params of the wrong types, a
// missing argument, an unknown action, value_id and key that disagree.
func TestCallRefuses(t *testing.T) {
	tools := &agenttools.Tools{Store: noStore{}, Side: noSide{}, Restorer: &restore.Restorer{}}
	ref := bs.SessionRef{Agent: "main", ID: "s1"}
	for _, tc := range []struct {
		name, tool, params, err string
		invalid                 bool
	}{
		{"unknown tool", "rm", `{}`, `tool: expected purge_control, recall_grep, recall_describe or recall_expand, found "rm": invalid input`, true},
		{"bad params", "recall_grep", `{"pattern":5}`, "recall_grep params: json: cannot unmarshal number into Go struct field .pattern of type string (expected the documented members)", false},
		{"no pattern", "recall_grep", `{}`, `recall_grep: expected a non-empty "pattern", found none`, false},
		{"max too large", "recall_grep", `{"pattern":"x","max":1001}`, "recall_grep: max: expected 1 to 1000, found 1001", false},
		{"bad where", "recall_grep", `{"pattern":"x","in":"nowhere"}`, `recall_grep: in "nowhere": expected active, compacted, off_path or extracted`, false},
		{"no id", "recall_describe", `null`, `recall_describe: expected "id", an entry id or a summary id (sum-…), found none`, false},
		{"summary without engine", "recall_expand", `{"id":"sum-0123456789ab"}`, "recall_expand sum-0123456789ab: summary ids come from the context engine, which this server does not run", false},
		{"unknown action", "purge_control", `{"action":"drop"}`, `purge_control: action: expected get_context, restore or set_extractable, found "drop"`, false},
		{"two ids", "purge_control", `{"action":"restore","value_id":"a","key":"b"}`, `purge_control restore: value_id "a" and key "b" (the old name of value_id) name different values: expected value_id only`, false},
		{"no value id", "purge_control", `{"action":"restore"}`, `purge_control restore: expected "value_id", the id of a [[extracted-<id>]] placeholder, found none`, false},
		{"page too long", "purge_control", `{"action":"restore","value_id":"tc-x","max_chars":100001}`, "purge_control restore: max_chars: expected an integer from 1,000 to 100,000, found 100001", false},
		{"bad extractable", "purge_control", `{"action":"set_extractable","value_id":"e1","value":"maybe"}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tools.Call(context.Background(), ref, tc.tool, "", json.RawMessage(tc.params))
			if err == nil || (tc.err != "" && err.Error() != tc.err) || errors.Is(err, bs.ErrInvalid) != tc.invalid {
				t.Fatalf("error %v, want %q (invalid input: %v)", err, tc.err, tc.invalid)
			}
		})
	}
}

// noStore and noSide are stores the calls never reach.
type (
	noStore struct{ bs.Store }
	noSide  struct{ bs.SideStore }
)

// TestCallNeedsStores refuses a call on Tools without its stores.
func TestCallNeedsStores(t *testing.T) {
	ref := bs.SessionRef{Agent: "main", ID: "s1"}
	for _, tools := range []*agenttools.Tools{{}, {Store: noStore{}}, {Side: noSide{}}, {Store: noStore{}, Side: noSide{}}} {
		_, err := tools.Call(context.Background(), ref, "purge_control", "", json.RawMessage(`{"action":"get_context"}`))
		if !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("%+v: error %v, want invalid input", tools, err)
		}
	}
}

// TestFailed makes the answer of a failed call: ok false, the error as
// its one text block.
func TestFailed(t *testing.T) {
	b, err := json.Marshal(agenttools.Failed(errors.New(`no "x"`)))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ok":false,"error":"no \"x\"","content":[{"type":"text","text":"no \"x\""}]}`; string(b) != want {
		t.Fatalf("%s\nwant\n%s", b, want)
	}
}
