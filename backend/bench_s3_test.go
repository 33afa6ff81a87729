package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// firstPassSessions is how the 100 MB of BenchmarkFirstPass100MB are
// split: sessions of 5 MB, each a pack of its own.
const firstPassSessions = 20

// firstPassSources generates the sessions once (the corpus's density of
// 500–5,000-byte values) into a temp dir on the real disk.
func firstPassSources(b *testing.B) []string {
	dir, err := os.MkdirTemp("", "bs-s3bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	var out []string
	for i := range firstPassSessions {
		p := filepath.Join(dir, fmt.Sprintf("s%02d.jsonl", i))
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := synth.Generate(f, synth.Options{Size: 100 << 20 / firstPassSessions, Density: synth.DensityReal, Seed: uint64(i + 1)}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		out = append(out, p)
	}
	return out
}

// BenchmarkFirstPass100MB is one library pass (prune over backend.Open's
// Set) over 100 MB of fresh transcripts in 20 sessions, on the real disk,
// with the side values in the local pack store and in an S3 server on
// loopback (versitygw: it writes the objects to the same disk). It
// reports the requests the pass sent (PUT, LIST, other) and the bytes it
// sent to the server.
func BenchmarkFirstPass100MB(b *testing.B) {
	srcs := firstPassSources(b)
	for _, store := range []string{"local", "s3"} {
		b.Run("store="+store, func(b *testing.B) {
			var srv *s3test.Server
			if store == "s3" {
				srv = s3test.Start(b)
				srv.Env(b)
			}
			var reqs map[string]int
			var sent int64
			for i := range b.N {
				b.StopTimer()
				agents := filepath.Join(b.TempDir(), "agents")
				dir := filepath.Join(agents, "main", "sessions")
				if err := os.MkdirAll(dir, 0o700); err != nil {
					b.Fatal(err)
				}
				old := time.Now().Add(-time.Hour)
				for _, src := range srcs {
					dst := filepath.Join(dir, filepath.Base(src))
					copySynced(b, src, dst)
					os.Chtimes(dst, old, old)
				}
				c := config.Default()
				c.Enabled, c.IdleSeconds, c.AgeThresholdHours, c.MinSavingTokens = true, 0, 0, 0
				setting := "local"
				if srv != nil {
					setting = srv.URL(fmt.Sprintf("bench%d", i))
				}
				c.SideStore = setting
				set, err := backend.Open(context.Background(), agents, backend.FromConfig(c, nil))
				if err != nil {
					b.Fatal(err)
				}
				cnt := &s3test.Counter{}
				if srv != nil {
					set = openWith(b, agents, c, cnt)
				}
				b.StartTimer()
				rep, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(context.Background(), nil)
				b.StopTimer()
				if err != nil || rep.Failed > 0 || rep.Written != firstPassSessions {
					b.Fatalf("pass: %v, %d written, %d failed", err, rep.Written, rep.Failed)
				}
				reqs, sent = cnt.Snapshot(), cnt.BytesOut
				b.StartTimer()
			}
			if srv != nil {
				b.ReportMetric(float64(reqs["PUT"]), "PUTs")
				b.ReportMetric(float64(reqs["LIST"]), "LISTs")
				b.ReportMetric(float64(reqs["GET"]+reqs["HEAD"]+reqs["DELETE"]), "other-requests")
				b.ReportMetric(float64(sent)/(1<<20), "MB-sent")
			}
		})
	}
}
