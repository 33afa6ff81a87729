package compact_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

// BenchmarkCompact100K compacts a 100K-token context with the
// deterministic summarizer (summarize.Deterministic) and the default
// calibrated token estimate, from reading the transcript to the appended
// entry (seed limit 10 s, target < 200 ms). Two shapes: 20 turns of large
// tool results, and 200 turns of smaller ones.
func BenchmarkCompact100K(b *testing.B) {
	calibrated := compact.Calibrated(nil)
	for _, shape := range []struct{ turns, result int }{{20, 19600}, {200, 1900}} {
		src := genTranscript(b, shape.turns, shape.result) // ~400 KB of lines: ~100K tokens
		orig, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		st, ref := newStore(b, src)
		for _, dry := range []bool{false, true} {
			name := fmt.Sprintf("turns=%d/append", shape.turns)
			if dry {
				name = fmt.Sprintf("turns=%d/dry-run", shape.turns)
			}
			b.Run(name, func(b *testing.B) {
				tok := 0
				for b.Loop() {
					b.StopTimer()
					if err := os.WriteFile(ref.Path, orig, 0o600); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, DryRun: dry,
						Summarizer: &summarize.Deterministic{}, Tokens: calibrated})
					if err != nil || res.MessagesCompacted == 0 || (!dry && res.EntryID == "") {
						b.Fatalf("%+v, %v", res, err)
					}
					tok = res.TokensBefore
				}
				b.ReportMetric(float64(tok), "tokens_before")
			})
		}
	}
}
