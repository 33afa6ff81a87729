package session_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
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
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	n := 0
	parent := ""
	line := func(typ, body string) string {
		n++
		id := fmt.Sprintf("%08x", uint32(n)*2654435761)
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		s := fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":"2026-03-01T00:00:00.000Z",%s}`+"\n", typ, id, p, body)
		written += int64(len(s))
		w.WriteString(s)
		parent = id
		return id
	}
	w.WriteString(`{"type":"session","version":3,"id":"bench","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/"}` + "\n")
	out := strings.Repeat("output line of a tool, with some text in it\\n", 450) // ~20 KB
	var turnStarts []string
	for turn := 0; written < size; turn++ {
		u := line("message", `"message":{"role":"user","content":[{"type":"text","text":"please run the next step"}]}`)
		turnStarts = append(turnStarts, u)
		call := fmt.Sprintf("call_%d", turn)
		line("message", fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"toolCall","id":%q,"name":"exec","arguments":{"command":"make"}}]}`, call))
		line("message", fmt.Sprintf(`"message":{"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":"%s"}]}`, call, out))
		line("message", `"message":{"role":"assistant","content":[{"type":"text","text":"done"}]}`)
		if turn%50 == 49 {
			line("compaction", fmt.Sprintf(`"summary":"summary of the work so far","firstKeptEntryId":%q,"tokensBefore":150000,"details":{"readFiles":[],"modifiedFiles":[]},"fromHook":false`, turnStarts[len(turnStarts)-2]))
		}
	}
	if err := w.Flush(); err != nil {
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
