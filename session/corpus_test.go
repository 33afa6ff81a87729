package session_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// corpusTranscripts returns every transcript of the shared corpus (read in
// place, never copied into the repository) plus the bundled demo.
func corpusTranscripts(t testing.TB) []string {
	t.Helper()
	files := testcorpus.Transcripts(t)
	demo, err := filepath.Glob(filepath.Join("..", "testdata", "demo", "agents", "*", "sessions", "*.jsonl"))
	if err != nil || len(demo) == 0 {
		t.Fatalf("demo transcript missing: %v", err)
	}
	return append(files, demo...)
}

func shortName(p string) string {
	if !strings.Contains(p, "corpus/openclaw/") && !testcorpus.IsSelfMade(p) {
		return "demo/" + filepath.Base(p)
	}
	return testcorpus.Name(p)
}

// TestCorpusRoundTrip reads every corpus transcript line by line and writes
// the raw lines back: the result must be byte-identical.
func TestCorpusRoundTrip(t *testing.T) {
	for _, f := range corpusTranscripts(t) {
		t.Run(shortName(f), func(t *testing.T) {
			orig, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			r := session.NewReader(bytes.NewReader(orig))
			lines := 0
			for r.Next() {
				lines++
				out.Write(r.Raw())
				if r.Terminated() {
					out.WriteByte('\n')
				}
				_ = r.Entry() // parsing must not disturb the bytes
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(out.Bytes()) != sha256.Sum256(orig) {
				t.Fatalf("round trip differs: %d bytes in, %d out", len(orig), out.Len())
			}
			if want := bytes.Count(orig, []byte("\n")); lines != want && lines != want+1 {
				t.Fatalf("lines = %d, file has %d newlines", lines, want)
			}
		})
	}
}

// TestCorpusMalformedLines checks that the two known glued lines of the
// pi-mono fixtures, and the malformed and glued lines of the self-made
// corpus (every line that is not one JSON value), are reported with their
// line numbers and kept.
func TestCorpusMalformedLines(t *testing.T) {
	want := map[string][]int{
		"badlogic__pi-mono/compact.jsonl":                 {1013},
		"badlogic__pi-mono/session.jsonl":                 {440},
		"demo/7f3e2a10-5b6c-4d8e-9f01-23456789abcd.jsonl": {6},
	}
	for _, f := range corpusTranscripts(t) {
		name := shortName(f)
		tr, err := session.Open(context.Background(), f, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []int
		for _, le := range tr.Malformed() {
			got = append(got, le.Line)
			if !strings.Contains(le.Error(), f) {
				t.Errorf("%s: error %q does not name the file", name, le)
			}
		}
		w := want[name]
		if testcorpus.IsSelfMade(f) {
			w = invalidLines(t, f)
		}
		if !equalInts(got, w) {
			t.Errorf("%s: malformed lines = %v, want %v", name, got, w)
		}
	}
}

// invalidLines returns the numbers of the lines of f that are not one JSON
// value, as encoding/json sees them.
func invalidLines(t *testing.T, f string) []int {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if !json.Valid(bytes.TrimSuffix(l, []byte("\r"))) {
			out = append(out, i+1)
		}
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOracleAgreement compares, for every v2/v3 corpus transcript, the
// active leaf, the entry count and the number of context messages with the
// real pi SessionManager.
func TestOracleAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("loads every v2/v3 corpus transcript in the pi oracle; skipped with -short")
	}
	t.Parallel()
	oracle.Require(t)
	files := corpusTranscripts(t)
	var v23 []string
	trs := map[string]*session.Transcript{}
	for _, f := range files {
		tr, err := session.Open(context.Background(), f, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header().Version >= 2 && !testcorpus.IsFlat(f) {
			v23 = append(v23, f)
			trs[f] = tr
		}
	}
	if want := map[bool]int{true: 15, false: 6}[testcorpus.HasReal(v23)]; len(v23) < want {
		t.Fatalf("found %d v2/v3 transcripts, want at least %d", len(v23), want)
	}
	sums, err := oracle.Summary(context.Background(), v23...)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range v23 {
		s, tr := sums[i], trs[f]
		t.Run(shortName(f), func(t *testing.T) {
			leaf, _ := tr.Leaf()
			if leaf == nil || leaf.ID != s.Leaf() {
				t.Errorf("leaf = %v, oracle %q", leaf, s.Leaf())
			}
			if got := tr.EntryCount(); got != s.EntryCount {
				t.Errorf("entry count = %d, oracle %d", got, s.EntryCount)
			}
			if got := tr.Context().Count(); got != s.ContextMessageCount {
				t.Errorf("context messages = %d, oracle %d", got, s.ContextMessageCount)
			}
			c := tr.Context()
			var roles []string
			if c.Compaction >= 0 {
				roles = append(roles, "compactionSummary")
			}
			for _, i := range c.Messages {
				n := tr.Nodes()[i]
				switch n.Type {
				case "custom_message":
					roles = append(roles, "custom")
				case "branch_summary":
					roles = append(roles, "branchSummary")
				default:
					roles = append(roles, n.Role)
				}
			}
			for i, m := range s.Messages {
				if i < len(roles) && roles[i] != m.Role {
					t.Errorf("context message %d: role %q, oracle %q", i, roles[i], m.Role)
					break
				}
			}
			if got := tr.BranchPoints(); got != s.BranchPoints {
				t.Errorf("branch points = %d, oracle %d", got, s.BranchPoints)
			}
		})
	}
}
