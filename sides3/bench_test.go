package sides3_test

import (
	"context"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
)

// BenchmarkRestoreOne reads one value of 4 KB from a pack of 500 on an S3
// server on loopback: "cold" by a store that has not read the pack's
// index yet (another process), "warm" by one that has. It reports the
// bytes fetched and the requests sent per read.
func BenchmarkRestoreOne(b *testing.B) {
	srv := s3test.Start(b)
	srv.Env(b)
	ctx := context.Background()
	w, _, _ := openB(b, srv)
	recs := values(500, 4000)
	if err := w.Put(ctx, bs.SessionRef{}, recs); err != nil {
		b.Fatal(err)
	}
	if err := w.Sync(ctx, bs.SessionRef{}); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"cold", "warm"} {
		b.Run(mode, func(b *testing.B) {
			st, cnt, _ := openB(b, srv)
			if mode == "warm" {
				if _, err := st.Get(ctx, bs.SessionRef{}, recs[0].EntryID); err != nil {
					b.Fatal(err)
				}
			}
			var in int64
			var reqs int
			for i := range b.N {
				b.StopTimer()
				if mode == "cold" {
					st, cnt, _ = openB(b, srv)
				}
				cnt.Reset()
				b.StartTimer()
				if _, err := st.Get(ctx, bs.SessionRef{}, recs[(i*37)%len(recs)].EntryID); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				in += cnt.BytesIn
				for _, n := range cnt.Snapshot() {
					reqs += n
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(in)/float64(b.N), "bytes-fetched/op")
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/op")
		})
	}
}
