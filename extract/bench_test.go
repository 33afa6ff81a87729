package extract_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
)

var benchSrc string

// benchSource generates, once, a 100 MB OpenClaw-shaped transcript whose
// tool results and thinking blocks are 5–50 KB.
func benchSource(b *testing.B) string {
	if benchSrc != "" {
		return benchSrc
	}
	dir, err := os.MkdirTemp("", "bs-xbench-")
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "src.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	st, err := synth.Generate(f, synth.Options{Size: 100 << 20, MinResult: 5000, MaxResult: 50000, MinThinking: 5000, MaxThinking: 50000, ImageEvery: 20})
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.Logf("generated %d bytes, %d lines, %d turns", st.Bytes, st.Lines, st.Turns)
	benchSrc = p
	return p
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	// A real transcript is on disk already: flush the copy so the pass
	// does not pay for it.
	if err := out.Sync(); err != nil {
		b.Fatal(err)
	}
	// An old modification time: the session is idle.
	out.Close()
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dst, old, old)
}

type sampler struct {
	max  atomic.Uint64
	done chan struct{}
}

func startSampler() *sampler {
	runtime.GC()
	s := &sampler{done: make(chan struct{})}
	go func() {
		var m runtime.MemStats
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > s.max.Load() {
					s.max.Store(m.HeapAlloc)
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() uint64 { close(s.done); return s.max.Load() }

func benchPass(b *testing.B, p extract.Policy, wantWrite bool) {
	src := benchSource(b)
	fi, _ := os.Stat(src)
	b.SetBytes(fi.Size())
	var peak uint64
	var res *extract.Result
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := filepath.Join(b.TempDir(), "agents")
		dir := filepath.Join(root, "main", "sessions")
		os.MkdirAll(dir, 0o700)
		path := filepath.Join(dir, "bench.jsonl")
		copyFile(b, src, path)
		st := session.NewStore(root)
		ref, err := st.Resolve(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		x := &extract.Extractor{Policy: p, Store: st, Side: extract.NewDirStore(st)}
		s := startSampler()
		b.StartTimer()
		res, err = x.Run(context.Background(), ref)
		b.StopTimer()
		if m := s.stop(); m > peak {
			peak = m
		}
		if err != nil {
			b.Fatal(err)
		}
		if res.Written != wantWrite {
			b.Fatalf("written = %v: %+v", res.Written, res)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(res.Entries), "entries-extracted")
	b.ReportMetric(float64(res.SideBytes)/(1<<20), "side-MB")
	b.ReportMetric(res.ReadTime.Seconds(), "read-s")
	b.ReportMetric(res.SideTime.Seconds(), "side-s")
	b.ReportMetric(res.WriteTime.Seconds(), "rewrite-s")
}

// BenchmarkExtractPass is one extraction pass over a generated 100 MB
// transcript (5–50 KB tool results and thinking), side files and their
// fsync included. Targets: ≥ 150 MB/s, peak heap ≤ 64 MB.
func BenchmarkExtractPass(b *testing.B) {
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	benchPass(b, p, true)
}

// BenchmarkExtractNothing is a pass over the same transcript in which
// nothing qualifies. Target: ≥ 500 MB/s, nothing written.
func BenchmarkExtractNothing(b *testing.B) {
	p := extract.DefaultPolicy()
	p.MinValueLength = 1 << 30
	benchPass(b, p, false)
}
