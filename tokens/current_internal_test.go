package tokens

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// TestCurrentOnCorpus checks the public path end to end: a corpus
// transcript cut just before a turn, learned with Learn, must give that
// turn's recorded context from Current (an ordinary turn, case (a), and
// the first turn after a compaction, case (b)). The cut copies live in a
// temporary directory.
func TestCurrentOnCorpus(t *testing.T) {
	ctx := context.Background()
	checked := map[string]int{}
	// Measured against the usage the host recorded: the real corpus only
	// (the self-made corpus's usage is made up).
	for _, file := range testcorpus.Real(t) {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(raw, []byte("\n"))
		tr, err := session.Open(ctx, file, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := scan(ctx, tr, []Tokenizer{CharsPer4{}})
		if err != nil {
			t.Fatal(err)
		}
		var targets []struct {
			kind string
			a    *anchor
		}
		for k := len(tl.anchors) / 2; k < len(tl.anchors) && len(targets) < 2; k += max(len(tl.anchors)/6, 1) {
			a := &tl.anchors[k]
			if k > 0 && tl.anchors[k-1].epoch == a.epoch && !a.saturated && tl.anchors[k-1].model == a.model {
				targets = append(targets, struct {
					kind string
					a    *anchor
				}{"a", a})
			}
		}
		for _, cp := range tl.comps {
			if cp.after >= 0 && cp.before > 0 && !tl.anchors[cp.after].saturated && tl.anchors[cp.before-1].model == tl.anchors[cp.after].model && len(usable(tl.anchors[:cp.before])) > 0 {
				targets = append(targets, struct {
					kind string
					a    *anchor
				}{"b", &tl.anchors[cp.after]})
				break
			}
		}
		for _, tg := range targets {
			line := tl.items[tg.a.item].line
			p := filepath.Join(t.TempDir(), "cut.jsonl")
			if err := os.WriteFile(p, bytes.Join(lines[:line-1], nil), 0o600); err != nil {
				t.Fatal(err)
			}
			cut, err := session.Open(ctx, p, bs.SessionRef{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Learn(ctx, cut, CharsPer4{})
			if err != nil {
				t.Fatal(err)
			}
			cur := m.Current()
			rel := math.Abs(float64(cur.Tokens-tg.a.ctx)) / float64(tg.a.ctx)
			lim := map[string]float64{"a": 0.03, "b": 0.25}[tg.kind]
			if rel > lim {
				t.Errorf("%s, case (%s) at line %d: Current() = %+v, recorded %d (%.1f%% off, want at most %.0f%%)", testcorpus.Name(file), tg.kind, line, cur, tg.a.ctx, 100*rel, 100*lim)
			}
			if want := map[string]string{"a": "usage+calibrated", "b": NameCalibrated}[tg.kind]; cur.Method != want {
				t.Errorf("%s, case (%s) at line %d: Method %q, want %q", testcorpus.Name(file), tg.kind, line, cur.Method, want)
			}
			checked[tg.kind]++
		}
	}
	t.Logf("checked %d ordinary turns and %d first turns after a compaction", checked["a"], checked["b"])
	if checked["a"] < 5 || checked["b"] < 3 {
		t.Errorf("checked %v, want at least 5 (a) and 3 (b)", checked)
	}
}

// TestContextMatchesHost checks that the context scan rebuilds at the end
// of each corpus transcript is the one the transcript's store builds as
// the host does (bs.Transcript.Context), less the messages the host does
// not send (failed turns, transcript-only assistants).
func TestContextMatchesHost(t *testing.T) {
	ctx := context.Background()
	for _, file := range testcorpus.Transcripts(t) {
		tr, err := session.Open(ctx, file, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := scan(ctx, tr, []Tokenizer{CharsPer4{}})
		if err != nil {
			t.Fatal(err)
		}
		skip := map[int]bool{}
		for _, m := range tl.items {
			if m.skip {
				skip[m.line] = true
			}
		}
		c := tr.Context()
		var want []int
		if c.Compaction >= 0 {
			want = append(want, tr.Nodes()[c.Compaction].Line)
		}
		for _, i := range c.Messages {
			if l := tr.Nodes()[i].Line; !skip[l] {
				want = append(want, l)
			}
		}
		var got []int
		for _, it := range tl.live {
			got = append(got, tl.items[it].line)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: context lines differ: got %d lines, want %d", testcorpus.Name(file), len(got), len(want))
		}
	}
}
