package memlimit

import (
	"errors"
	"math"
	"runtime/debug"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
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

func TestSetFor(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOMEMLIMIT", "")
	stat := func(size int64) bs.StatResult {
		return bs.StatResult{Stat: bs.SessionStat{Version: bs.NewVersion("jsonl", "t", size)}}
	}
	failed := stat(1 << 30)
	failed.Err = errors.New("gone")
	if got := SetFor([]bs.StatResult{stat(100 << 20), failed, stat(300 << 20)}); got != 150<<20 {
		t.Errorf("SetFor = %d, want half the largest transcript that was stated, %d", got, 150<<20)
	}
	if got := SetFor(nil); got != Min {
		t.Errorf("SetFor(nil) = %d, want Min", got)
	}
}
