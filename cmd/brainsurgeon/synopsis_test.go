package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/clitest"
)

// helpLine is the README's synopsis line of "help", which has no --help of
// its own.
const helpLine = "brainsurgeon help [command [subcommand]]"

// TestREADMESynopsis checks that the README's CLI synopsis and the
// commands agree: every command and subcommand that "brainsurgeon help"
// lists has its --help synopsis in the README, word for word, the README
// has no other brainsurgeon line, and each synopsis names exactly the
// flags the command accepts.
func TestREADMESynopsis(t *testing.T) {
	readme, err := clitest.Synopsis("../../README.md", "brainsurgeon")
	if err != nil || len(readme) == 0 {
		t.Fatalf("README's CLI synopsis: %v, %d brainsurgeon lines", err, len(readme))
	}
	_, mainHelp, _ := run(t, "help")
	cmds := clitest.Section(mainHelp, "Commands:")
	if len(cmds) < 10 {
		t.Fatalf("help lists %d commands: %q", len(cmds), cmds)
	}
	want := []string{helpLine}
	check := func(name string, args ...string) {
		code, help, errs := run(t, args...)
		if code != 0 {
			t.Errorf("%s: exit %d: %s", name, code, errs)
			return
		}
		lines := clitest.UsageLines(help)
		if len(lines) == 0 {
			t.Errorf("%s --help has no Usage line:\n%s", name, help)
			return
		}
		if got, flags := clitest.LineFlags(lines...), clitest.HelpFlags(help); !slices.Equal(got, flags) {
			t.Errorf("%s: the synopsis names the flags %q, the command has %q", name, got, flags)
		}
		want = append(want, lines...)
	}
	for _, cmd := range cmds {
		if cmd == "help" {
			continue
		}
		_, help, _ := run(t, "help", cmd)
		subs := clitest.Section(help, "Subcommands:")
		if lines := clitest.UsageLines(help); len(subs) == 0 && len(lines) == 1 {
			// A command with one subcommand shows its usage
			// ("brainsurgeon session branch …").
			if f := strings.Fields(lines[0]); len(f) > 2 && f[1] == cmd && regexp.MustCompile(`^[a-z]+$`).MatchString(f[2]) {
				subs = []string{f[2]}
			}
		}
		if len(subs) > 0 {
			for _, sub := range subs {
				check(cmd+" "+sub, cmd, sub, "--help")
			}
			continue
		}
		check(cmd, "help", cmd)
	}
	for _, l := range want {
		if !slices.Contains(readme, l) {
			t.Errorf("README's CLI synopsis lacks\n\t%s", l)
		}
	}
	for _, l := range readme {
		if !slices.Contains(want, l) {
			t.Errorf("README's CLI synopsis has a line no --help has:\n\t%s", l)
		}
	}
	if t.Failed() {
		t.Logf("the commands' synopsis:\n%s", strings.Join(want, "\n"))
	}
}
