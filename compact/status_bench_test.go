package compact_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// writeLongSession writes a synthetic v3 transcript of about size bytes
// into a new agents dir under root, as a long-running session compacted by
// its host looks: tool turns whose assistant messages record their usage,
// a compaction every 50 turns that keeps the last two turns. It returns
// the store and the session's ref.
func writeLongSession(tb testing.TB, root string, size int64) (*session.Store, bs.SessionRef) {
	tb.Helper()
	agents := filepath.Join(root, "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	id := "0f0e0d0c-0000-4000-8000-00000000b100"
	path := filepath.Join(dir, id+".jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := synth.Compacted(f, synth.CompactedOptions{Size: size, HeaderID: id, Usage: true}); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	st := session.NewStore(agents)
	return st, bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: id, Path: path}
}

// BenchmarkStatus100MB measures the context status of a 100 MB session
// (synthetic, compacted by its host every 50 turns) with the default
// calibrated count, as `brainsurgeon context status` and GET
// …/context/status compute it: cold (nothing cached: the transcript is
// indexed and its current context measured; target ≤ 300 ms) and warm (the
// transcript did not change: one stat; target ≤ 50 ms). It runs on tmpfs
// (/dev/shm, when there is one) and on the disk of the test's temporary
// directory.
func BenchmarkStatus100MB(b *testing.B) {
	dirs := []struct{ name, dir string }{{"disk", ""}}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dirs = append([]struct{ name, dir string }{{"tmpfs", "/dev/shm"}}, dirs...)
	}
	ctx := context.Background()
	tok := compact.Calibrated(nil)
	for _, d := range dirs {
		root := b.TempDir()
		if d.dir != "" {
			var err error
			if root, err = os.MkdirTemp(d.dir, "bs-status-bench-"); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(root) })
		}
		st, ref := writeLongSession(b, root, 100<<20)
		check := func(b *testing.B, r compact.StatusReport) {
			if r.Tokens <= 0 || r.Compactions == 0 || r.WindowSource != compact.WindowModelTable {
				b.Fatalf("status = %+v", r)
			}
		}
		b.Run(d.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				r, err := compact.NewStatusCache(0).Status(ctx, st, ref, compact.Settings{}, tok)
				if err != nil {
					b.Fatal(err)
				}
				check(b, r)
			}
		})
		b.Run(d.name+"/warm", func(b *testing.B) {
			c := compact.NewStatusCache(0)
			if _, err := c.Status(ctx, st, ref, compact.Settings{}, tok); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				r, err := c.Status(ctx, st, ref, compact.Settings{}, tok)
				if err != nil {
					b.Fatal(err)
				}
				check(b, r)
			}
		})
	}
}
