package cli_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
)

func TestParseInterspersed(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		pos  string
		json bool
		dir  string
		err  bool
	}{
		{"FlagsFirst", []string{"--json", "--agents-dir", "/a", "x", "y"}, "x,y", true, "/a", false},
		{"FlagsLast", []string{"x", "y", "--json", "--agents-dir=/a"}, "x,y", true, "/a", false},
		{"FlagsBetween", []string{"x", "--json", "y"}, "x,y", true, "", false},
		{"DoubleDash", []string{"--json", "--", "--agents-dir", "x"}, "--agents-dir,x", true, "", false},
		{"Unknown", []string{"x", "--nope"}, "", false, "", true},
		{"None", nil, "", false, "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			j := fs.Bool("json", false, "")
			d := fs.String("agents-dir", "", "")
			pos, err := cli.Parse(fs, tt.args)
			if tt.err {
				var ue *cli.UsageError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(pos, ",") != tt.pos || *j != tt.json || *d != tt.dir {
				t.Fatalf("pos=%v json=%v dir=%q", pos, *j, *d)
			}
		})
	}
}

func TestParseHelp(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if _, err := cli.Parse(fs, []string{"x", "--help"}); !errors.Is(err, cli.ErrHelp) {
		t.Fatalf("err = %v, want ErrHelp", err)
	}
}

func TestExit(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		code int
		out  string
	}{
		{"Nil", nil, cli.ExitOK, ""},
		{"Help", cli.ErrHelp, cli.ExitOK, ""},
		{"Usage", &cli.UsageError{Msg: "bad", Try: "x --help"}, cli.ExitUsage, "Error: bad\nTry: x --help\n"},
		{"Canceled", fmt.Errorf("run: %w", context.Canceled), cli.ExitProblem, "Error: interrupted\n"},
		{"Problem", errors.New("boom"), cli.ExitProblem, "Error: boom\n"},
		// A sentinel's text after a sentence that says it already is not printed (errors.Is still works).
		{"NotFoundSentence", fmt.Errorf("entry \"x\" not found in session main/s (3 entries): %w", bs.ErrNotFound), cli.ExitProblem, "Error: entry \"x\" not found in session main/s (3 entries)\n"},
		{"InvalidSentence", fmt.Errorf("--layer: unknown layer \"zz\" (expected prune, summarize or full): %w", bs.ErrInvalid), cli.ExitProblem, "Error: --layer: unknown layer \"zz\" (expected prune, summarize or full)\n"},
		{"NotFoundShort", fmt.Errorf("entry x: %w", bs.ErrNotFound), cli.ExitProblem, "Error: entry x: not found\n"},
		{"StatusQuiet", &cli.StatusError{Code: 1}, 1, ""},
		{"StatusProblem", &cli.StatusError{Err: errors.New("boom"), Code: 2}, 2, "Error: boom\n"},
		{"StatusUsage", &cli.StatusError{Err: &cli.UsageError{Msg: "bad", Try: "x --help"}, Code: 2}, 2, "Error: bad\nTry: x --help\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if code := cli.Exit(&b, tt.err); code != tt.code || b.String() != tt.out {
				t.Fatalf("Exit = %d %q, want %d %q", code, b.String(), tt.code, tt.out)
			}
		})
	}
}

func TestJoinMax(t *testing.T) {
	for _, tc := range []struct {
		names []string
		max   int
		want  string
	}{
		{nil, 3, "none"},
		{[]string{"a"}, 3, "a"},
		{[]string{"a", "b", "c"}, 3, "a, b, c"},
		{[]string{"a", "b", "c", "d"}, 2, "a, b, … (4 in all)"},
	} {
		if got := cli.JoinMax(tc.names, tc.max); got != tc.want {
			t.Errorf("JoinMax(%q, %d) = %q, want %q", tc.names, tc.max, got, tc.want)
		}
	}
}
