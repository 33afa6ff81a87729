package session_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
)

var benchFiles sync.Map

// benchTranscript returns the path of a generated transcript of about size
// bytes, generated once per test binary run into the system temp dir.
func benchTranscript(b *testing.B, size int64, o synth.Options) string {
	b.Helper()
	o.Size = size
	key := fmt.Sprintf("%+v", o)
	if p, ok := benchFiles.Load(key); ok {
		return p.(string)
	}
	dir, err := os.MkdirTemp("", "bs-bench-")
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, "bench.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := synth.Generate(f, o); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	benchFiles.Store(key, p)
	return p
}

// peakHeap samples the live heap while fn runs and returns the highest
// value seen above the heap in use before fn started.
func peakHeap(fn func()) (peak uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var max atomic.Uint64
	done := make(chan struct{})
	go func() {
		// runtime/metrics does not stop the world, as ReadMemStats does.
		m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(m)
				if v := m[0].Value.Uint64(); v > max.Load() {
					max.Store(v)
				}
			}
		}
	}()
	fn()
	close(done)
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > max.Load() {
		max.Store(ms.HeapAlloc)
	}
	if m := max.Load(); m > base {
		return m - base
	}
	return 0
}

// BenchmarkReadClassify reads a generated 100 MB OpenClaw-shaped transcript
// line by line, parses every line and classifies its values. It reports
// MB/s and the peak heap above the starting heap (peak-heap-MB) and the
// largest line (max-line-MB). Target: ≥ 300 MB/s, peak heap ≤ 2 × largest
// line + 16 MB.
func BenchmarkReadClassify(b *testing.B) {
	path := benchTranscript(b, 100<<20, synth.Options{ImageEvery: 10})
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var peak uint64
	maxLine := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			r := session.NewReader(f)
			n := 0
			for r.Next() {
				n += len(entry.Classify(r.Entry()))
				if len(r.Raw()) > maxLine {
					maxLine = len(r.Raw())
				}
			}
			if r.Err() != nil || n == 0 {
				b.Fatalf("read: %v, %d candidates", r.Err(), n)
			}
		})
		if p > peak {
			peak = p
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(maxLine)/(1<<20), "max-line-MB")
}

// BenchmarkOpen indexes a generated 100 MB transcript (tree, active path,
// context) with session.Open.
func BenchmarkOpen(b *testing.B) {
	path := benchTranscript(b, 100<<20, synth.Options{ImageEvery: 10})
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ReportAllocs()
	var peak uint64
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			tr, err := session.Open(b.Context(), path, refOf(path), nil)
			if err != nil {
				b.Fatal(err)
			}
			if tr.Context().Count() == 0 {
				b.Fatal("empty context")
			}
		})
		if p > peak {
			peak = p
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
}

// BenchmarkReadClassifyHugeLine is BenchmarkReadClassify on a 100 MB
// transcript whose middle line alone is 50 MB (a tool result). It checks the
// memory bound: peak heap ≤ 2 × the largest line + 16 MB.
func BenchmarkReadClassifyHugeLine(b *testing.B) {
	path := benchTranscript(b, 50<<20, synth.Options{ImageEvery: 10})
	huge := path + ".huge.jsonl"
	if _, err := os.Stat(huge); err != nil {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		half := len(src) / 2
		for src[half-1] != '\n' {
			half++
		}
		line := make([]byte, 0, 50<<20+200)
		line = append(line, `{"type":"message","id":"hugeline","parentId":null,"timestamp":"2026-03-02T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"t","toolName":"exec","content":[{"type":"text","text":"`...)
		for len(line) < 50<<20 {
			line = append(line, `lorem ipsum \"dolor\" sit amet\n`...)
		}
		line = append(line, "\"}],\"isError\":false}}\n"...)
		out := append(append(append([]byte{}, src[:half]...), line...), src[half:]...)
		if err := os.WriteFile(huge, out, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	st, _ := os.Stat(huge)
	b.SetBytes(st.Size())
	var peak uint64
	maxLine := 0
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			f, err := os.Open(huge)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			r := session.NewReader(f)
			for r.Next() {
				entry.Classify(r.Entry())
				if len(r.Raw()) > maxLine {
					maxLine = len(r.Raw())
				}
			}
			if r.Err() != nil {
				b.Fatal(r.Err())
			}
		})
		if p > peak {
			peak = p
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(maxLine)/(1<<20), "max-line-MB")
}
