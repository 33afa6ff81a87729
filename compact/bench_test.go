package compact_test

import (
	"context"
	"os"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/compact"
)

// BenchmarkCompact100K compacts a 100K-token context (chars/4) with a
// deterministic local summarizer, from reading the transcript to the
// appended entry (target < 200 ms).
func BenchmarkCompact100K(b *testing.B) {
	src := genTranscript(b, 20, 19600) // 20 turns, ~400 KB of lines: ~100K tokens
	orig, err := os.ReadFile(src)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	st, ref := newStore(b, src)
	for _, dry := range []bool{false, true} {
		name := "Append"
		if dry {
			name = "DryRun"
		}
		b.Run(name, func(b *testing.B) {
			tokens := 0
			for b.Loop() {
				b.StopTimer()
				if err := os.WriteFile(ref.Path, orig, 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, DryRun: dry, Summarizer: extractiveSummarizer{}})
				if err != nil || res.MessagesCompacted == 0 || (!dry && res.EntryID == "") {
					b.Fatalf("%+v, %v", res, err)
				}
				tokens = res.TokensBefore
			}
			b.ReportMetric(float64(tokens), "tokens_before")
		})
	}
}
