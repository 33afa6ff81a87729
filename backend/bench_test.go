package backend_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// treeTranscripts returns the corpus transcripts with a v2 or v3 header
// (the ones with entry ids, which a pass can extract from).
func treeTranscripts(b *testing.B) []string {
	var out []string
	for _, p := range testcorpus.Transcripts(b) {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		line, _ := bufio.NewReader(f).ReadBytes('\n')
		f.Close()
		var h struct {
			Type    string `json:"type"`
			Version int    `json:"version"`
		}
		if json.Unmarshal(line, &h) == nil && h.Type == "session" && h.Version >= 2 {
			out = append(out, p)
		}
	}
	if len(out) < 14 {
		b.Fatalf("corpus: %d v2/v3 transcripts, want at least 14", len(out))
	}
	return out
}

// copySynced copies src to dst and fsyncs it.
func copySynced(b *testing.B, src, dst string) int64 {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkManySmallSessions is one library pass (backend.Open and
// prune.New over the Set, as `brainsurgeon prune` runs it) over copies of the corpus's
// v2/v3 transcripts, each a session of its own, beside cp + sync of the
// same files in the same run. It reports the pass's time per session (the
// fixed cost a session adds) and its ratio to cp + sync. "extract" is a
// first pass with the default policy (no age threshold); "nothing" is a
// pass in which no value qualifies: reading, idle rules and discovery
// only. Run it on the real disk (go test -bench ManySmall), not tmpfs.
func BenchmarkManySmallSessions(b *testing.B) {
	srcs := treeTranscripts(b)
	for _, mode := range []string{"extract", "nothing"} {
		b.Run("mode="+mode, func(b *testing.B) {
			ctx := context.Background()
			var total int64
			var pass, cp time.Duration
			extracted := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				root := b.TempDir()
				agents := filepath.Join(root, "agents")
				dir := filepath.Join(agents, "main", "sessions")
				cpDir := filepath.Join(root, "cp")
				for _, d := range []string{dir, cpDir} {
					if err := os.MkdirAll(d, 0o700); err != nil {
						b.Fatal(err)
					}
				}
				total = 0
				old := time.Now().Add(-time.Hour)
				for k, src := range srcs {
					dst := filepath.Join(dir, fmt.Sprintf("s%02d.jsonl", k))
					total += copySynced(b, src, dst)
					os.Chtimes(dst, old, old)
				}
				// cp + sync of the same files, measured in the same run.
				t0 := time.Now()
				for k, src := range srcs {
					copySynced(b, src, filepath.Join(cpDir, fmt.Sprintf("s%02d.jsonl", k)))
				}
				cp += time.Since(t0)
				cfg := config.Default()
				cfg.Enabled, cfg.IdleSeconds, cfg.AgeThresholdHours = true, 0, 0
				if mode == "nothing" {
					cfg.MinValueLength = 1 << 30
				}
				b.StartTimer()
				t0 = time.Now()
				set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
				if err != nil {
					b.Fatal(err)
				}
				rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				pass += time.Since(t0)
				b.StopTimer()
				if len(rep.Sessions) != len(srcs) {
					b.Fatalf("%d sessions in the report, want %d", len(rep.Sessions), len(srcs))
				}
				if rep.Failed > 0 {
					b.Fatalf("%d sessions failed: %+v", rep.Failed, rep.Sessions)
				}
				extracted = 0
				for _, s := range rep.Sessions {
					if s.Status == "extracted" {
						extracted++
					}
				}
				if (mode == "extract") != (extracted > 0) {
					b.Fatalf("mode %s: %d sessions extracted", mode, extracted)
				}
				b.StartTimer()
			}
			n := float64(b.N)
			b.SetBytes(total)
			b.ReportMetric(pass.Seconds()*1000/n/float64(len(srcs)), "ms/session")
			b.ReportMetric(cp.Seconds()*1000/n, "cp+sync-ms")
			b.ReportMetric(pass.Seconds()/cp.Seconds(), "x-cp+sync")
			b.ReportMetric(float64(len(srcs)), "sessions")
			b.ReportMetric(float64(extracted), "extracted-sessions")
		})
	}
}
