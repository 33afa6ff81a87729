package plural_test

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "0 entries"},
		{1, "1 entry"},
		{-1, "-1 entry"},
		{2, "2 entries"},
		{1000, "1000 entries"},
	} {
		if got := plural.Count(tc.n, "entry", "entries"); got != tc.want {
			t.Errorf("Count(%d) = %q, expected %q", tc.n, got, tc.want)
		}
	}
	if got := plural.Noun(1, "is", "are"); got != "is" {
		t.Errorf("Noun(1) = %q", got)
	}
}

func TestCountTypes(t *testing.T) {
	if got := plural.Count(int64(1), "byte", "bytes"); got != "1 byte" {
		t.Errorf("int64: %q", got)
	}
	if got := plural.Count(uint64(18446744073709551615), "byte", "bytes"); got != "18446744073709551615 bytes" {
		t.Errorf("uint64: %q", got)
	}
	if got := plural.Count(int8(-1), "degree", "degrees"); got != "-1 degree" {
		t.Errorf("int8: %q", got)
	}
}
