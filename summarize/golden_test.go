package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// readLines reads a JSONL file into raw lines.
func readLines(tb testing.TB, path string) [][]byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run with -update to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update to accept)\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

func TestGoldenDeterministic(t *testing.T) {
	lines := readLines(t, "testdata/synthetic.jsonl")
	for _, tc := range []struct {
		name, focus string
		d           Deterministic
	}{
		{"deterministic.golden.md", "", Deterministic{}},
		{"deterministic-roomy.golden.md", "", Deterministic{Ratio: 1}},
		{"deterministic-focus.golden.md", "catalogue", Deterministic{MinBytes: 1500}},
		{"deterministic-small.golden.md", "", Deterministic{MaxBytes: 900, MinBytes: 900}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := tc.d.Summarize(context.Background(), lines, tc.focus)
			s, degraded := sum.Text, sum.Degraded
			if err != nil {
				t.Fatal(err)
			}
			if !degraded {
				t.Error("deterministic summary not marked degraded")
			}
			if lim := tc.d.Limit(inputSize(lines)); len(s) > lim {
				t.Errorf("summary is %d bytes, over its limit %d", len(s), lim)
			}
			golden(t, tc.name, []byte(s))
			// The fold over the same lines writes the same summary, and
			// keeps no line's bytes: each is read into one reused buffer
			// that is spoiled once the next line is asked for.
			var buf []byte
			seq := func(yield func([]byte, error) bool) {
				for _, l := range lines {
					buf = append(buf[:0], l...)
					if !yield(buf, nil) {
						return
					}
					clear(buf)
				}
			}
			seqSum, err := tc.d.SummarizeSeq(context.Background(), seq, tc.focus)
			if err != nil {
				t.Fatal(err)
			}
			if seqSum != sum {
				t.Errorf("SummarizeSeq = %+v\nwant Summarize's %+v", seqSum, sum)
			}
		})
	}
}

// TestSummarizeSeqError checks that a failed read fails the summary.
func TestSummarizeSeqError(t *testing.T) {
	lines := readLines(t, "testdata/synthetic.jsonl")
	boom := errors.New("boom")
	seq := func(yield func([]byte, error) bool) {
		if yield(lines[0], nil) {
			yield(nil, boom)
		}
	}
	if _, err := (&Deterministic{}).SummarizeSeq(context.Background(), seq, ""); !errors.Is(err, boom) {
		t.Errorf("SummarizeSeq of a failed read: err = %v, want one wrapping %v", err, boom)
	}
}

func TestGoldenFacts(t *testing.T) {
	f := ExtractFacts(readLines(t, "testdata/synthetic.jsonl"))
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "facts.golden.json", append(b, '\n'))
}

func TestGoldenPrompt(t *testing.T) {
	lines := readLines(t, "testdata/synthetic.jsonl")
	for _, v := range []Variant{Normal, Aggressive} {
		p := BuildPrompt(lines, "frost dates", v)
		golden(t, "prompt-"+string(v)+".golden.txt", []byte(p.System+"\n\n=== user ===\n"+p.User+"\n"))
	}
}

func inputSize(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}
