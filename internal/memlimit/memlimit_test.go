package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct{ largest, want int64 }{
		{0, Min},
		{50 << 20, Min},
		{96 << 20, Min},
		{100 << 20, 50 << 20},
		{1 << 30, 512 << 20},
	} {
		if got := For(tc.largest); got != tc.want {
			t.Errorf("For(%d) = %d, want %d", tc.largest, got, tc.want)
		}
	}
}

func TestSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	if got := Set(200 << 20); got != 100<<20 || debug.SetMemoryLimit(-1) != 100<<20 {
		t.Errorf("Set = %d, runtime limit %d; want %d", got, debug.SetMemoryLimit(-1), 100<<20)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	if got := Set(200 << 20); got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set: Set = %d, runtime limit %d; want 0 and no change", got, debug.SetMemoryLimit(-1))
	}
}
