package engine_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// benchSizes are the sessions of BenchmarkAssemble, in messages (4 a
// turn, results of 2,000 bytes, thinking of 700: about 4, 17 and 70 MB).
var benchSizes = []struct {
	name     string
	messages int
}{{"1k", 1000}, {"16k", 16000}, {"64k", 64000}}

// BenchmarkAssemble serves a session of the engine's test generator
// (engine/helpers_test.go) held in a JSONL file:
//
//   - first: the first call of a session the engine holds nothing of (a
//     fresh state directory: the whole session read, joined, collapsed and
//     summarized with the default settings), with the peak of the heap
//     during the calls (peak-heap-MB);
//   - next: after a served call, one new turn (4 messages appended to the
//     file and to the host's list, sent with Request.Base).
func BenchmarkAssemble(b *testing.B) {
	for _, mode := range []string{"first", "next"} {
		for _, size := range benchSizes {
			b.Run(mode+"/"+size.name, func(b *testing.B) {
				s := newSession(b)
				for k := range size.messages / 4 {
					s.turn(k, 2000, 1000+10*k, false)
				}
				s.write()
				s.lines = nil // the file holds them: not the heap the benchmark measures
				st, ref := openStore(b, s.path)
				benchAssemble(b, mode, st, ref, messagesOf(skeleton(b, s.path)), func() []engine.Message {
					s.turn(s.n/4, 2000, 1000+10*s.n/4, false)
					add := appendLines(b, s.path, s.lines)
					s.lines = s.lines[:0]
					return add
				})
			})
		}
	}
}

// BenchmarkAssembleSQLite is BenchmarkAssemble with the session held in
// an OpenClaw SQLite store (rows as OpenClaw's importer writes them; a new
// turn is four rows inserted by another connection, as the host does).
func BenchmarkAssembleSQLite(b *testing.B) {
	for _, mode := range []string{"first", "next"} {
		for _, size := range benchSizes {
			b.Run(mode+"/"+size.name, func(b *testing.B) {
				s := newSession(b)
				for k := range size.messages / 4 {
					s.turn(k, 2000, 1000+10*k, false)
				}
				s.write()
				host := messagesOf(skeleton(b, s.path))
				state := b.TempDir()
				const id = "5e551011-0000-4000-8000-0000000000a1"
				path := testcorpus.WriteStore(b, filepath.Join(state, "agents"), "main", testcorpus.StoreSession{ID: id, Rows: s.lines})
				rows := len(s.lines)
				s.lines = nil // the store holds them: not the heap the benchmark measures
				db, err := sql.Open("sqlite", "file://"+path+"?mode=rw&_pragma=busy_timeout(5000)")
				if err != nil {
					b.Fatal(err)
				}
				db.SetMaxOpenConns(1)
				defer db.Close()
				store := sqlite.NewStore(state, sqlite.Options{})
				ref := bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: id}
				benchAssemble(b, mode, store, ref, host, func() []engine.Message {
					s.turn(s.n/4, 2000, 1000+10*s.n/4, false)
					for _, line := range s.lines {
						if _, err := db.Exec(`INSERT INTO transcript_events(session_id, seq, event_json, event_utf8_bytes, created_at) VALUES (?, ?, ?, ?, 1)`,
							id, rows, line, len(line)); err != nil {
							b.Fatal(err)
						}
						rows++
					}
					add := skeletonOf(b, s.lines)
					s.lines = s.lines[:0]
					return add
				})
			})
		}
	}
}

// messagesOf returns the skeletons of host (without the contents the
// tests keep).
func messagesOf(host []hostMsg) []engine.Message {
	out := make([]engine.Message, 0, len(host))
	for _, m := range host {
		out = append(out, m.Message)
	}
	return out
}

// appendLines appends lines to the file at path and returns the host's
// messages of them.
func appendLines(tb testing.TB, path string, lines []string) []engine.Message {
	tb.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return skeletonOf(tb, lines)
}

// skeletonOf returns the host's messages of message lines.
func skeletonOf(tb testing.TB, lines []string) []engine.Message {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "lines.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	var out []engine.Message
	for _, m := range skeleton(tb, p) {
		out = append(out, m.Message)
	}
	return out
}

// benchAssemble runs one mode of the benchmarks over a session of store:
// msgs are the host's messages of it, and more appends a turn to the session and returns
// the host's messages of it.
func benchAssemble(b *testing.B, mode string, store bs.Store, ref bs.SessionRef, msgs []engine.Message, more func() []engine.Message) {
	ctx := context.Background()
	root := b.TempDir()
	// What earlier benchmarks of this process left in the engine's caches
	// is not this one's heap.
	dropCaches("")
	dirs := 0
	fresh := func() *engine.Engine {
		dirs++
		dir := filepath.Join(root, fmt.Sprint(dirs))
		e := newEngine(b, store, testPolicy())
		e.StateDir = dir
		return e
	}
	peak := &heapPeak{}
	switch mode {
	case "first":
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			dropCaches(root)
			runtime.GC()
			e := fresh()
			req := engine.Request{Messages: msgs, PromptChars: 40}
			peak.start()
			b.StartTimer()
			v, err := e.Assemble(ctx, ref, req)
			b.StopTimer()
			peak.stop()
			if err != nil || v.Passthrough != "" {
				b.Fatalf("first view: %v, passthrough %q", err, v.Passthrough)
			}
			b.StartTimer()
		}
		b.ReportMetric(peak.mb(), "peak-heap-MB")
		b.ReportMetric(peak.baseMB(), "base-heap-MB")
		b.ReportMetric(float64(peak.live)/(1<<20), "live-heap-MB")
	case "next":
		e := fresh()
		v, err := e.Assemble(ctx, ref, engine.Request{Messages: msgs, PromptChars: 40})
		if err != nil || v.Passthrough != "" || v.Ack == nil {
			b.Fatalf("first view: %v, passthrough %q", err, v.Passthrough)
		}
		ack := *v.Ack
		// One more served call of a turn, so that a cache (when there is
		// one) is warm.
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			add := more()
			req := engine.Request{Messages: add, PromptChars: 40, Base: ack.Messages, BaseFingerprint: ack.Fingerprint}
			b.StartTimer()
			v, err := e.Assemble(ctx, ref, req)
			if err != nil || v.Passthrough != "" || v.Ack == nil {
				b.Fatalf("next view: %v, passthrough %q", err, v.Passthrough)
			}
			ack = *v.Ack
		}
		b.StopTimer()
		_ = e.Close()
	}
}

// heapPeak samples the heap (its live and not yet swept objects) every
// millisecond while started.
type heapPeak struct {
	mu   sync.Mutex
	max  uint64
	live uint64
	base uint64
	quit chan struct{}
	done chan struct{}
}

func (h *heapPeak) start() {
	h.quit, h.done = make(chan struct{}), make(chan struct{})
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	h.mu.Lock()
	h.base = max(h.base, s[0].Value.Uint64())
	h.mu.Unlock()
	go func() {
		defer close(h.done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			h.mu.Lock()
			h.max = max(h.max, s[0].Value.Uint64())
			h.live = max(h.live, s[1].Value.Uint64())
			h.mu.Unlock()
			select {
			case <-h.quit:
				return
			case <-t.C:
			}
		}
	}()
}

func (h *heapPeak) stop() {
	close(h.quit)
	<-h.done
}

func (h *heapPeak) mb() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return float64(h.max) / (1 << 20)
}

func (h *heapPeak) baseMB() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return float64(h.base) / (1 << 20)
}
