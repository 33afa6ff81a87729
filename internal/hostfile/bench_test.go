package hostfile

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// BenchmarkRewriteFixedCost measures the fixed cost of one Rewrite of a
// small (22 KB) transcript with one edit, the per-session cost of a pass
// over many small sessions. Beside ns/op it reports fsyncs-ns/op, the
// time of the same bytes written to a temp file, fsynced, renamed and the
// directory fsynced (measured in the same loop), and beyond-fsyncs-ns/op,
// the difference: what Rewrite adds to the unavoidable I/O (locks,
// fingerprint, carry-over, the wait for late writers). Run it on a real
// disk, not tmpfs.
func BenchmarkRewriteFixedCost(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: 22 << 10}); err != nil {
		b.Fatal(err)
	}
	orig := buf.Bytes()
	if err := os.WriteFile(p, orig, 0o600); err != nil {
		b.Fatal(err)
	}
	// One edit: flip the case of the first "s".
	flip := func(dst io.Writer, src io.Reader) error {
		data, err := io.ReadAll(src)
		if err != nil {
			return err
		}
		i := bytes.IndexAny(data, "sS")
		data[i] ^= 0x20
		_, err = dst.Write(data)
		return err
	}
	bare := filepath.Join(dir, "bare.jsonl")
	ctx := context.Background()
	var rewrite, fsyncs time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		st, err := Fingerprint(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := Rewrite(ctx, p, st, flip, WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		b.StopTimer()
		bareCycle(b, dir, bare, orig)
		fsyncs += time.Since(t1)
		rewrite += t1.Sub(t0)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(fsyncs.Nanoseconds())/n, "fsyncs-ns/op")
	b.ReportMetric(float64((rewrite-fsyncs).Nanoseconds())/n, "beyond-fsyncs-ns/op")
}

// bareCycle is the I/O a rewrite cannot avoid: write a temp file, fsync
// it, rename it over path, fsync the directory.
func bareCycle(b *testing.B, dir, path string, data []byte) {
	tmp, tmpPath, err := createTemp(dir, filepath.Base(path))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tmp.Write(data); err != nil {
		b.Fatal(err)
	}
	if err := tmp.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := tmp.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		b.Fatal(err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		b.Fatal(err)
	}
}
