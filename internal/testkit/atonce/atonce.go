// Package atonce runs subtests that mostly wait (for fsync, a browser, a
// child process) several at a time.
//
// t.Parallel runs at most -parallel subtests at once, GOMAXPROCS by
// default: right for tests that compute, too few for tests that wait, and
// CI runs the plain `go test ./...`. Run starts each subtest with t.Run
// from its own goroutine (the testing package allows it), at most n at
// once, and returns when all have ended. Subtests that run this way must
// not share anything they change, exactly as with t.Parallel.
package atonce

import (
	"sync"
	"testing"
)

// Case is one subtest: its name and its body.
type Case struct {
	Name string
	Run  func(t *testing.T)
}

// Run runs cases as subtests of t, at most n at once (at least one), and
// returns when every one has ended.
func Run(t *testing.T, n int, cases []Case) {
	t.Helper()
	sem := make(chan struct{}, max(n, 1))
	var wg sync.WaitGroup
	for _, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.Name, c.Run)
		})
	}
	wg.Wait()
}
