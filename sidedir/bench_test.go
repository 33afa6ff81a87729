package sidedir_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// benchRecords returns n records of about size bytes each, keyed e0…e(n-1).
func benchRecords(n, size int) []bs.SideRecord {
	recs := make([]bs.SideRecord, n)
	for i := range recs {
		id := fmt.Sprintf("e%d", i)
		body := make([]byte, size)
		for j := range body {
			body[j] = "abcdefghij klmnopqrstuvwxyz\n"[(i*7+j*13)%28]
		}
		recs[i] = bs.SideRecord{EntryID: id, Data: record(id, string(body))}
	}
	return recs
}

// benchDir writes one pass of recs into a fresh side dir and backdates
// the dir, so that its listing may be cached (as in a daemon reading
// sessions written earlier).
func benchDir(b *testing.B, recs []bs.SideRecord) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "side")
	side := sidedir.New(sidedir.Fixed(dir))
	ctx := context.Background()
	if err := side.Put(ctx, bs.SessionRef{}, recs); err != nil {
		b.Fatal(err)
	}
	if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
		b.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkPutSync is a pass of 500 records of 2 KB into a new side dir:
// Put, then Sync (index, fsync, rename, dir fsyncs).
func BenchmarkPutSync(b *testing.B) {
	recs := benchRecords(500, 2<<10)
	root := b.TempDir()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		side := sidedir.New(sidedir.Fixed(filepath.Join(root, fmt.Sprint(i))))
		if err := side.Put(ctx, bs.SessionRef{}, recs); err != nil {
			b.Fatal(err)
		}
		if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetWarm reads values of a 500-value pack in turn, one per
// frame, with the pack's index and the dir's listing cached.
func BenchmarkGetWarm(b *testing.B) {
	recs := benchRecords(500, 2<<10)
	side := sidedir.New(sidedir.Fixed(benchDir(b, recs)))
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := recs[(i*37)%len(recs)].EntryID
		if _, err := side.Get(ctx, bs.SessionRef{}, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetCold reads one value of a 500-value pack with a new Store:
// the listing and the pack's index are read each time.
func BenchmarkGetCold(b *testing.B) {
	recs := benchRecords(500, 2<<10)
	dir := benchDir(b, recs)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		side := sidedir.New(sidedir.Fixed(dir))
		if _, err := side.Get(ctx, bs.SessionRef{}, "e250"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList lists a side dir of 4 passes of 125 values each.
func BenchmarkList(b *testing.B) {
	recs := benchRecords(500, 512)
	dir := filepath.Join(b.TempDir(), "side")
	side := sidedir.New(sidedir.Fixed(dir))
	ctx := context.Background()
	for p := 0; p < 4; p++ {
		if err := side.Put(ctx, bs.SessionRef{}, recs[p*125:(p+1)*125]); err != nil {
			b.Fatal(err)
		}
		if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		infos, err := side.List(ctx, bs.SessionRef{})
		if err != nil || len(infos) != 500 {
			b.Fatalf("%d infos, %v", len(infos), err)
		}
	}
}

// BenchmarkDropUnits repacks two passes of 250 values each into one,
// keeping every value (SideUnits, then DropUnits).
func BenchmarkDropUnits(b *testing.B) {
	recs := benchRecords(500, 1<<10)
	keep := make([]string, len(recs))
	for i, r := range recs {
		keep[i] = r.EntryID
	}
	root := b.TempDir()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		side := sidedir.New(sidedir.Fixed(filepath.Join(root, fmt.Sprint(i))))
		for p := 0; p < 2; p++ {
			if err := side.Put(ctx, bs.SessionRef{}, recs[p*250:(p+1)*250]); err != nil {
				b.Fatal(err)
			}
			if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		units, err := side.SideUnits(ctx, bs.SessionRef{})
		if err != nil || len(units) != 2 {
			b.Fatalf("%d units, %v", len(units), err)
		}
		res, err := side.DropUnits(ctx, bs.SessionRef{}, []string{units[0].Name, units[1].Name}, keep)
		if err != nil || res.Kept != 500 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}
