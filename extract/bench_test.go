package extract_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/memlimit"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// benchDensities are the generated inputs of the pass benchmarks, each
// run as a sub-benchmark named density=<name>: "today", tool results and
// thinking of 5–50 KB (about 6,700 extracted entries per 100 MB), and
// "real", the corpus's 500–5,000-byte values (about 20,000 per 100 MB).
var benchDensities = []struct {
	name string
	opts synth.Options
}{
	{"today", synth.Options{Size: 100 << 20, MinResult: 5000, MaxResult: 50000, MinThinking: 5000, MaxThinking: 50000, ImageEvery: 20}},
	{"real", synth.Options{Size: 100 << 20, Density: synth.DensityReal}},
}

var benchSrc = map[string]string{}

// benchSource generates, once per density, a 100 MB OpenClaw-shaped
// transcript.
func benchSource(b *testing.B, name string, o synth.Options) string {
	if p := benchSrc[name]; p != "" {
		return p
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
	st, err := synth.Generate(f, o)
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.Logf("generated %d bytes, %d lines, %d turns (density=%s)", st.Bytes, st.Lines, st.Turns, name)
	benchSrc[name] = p
	return p
}

// benchDensity runs fn as one sub-benchmark per density.
func benchDensity(b *testing.B, fn func(b *testing.B, src string)) {
	for _, d := range benchDensities {
		b.Run("density="+d.name, func(b *testing.B) { fn(b, benchSource(b, d.name, d.opts)) })
	}
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

// sampler records the peak of the heap's objects while a pass runs. It
// reads runtime/metrics, which does not stop the world (ReadMemStats
// does, and sampling it every few milliseconds slowed the pass it
// measured).
type sampler struct {
	max  atomic.Uint64
	done chan struct{}
}

func startSampler() *sampler {
	runtime.GC()
	s := &sampler{done: make(chan struct{})}
	go func() {
		m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				metrics.Read(m)
				if v := m[0].Value.Uint64(); v > s.max.Load() {
					s.max.Store(v)
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() uint64 { close(s.done); return s.max.Load() }

func benchPass(b *testing.B, src string, p extract.Policy, wantWrite bool) {
	fi, _ := os.Stat(src)
	b.SetBytes(fi.Size())
	// The soft memory limit the binaries set for a pass (brainsurgeon
	// prune, the daemon of serve), so that peak-heap-MB is the product's.
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(memlimit.For(fi.Size())))
	}
	var peak uint64
	var res *extract.Result
	// The phases are summed over the passes and reported per pass: one
	// pass's figures swing with the disk's fsync latency.
	var read, encode, sync, rewrite time.Duration
	// cp is the time of the copies (cp + sync of the same file, on the
	// same disk) made for the passes: the yardstick.
	var cp time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := filepath.Join(b.TempDir(), "agents")
		dir := filepath.Join(root, "main", "sessions")
		os.MkdirAll(dir, 0o700)
		path := filepath.Join(dir, "bench.jsonl")
		t0 := time.Now()
		copyFile(b, src, path)
		cp += time.Since(t0)
		st := session.NewStore(root)
		ref, err := st.Resolve(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st)}
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
		read += res.ReadTime
		encode += res.SideTime - res.SyncTime
		sync += res.SyncTime
		rewrite += res.WriteTime
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	if b.N > 0 && b.Elapsed() > 0 {
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric((cp / time.Duration(b.N)).Seconds(), "cp-sync-s")
		b.ReportMetric(float64(cp/time.Duration(b.N))/float64(per), "share-of-cp-sync")
	}
	b.ReportMetric(float64(res.Entries), "entries-extracted")
	b.ReportMetric(float64(res.SideBytes)/(1<<20), "side-MB")
	n := time.Duration(max(b.N, 1))
	b.ReportMetric((read / n).Seconds(), "read-s")
	b.ReportMetric((encode / n).Seconds(), "encode-compress-s")
	b.ReportMetric((sync / n).Seconds(), "pack-sync-s")
	b.ReportMetric((rewrite / n).Seconds(), "rewrite-s")
}

// BenchmarkExtractPass is one extraction pass over a generated 100 MB
// transcript at each density (see benchDensities), side files and their
// fsync included, beside cp + sync of the same file on the same disk
// (cp-sync-s; share-of-cp-sync is the pass's speed as a share of it). The
// floor: a share of 0.25 and peak heap ≤ 64 MB; goal 0.5.
func BenchmarkExtractPass(b *testing.B) {
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	benchDensity(b, func(b *testing.B, src string) { benchPass(b, src, p, true) })
}

// BenchmarkExtractNothing is a pass over the same transcript in which
// nothing qualifies. Target: ≥ 500 MB/s, nothing written.
func BenchmarkExtractNothing(b *testing.B) {
	p := extract.DefaultPolicy()
	p.MinValueLength = 1 << 30
	benchDensity(b, func(b *testing.B, src string) { benchPass(b, src, p, false) })
}
