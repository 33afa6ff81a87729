package cli_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
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
	if code := cli.ExitJSON(&out, &errs, &cli.UsageError{Msg: "bad"}); code != cli.ExitUsage || out.String() != "{\n  \"error\": \"bad\",\n  \"kind\": \"usage\"\n}\n" {
		t.Fatalf("ExitJSON(usage) = %d, stdout %q", code, out.String())
	}
	out.Reset()
	if err := cli.WriteJSON(&out, struct{}{}, errors.New("boom")); out.String() != "{\n  \"error\": \"boom\",\n  \"kind\": \"problem\"\n}\n" || err == nil {
		t.Fatalf("empty object: %q %v", out.String(), err)
	}
}
