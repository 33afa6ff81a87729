package session_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// writeCompacted writes a v3 transcript of about size bytes made of tool
// turns, with a compaction entry every 50 turns that keeps the last two
// turns (as a long-running session compacted by the host looks).
func writeCompacted(tb testing.TB, path string, size int64) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := synth.Compacted(f, synth.CompactedOptions{Size: size}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkContextLoad100MB loads the model context of a 100 MB
// transcript with compactions from the end (target < 100 ms); the full
// read (Open + Context) is measured beside it.
func BenchmarkContextLoad100MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.jsonl")
	writeCompacted(b, path, 100<<20)
	ctx := context.Background()
	b.Run("FromEnd", func(b *testing.B) {
		for b.Loop() {
			lc, err := session.LoadContext(ctx, path, bs.SessionRef{})
			if err != nil || lc.FullRead || lc.Compaction == nil || len(lc.Entries) == 0 {
				b.Fatalf("LoadContext: %v (full read %v, %d entries)", err, lc.FullRead, len(lc.Entries))
			}
		}
	})
	b.Run("OpenAndContext", func(b *testing.B) {
		for b.Loop() {
			tr, err := session.Open(ctx, path, bs.SessionRef{}, nil)
			if err != nil || tr.Context().Compaction < 0 {
				b.Fatal(err)
			}
		}
	})
}

// TestLoadContextCompacted checks the generated transcript of the
// benchmark (small) against the full read.
func TestLoadContextCompacted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	writeCompacted(t, path, 3<<20)
	lc := checkLoaded(t, path)
	if lc.FullRead || lc.Compaction == nil {
		t.Errorf("FullRead = %v (%s), compaction %v; want a read from the end that finds a compaction", lc.FullRead, lc.FullReadReason, lc.Compaction != nil)
	}
}
