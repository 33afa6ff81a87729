package tokens_test

import (
	"context"
	"iter"
	"slices"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// recording is a transcript that remembers which lines were read.
type recording struct {
	bs.Transcript
	read []int
}

func (r *recording) Lines(ctx context.Context, lines []int) iter.Seq2[*bs.Entry, error] {
	r.read = append(r.read, lines...)
	return r.Transcript.Lines(ctx, lines)
}

// TestLearnReadsTheContext: with usage recorded since the latest
// compaction, Learn reads the context's lines only (the compaction, the
// kept turn and what came after), not the history the compaction
// replaced; the prediction follows the latest recorded usage.
func TestLearnReadsTheContext(t *testing.T) {
	comp := `{"type":"compaction","id":"c0000001","parentId":"e0000120","timestamp":"2026-03-01T02:00:00.000Z","summary":"the work so far","firstKeptEntryId":"e0000117","tokensBefore":9000}`
	user := `{"type":"message","id":"u0000001","parentId":"c0000001","timestamp":"2026-03-01T02:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go on"}],"timestamp":1}}`
	asst := `{"type":"message","id":"a0000001","parentId":"u0000001","timestamp":"2026-03-01T02:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"anthropic","model":"m","usage":{"input":4321,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":4326},"stopReason":"stop","timestamp":2}}`
	tr := writeSession(t, 30, true, comp, user, asst)
	rec := &recording{Transcript: tr}
	m, err := tokens.Learn(context.Background(), rec, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	first := -1
	for _, n := range tr.Nodes() {
		if n.ID == "e0000117" {
			first = n.Line
		}
	}
	if first < 0 || len(rec.read) == 0 || slices.Min(rec.read) < first {
		t.Errorf("Learn read lines %v; want none before the first kept entry's line %d", rec.read, first)
	}
	cur := m.Current()
	if cur.Method != "usage+calibrated" || cur.Anchor != "a0000001" || cur.Tokens < 4321 || cur.Tokens > 4321+20 {
		t.Errorf("Current() = %+v, want the usage of a0000001 (4,321 tokens) plus its own few", cur)
	}
}
