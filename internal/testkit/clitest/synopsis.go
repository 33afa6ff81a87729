package clitest

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Synopsis returns the lines of the README's CLI synopsis (the first code
// block after the "## CLI" heading of the file readme) that start with
// prog and a space, in order.
func Synopsis(readme, prog string) ([]string, error) {
	data, err := os.ReadFile(readme)
	if err != nil {
		return nil, err
	}
	var out []string
	section, block := false, false
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			if section && !block {
				return out, nil
			}
			section = line == "## CLI"
		case section && strings.HasPrefix(line, "```"):
			if block {
				return out, nil
			}
			block = true
		case block && strings.HasPrefix(line, prog+" "):
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out, sc.Err()
}

// UsageLines returns the synopsis at the top of a command's help text:
// the "Usage: " line without that word, and the lines under it indented
// to the same column (a second form of the command), up to the first
// empty line.
func UsageLines(help string) []string {
	var out []string
	for _, line := range strings.Split(help, "\n") {
		switch {
		case len(out) == 0 && strings.HasPrefix(line, "Usage: "):
			out = append(out, strings.TrimSpace(strings.TrimPrefix(line, "Usage: ")))
		case len(out) > 0 && strings.HasPrefix(line, strings.Repeat(" ", len("Usage: "))):
			out = append(out, strings.TrimSpace(line))
		case len(out) > 0:
			return out
		}
	}
	return out
}

// helpFlag matches a flag as the flag package's PrintDefaults lists it.
var helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// HelpFlags returns the names of the flags a help text lists after
// "Flags:" (the flag package's PrintDefaults), sorted.
func HelpFlags(help string) []string {
	_, defaults, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		return nil
	}
	var out []string
	for _, m := range helpFlag.FindAllStringSubmatch(defaults, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// lineFlag matches a flag in a synopsis line: "--name", "[--name X]",
// "--name=false".
var lineFlag = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)

// LineFlags returns the names of the flags the synopsis lines mention,
// sorted, without repeats.
func LineFlags(lines ...string) []string {
	var out []string
	for _, l := range lines {
		for _, m := range lineFlag.FindAllStringSubmatch(l, -1) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Section returns the first words of the lines indented by two spaces
// under the line title (such as "Commands:") of a help text, up to the
// first empty line: the names of the commands it lists.
func Section(help, title string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == title:
			in = true
		case in && line == "":
			return out
		case in && strings.HasPrefix(line, "  ") && len(line) > 2 && line[2] != ' ':
			out = append(out, strings.Fields(line)[0])
		}
	}
	return out
}
