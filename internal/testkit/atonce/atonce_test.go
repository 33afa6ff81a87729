package atonce_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/atonce"
)

// TestRun checks that every case runs once, never more than n at a time,
// and that more than one runs at once.
func TestRun(t *testing.T) {
	const n, cases = 3, 10
	var running, most, ran atomic.Int32
	var cs []atonce.Case
	for range cases {
		cs = append(cs, atonce.Case{Name: "case", Run: func(t *testing.T) {
			now := running.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			ran.Add(1)
		}})
	}
	atonce.Run(t, n, cs)
	if ran.Load() != cases || most.Load() > n || most.Load() < 2 {
		t.Fatalf("%d cases ran, at most %d at once; want %d, between 2 and %d", ran.Load(), most.Load(), cases, n)
	}
}
