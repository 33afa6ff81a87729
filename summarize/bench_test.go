package summarize

import (
	"bytes"
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// benchLines is a synthetic context of about 400 KB (~100K tokens at four
// bytes a token) mixing the package's own synthetic transcript, repeated,
// with synth's tool-heavy turns.
func benchLines(b *testing.B) [][]byte {
	b.Helper()
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: 300 << 10, Seed: 7, MinResult: 500, MaxResult: 8000}); err != nil {
		b.Fatal(err)
	}
	lines := splitLines(buf.Bytes())
	own := readLines(b, "testdata/synthetic.jsonl")
	for inputSize(lines) < 400<<10 {
		lines = append(lines, own...)
	}
	return lines
}

// BenchmarkDeterministic100K measures the deterministic summary of a
// ~100K-token context (target < 200 ms).
func BenchmarkDeterministic100K(b *testing.B) {
	lines := benchLines(b)
	b.SetBytes(int64(inputSize(lines)))
	d := &Deterministic{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Summarize(context.Background(), lines, "frost"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrompt100K measures building the normal prompt of the same
// context.
func BenchmarkPrompt100K(b *testing.B) {
	lines := benchLines(b)
	b.SetBytes(int64(inputSize(lines)))
	b.ReportAllocs()
	for b.Loop() {
		_ = BuildPrompt(lines, "", Normal)
	}
}
