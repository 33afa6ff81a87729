package testcorpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RaceSampleMaxBytes bounds the real transcripts [RaceSample] keeps under the race detector, but for the largest.
const RaceSampleMaxBytes = 512 << 10

// RaceSample returns files (from [Transcripts] or [Real]) unchanged, except under the race detector (go test
// -race), where it keeps the self-made corpus (every shape the hosts write), the real transcripts of at most
// [RaceSampleMaxBytes] and the largest real transcript, and logs what it left out. It is for tests whose
// concurrency does not depend on the file: a race is a property of the code's goroutines and locks, which every
// file drives the same way, so the race run gains nothing per extra file while costing 5 to 10 times the plain
// run's time on the large ones. The plain run (go test without -race, which CI runs too) still checks every file.
// A test whose concurrency does depend on the file (parallel reads split by offsets, say) keeps the whole corpus.
func RaceSample(tb testing.TB, files []string) []string {
	tb.Helper()
	if !raceEnabled {
		return files
	}
	largest, size := -1, int64(-1)
	sizes := make([]int64, len(files))
	for i, f := range files {
		if IsSelfMade(f) {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			tb.Fatal(err)
		}
		sizes[i] = fi.Size()
		if fi.Size() > size {
			largest, size = i, fi.Size()
		}
	}
	var out, left []string
	var leftBytes int64
	for i, f := range files {
		if IsSelfMade(f) || i == largest || sizes[i] <= RaceSampleMaxBytes {
			out = append(out, f)
			continue
		}
		left = append(left, filepath.Base(f))
		leftBytes += sizes[i]
	}
	if len(left) > 0 {
		tb.Logf("race detector: %d of %d corpus files run here (the self-made corpus, real files up to %d bytes and the largest); left out %d files, %.1f MB, which the run without -race checks: %s",
			len(out), len(files), RaceSampleMaxBytes, len(left), float64(leftBytes)/(1<<20), strings.Join(left, ", "))
	}
	return out
}

// RaceEnabled reports whether the test binary runs under the race detector (go test -race), for a test that
// runs a cheaper sample of its cases there (see [RaceSample] for why that loses nothing).
func RaceEnabled() bool { return raceEnabled }
