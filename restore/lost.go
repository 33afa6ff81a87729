package restore

import (
	"errors"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// Problem is a placeholder whose value cannot be restored. Verify,
// RestoreAll and GetContext share one accounting of them: one Problem per
// placeholder, with the same Kind for the same cause.
type Problem struct {
	Session string `json:"session"`
	EntryID string `json:"entry_id"`
	// Line is the transcript line holding the placeholder; Path its JSON
	// Pointer in the entry.
	Line int    `json:"line"`
	Path string `json:"path"`
	// Kind is one of the Problem constants; Detail says more.
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	// File is the side file concerned, when there is one.
	File string `json:"file,omitempty"`
}

// VerifyProblem is the name Problem had when only Verify reported them.
type VerifyProblem = Problem

// String returns "<entry> <path> (line N): <kind>: <detail>".
func (p Problem) String() string {
	return fmt.Sprintf("%s %s (line %d): %s: %s", p.EntryID, p.Path, p.Line, p.Kind, p.Detail)
}

// ProblemNotRestored: the placeholder's value is stored and intact, yet
// RestoreAll left the placeholder in place (a write-back warning says why).
const ProblemNotRestored = "not_restored"

// sideRecord is what the side store gave for one entry: its record, or why
// there is none.
type sideRecord struct {
	rec *extract.Record
	// err is set when there is no usable record: an error wrapping
	// ErrNotFound (no side record), or any other (a corrupt one).
	err error
	// file names the side file, for reports.
	file string
}

// placeholderCheck is the verdict on one placeholder of an entry.
type placeholderCheck struct {
	ptr string
	// value is the stored value the placeholder stands for, when the
	// check found one intact (problem nil).
	value extract.StoredValue
	// problem is nil when the value is stored and intact.
	problem *Problem
}

// checkPlaceholders is the one accounting of lost values: it classifies
// every placeholder of e (placeholderPointers) against the entry's side
// record.
func checkPlaceholders(session string, e *bs.Entry, sr sideRecord) []placeholderCheck {
	holders := placeholderPointers(e)
	out := make([]placeholderCheck, 0, len(holders))
	for _, h := range holders {
		c := placeholderCheck{ptr: h}
		problem := func(kind, format string, args ...any) {
			c.problem = &Problem{Session: session, EntryID: e.ID, Line: e.Line, Path: h, Kind: kind,
				Detail: fmt.Sprintf(format, args...), File: sr.file}
		}
		switch {
		case sr.err != nil && errors.Is(sr.err, bs.ErrNotFound):
			problem(ProblemMissingFile, "no side record for entry %s", e.ID)
			c.problem.File = ""
		case sr.err != nil:
			problem(ProblemCorruptFile, "%v", sr.err)
		default:
			v, ok := valueFor(sr.rec, h)
			if !ok {
				problem(ProblemMissingValue, "the side file holds no value at %s (it has %s)", h, valuePaths(sr.rec))
				break
			}
			if s, en, found := jsonedit.Find(e.Raw, v.Path); !found || !holdsPlaceholder(v, e.Raw[s:en]) {
				problem(ProblemMissingValue, "the side file's value at %s was replaced by another placeholder than the one there now", v.Path)
				break
			}
			if _, err := v.Bytes(); err != nil {
				problem(ProblemHashMismatch, "%v", err)
				break
			}
			c.value = v
		}
		out = append(out, c)
	}
	return out
}

// problems returns the problems of checks.
func problems(checks []placeholderCheck) []Problem {
	var out []Problem
	for _, c := range checks {
		if c.problem != nil {
			out = append(out, *c.problem)
		}
	}
	return out
}
