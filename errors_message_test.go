package brainsurgeon_test

import (
	"errors"
	"fmt"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TestErrorMessage: a sentinel's text that repeats what the sentence before
// it says is dropped; a short text keeps it; errors.Is is unchanged.
func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{bs.ErrNotFound, "not found"},
		{fmt.Errorf("entry x: %w", bs.ErrNotFound), "entry x: not found"},
		{fmt.Errorf(`entry "nokey" not found in session main/abc (20 entries): %w`, bs.ErrNotFound), `entry "nokey" not found in session main/abc (20 entries)`},
		{fmt.Errorf(`describe "zz": no entry of session main/abc has that id (expected an entry id): %w`, bs.ErrNotFound), `describe "zz": no entry of session main/abc has that id (expected an entry id)`},
		{fmt.Errorf("expand: %w", fmt.Errorf(`describe "zz": no entry of session s has that id: %w`, bs.ErrNotFound)), `expand: describe "zz": no entry of session s has that id`},
		{fmt.Errorf("session main/abc of agent main: %w", bs.ErrNotFound), "session main/abc of agent main: not found"},
		{fmt.Errorf("grep: empty pattern (expected text or a regular expression): %w", bs.ErrInvalid), "grep: empty pattern (expected text or a regular expression)"},
		{fmt.Errorf("doctor: no store: %w", bs.ErrInvalid), "doctor: no store: invalid input"},
		{errors.New("a sentence that only looks like it: not found"), "a sentence that only looks like it: not found"},
		{fmt.Errorf("the id zz given for session s: %w", bs.ErrInvalid), "the id zz given for session s: invalid input"},
		{fmt.Errorf("no session called x was found: %w (try later)", bs.ErrNotFound), "no session called x was found: not found (try later)"},
	} {
		if got := bs.ErrorMessage(tc.err); got != tc.want {
			t.Errorf("ErrorMessage(%q) = %q, expected %q", tc.err, got, tc.want)
		}
	}
}
