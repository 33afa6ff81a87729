package main

import (
	"fmt"
	"io"

	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// printMalformed says, one line per session, how many of its lines are
// malformed (not exactly one JSON object): they are kept as they are, and
// inspect lists them.
func printMalformed(w io.Writer, sessions []string, counts []int) {
	for i, n := range counts {
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: %d malformed %s, kept as %s (brainsurgeon inspect %s lists them)\n",
			sessions[i], n, plural.Noun(n, "line", "lines"), map[bool]string{true: "it is", false: "they are"}[n == 1], sessions[i])
	}
}

// printPruneMalformed is printMalformed for the sessions of a pass that
// read them, after an empty line when there are any.
func printPruneMalformed(w io.Writer, rep *prune.Report) {
	var names []string
	var counts []int
	found := false
	for _, r := range rep.Sessions {
		if r.Result != nil {
			names, counts = append(names, r.Session), append(counts, r.Result.MalformedLines)
			found = found || r.Result.MalformedLines > 0
		}
	}
	if found {
		fmt.Fprintln(w)
	}
	printMalformed(w, names, counts)
}

// printVerifyMalformed is printMalformed for verify's reports.
func printVerifyMalformed(w io.Writer, reps []*restore.VerifyReport) {
	names := make([]string, len(reps))
	counts := make([]int, len(reps))
	for i, r := range reps {
		names[i], counts[i] = r.Session, r.MalformedLines
	}
	printMalformed(w, names, counts)
}
