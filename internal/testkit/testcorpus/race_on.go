//go:build race

package testcorpus

// raceEnabled says the test binary runs under the race detector (go test -race).
const raceEnabled = true
