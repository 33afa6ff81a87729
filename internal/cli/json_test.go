package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
)

func TestWantsJSON(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"inspect", "x", "--json"}, true},
		{[]string{"inspect", "-json", "x"}, true},
		{[]string{"inspect", "--json=false"}, false},
		{[]string{"inspect", "--json=true"}, true},
		{[]string{"inspect", "--", "--json"}, false},
		{[]string{"inspect", "json"}, false},
		{[]string{"inspect", "--jsonx"}, false},
	} {
		if got := cli.WantsJSON(tt.args); got != tt.want {
			t.Errorf("WantsJSON(%q) = %v", tt.args, got)
		}
	}
}

func TestWriteJSONWithError(t *testing.T) {
	var out, errs strings.Builder
	err := cli.WriteJSON(&out, struct {
		A int `json:"a"`
	}{1}, fmt.Errorf("entry x: %w", bs.ErrNotFound))
	if want := "{\n  \"a\": 1,\n  \"error\": \"entry x: not found\",\n  \"kind\": \"not_found\"\n}\n"; out.String() != want {
		t.Fatalf("stdout %q, want %q", out.String(), want)
	}
	// ExitJSON does not print it a second time.
	out.Reset()
	if code := cli.ExitJSON(&out, &errs, err); code != cli.ExitProblem || out.Len() != 0 || errs.String() != "Error: entry x: not found\n" {
		t.Fatalf("ExitJSON = %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	out.Reset()
	errs.Reset()
	long := fmt.Errorf("describe \"zz\": no entry of session main/s has that id: %w", bs.ErrNotFound)
	if code := cli.ExitJSON(&out, &errs, long); code != cli.ExitProblem || errs.String() != "Error: describe \"zz\": no entry of session main/s has that id\n" ||
		out.String() != "{\n  \"error\": \"describe \\\"zz\\\": no entry of session main/s has that id\",\n  \"kind\": \"not_found\"\n}\n" {
		t.Fatalf("ExitJSON(a sentence wrapping ErrNotFound) = %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
	out.Reset()
	if code := cli.ExitJSON(&out, &errs, &cli.UsageError{Msg: "bad"}); code != cli.ExitUsage || out.String() != "{\n  \"error\": \"bad\",\n  \"kind\": \"usage\"\n}\n" {
		t.Fatalf("ExitJSON(usage) = %d, stdout %q", code, out.String())
	}
	out.Reset()
	if err := cli.WriteJSON(&out, struct{}{}, errors.New("boom")); out.String() != "{\n  \"error\": \"boom\",\n  \"kind\": \"problem\"\n}\n" || err == nil {
		t.Fatalf("empty object: %q %v", out.String(), err)
	}
}

// marshaler is a type with its own MarshalJSON, spaced as encoding/json
// would not write it.
type marshaler struct{ N int }

func (m marshaler) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("{ \"n\" : %d , \"list\": [ 1, 2 ] }", m.N)), nil
}

// TestWriteJSONMatchesEncodingJSON: WriteJSON writes what encoding/json's
// Encode (HTML not escaped) followed by Indent writes, on every shape the
// commands output: empty and nil slices and maps, omitempty, times,
// durations, bytes, raw messages, HTML characters, unsorted maps, custom
// marshalers, and a pass result.
func TestWriteJSONMatchesEncodingJSON(t *testing.T) {
	type inner struct {
		A   string            `json:"a"`
		B   []int             `json:"b"`
		C   map[string]int    `json:"c,omitempty"`
		D   *inner            `json:"d,omitempty"`
		E   time.Duration     `json:"e_ns"`
		F   float64           `json:"f"`
		G   []byte            `json:"g"`
		H   json.RawMessage   `json:"h,omitempty"`
		I   any               `json:"i"`
		J   map[string][]bool `json:"j"`
		K   bool              `json:"k,omitempty"`
		M   marshaler         `json:"m"`
		T   time.Time         `json:"t"`
		Str string            `json:",string"`
		N   int64             `json:"n,string"`
		x   int
	}
	at := time.Date(2026, 11, 22, 14, 5, 6, 789, time.FixedZone("x", 3600))
	values := []any{
		nil, 1, "x", []int{}, []int(nil), map[string]int{}, map[string]int(nil),
		inner{}, &inner{B: []int{}, C: map[string]int{}},
		inner{A: "<a href=\"x\">&amp;</a> é \u2028 \x01", B: []int{3, 1, 2}, C: map[string]int{"z": 1, "a": 2, "m": 3},
			D: &inner{A: "nested", H: json.RawMessage(` { "raw" : [1, {"k": null}] } `)}, E: 1500 * time.Millisecond,
			F: 1e21, G: []byte{0, 1, 2, 250}, I: map[string]any{"b": []any{1.5, "two", nil, true}, "a": map[string]any{}},
			J: map[string][]bool{"y": nil, "x": {true, false}}, K: true, M: marshaler{7}, T: at, Str: "s", N: 42},
		[]any{[]any{}, map[string]any{}, []any{[]any{[]any{}}}},
		extract.Result{Session: "main/s", Entries: 2, Details: []extract.EntryResult{
			{ID: "e1", Line: 3, Type: "tool_result", Keys: []string{"/message/content/0/text"}, Sizes: []int{5000}, BytesSaved: 4970},
			{ID: "e2", Line: 9, Type: "thinking", Keys: []string{}, Sizes: nil}},
			Counts: map[extract.Code]int{"too_short": 3, "extract": 2}, Elapsed: time.Second},
	}
	for i, v := range values {
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, bytes.TrimSpace(enc.Bytes()), "", "  "); err != nil {
			t.Fatal(err)
		}
		want.WriteByte('\n')
		var got bytes.Buffer
		if err := cli.WriteJSON(&got, v, nil); err != nil {
			t.Fatalf("value %d: %v", i, err)
		}
		if got.String() != want.String() {
			t.Errorf("value %d (%T):\n got %s\nwant %s", i, v, got.String(), want.String())
		}
	}
}

// TestWriteJSONUnencodable: a value encoding/json refuses (a NaN) gives
// its error and writes nothing, so stdout never holds half a document.
func TestWriteJSONUnencodable(t *testing.T) {
	var out bytes.Buffer
	v := map[string]any{"ok": strings.Repeat("x", 100<<10), "ratio": math.NaN()}
	err := cli.WriteJSON(&out, v, nil)
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("error %v, want one naming the NaN", err)
	}
	if out.Len() != 0 {
		t.Errorf("wrote %d bytes, want none", out.Len())
	}
}

// TestTryLaterErrors holds the exit status and the --json kind of the
// failures that may pass when tried later: exit 1 with the message, and a
// kind of their own.
func TestTryLaterErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		kind string
	}{
		{"busy", fmt.Errorf("session main/s: a run is in flight: %w", bs.ErrBusy), "busy"},
		{"changed", fmt.Errorf("session main/s: %w", bs.ErrChanged), "changed"},
		{"side store unreachable", fmt.Errorf("restore r1: side store: get main/s r1: dial tcp 127.0.0.1:9000: connect: connection refused: %w", bs.ErrUnavailable), "unavailable"},
		{"side store server error", fmt.Errorf("prune: put main/s: 503 SlowDown: %w", bs.ErrUnavailable), "unavailable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cli.Kind(tt.err); got != tt.kind {
				t.Errorf("Kind = %q, want %q", got, tt.kind)
			}
			var out, errs strings.Builder
			if code := cli.ExitJSON(&out, &errs, tt.err); code != cli.ExitProblem {
				t.Errorf("ExitJSON = %d, want %d", code, cli.ExitProblem)
			}
			if want := "Error: " + tt.err.Error() + "\n"; errs.String() != want {
				t.Errorf("stderr %q, want %q", errs.String(), want)
			}
			var doc struct{ Error, Kind string }
			if err := json.Unmarshal([]byte(out.String()), &doc); err != nil || doc.Error != tt.err.Error() || doc.Kind != tt.kind {
				t.Errorf("stdout %q (%v), want the error and kind %q", out.String(), err, tt.kind)
			}
		})
	}
}
