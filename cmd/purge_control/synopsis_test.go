package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/clitest"
)

// TestREADMESynopsis checks that the README's CLI synopsis, the main
// help's Usage list and the commands agree: each command's --help
// synopsis is in both, word for word, neither has another line, and each
// synopsis names exactly the flags the command accepts.
func TestREADMESynopsis(t *testing.T) {
	readme, err := clitest.Synopsis("../../README.md", "purge_control")
	if err != nil || len(readme) == 0 {
		t.Fatalf("README's CLI synopsis: %v, %d purge_control lines", err, len(readme))
	}
	help := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := (&Main{Stdout: &out, Stderr: &errb}).Run(context.Background(), args); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	var usage []string // the main help's "Usage:" list
	_, list, _ := strings.Cut(help("--help"), "\nUsage:\n")
	for _, line := range strings.Split(list, "\n") {
		if line == "" {
			break
		}
		usage = append(usage, strings.TrimSpace(line))
	}
	want := []string{"purge_control version"}
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		h := help(name, "--help")
		lines := clitest.UsageLines(h)
		if len(lines) == 0 {
			t.Errorf("%s --help has no Usage line:\n%s", name, h)
			continue
		}
		if got, flags := clitest.LineFlags(lines...), clitest.HelpFlags(h); !slices.Equal(got, flags) {
			t.Errorf("%s: the synopsis names the flags %q, the command has %q", name, got, flags)
		}
		want = append(want, lines...)
	}
	for what, lines := range map[string][]string{"README's CLI synopsis": readme, "purge_control --help": usage} {
		for _, l := range want {
			if !slices.Contains(lines, l) {
				t.Errorf("%s lacks\n\t%s", what, l)
			}
		}
		for _, l := range lines {
			if !slices.Contains(want, l) {
				t.Errorf("%s has a line no command's --help has:\n\t%s", what, l)
			}
		}
	}
}
