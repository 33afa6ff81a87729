package recall_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// benchSize is the generated transcript's size: large enough that the
// file, not the setup, is what is measured.
const benchSize = 64 << 20

var benchOnce struct {
	sync.Once
	path string
	err  error
}

// benchTranscript generates, once per test binary, a 64 MB transcript
// with the corpus's value sizes, in a temp dir removed by TestMain.
func benchTranscript(b *testing.B) bs.Transcript {
	b.Helper()
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bs-recall-bench-")
		if err != nil {
			benchOnce.err = err
			return
		}
		benchOnce.path = filepath.Join(dir, "big.jsonl")
		f, err := os.Create(benchOnce.path)
		if err != nil {
			benchOnce.err = err
			return
		}
		defer f.Close()
		_, benchOnce.err = synth.Generate(f, synth.Options{Size: benchSize, Density: synth.DensityReal})
	})
	if benchOnce.err != nil {
		b.Fatal(benchOnce.err)
	}
	tr, err := session.Open(context.Background(), benchOnce.path, bs.SessionRef{Agent: "main"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return tr
}

func TestMain(m *testing.M) {
	code := oracle.Run(m)
	if benchOnce.path != "" {
		os.RemoveAll(filepath.Dir(benchOnce.path))
	}
	os.Exit(code)
}

// TestSetup says, as a skip, when the shared corpus is missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared) }

// BenchmarkGrep searches a 64 MB transcript for a pattern that does not
// occur (the whole file is read): plain text (most lines skipped on their
// raw bytes), plain text ignoring case, a regular expression with a
// literal prefix (lines skipped on it), one without (every line parsed
// and every value decoded). Throughput is in MB/s of transcript.
func BenchmarkGrep(b *testing.B) {
	tr := benchTranscript(b)
	size := tr.(*session.Transcript).Size()
	for _, bb := range []struct {
		name, pattern string
		o             recall.GrepOptions
	}{
		{"plain", "no such text anywhere", recall.GrepOptions{}},
		{"plain-ignore-case", "No Such Text Anywhere", recall.GrepOptions{IgnoreCase: true}},
		{"regexp", `no such \w+ anywhere`, recall.GrepOptions{Regexp: true}},
		{"regexp-no-literal", `[Nn]o such \w+ anywhere`, recall.GrepOptions{Regexp: true}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				for _, err := range recall.Grep(context.Background(), tr, nil, bb.pattern, bb.o) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
