package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// BenchmarkUsage measures GET …/usage, the session view's chart, on a
// 10 MB synthetic transcript after an extraction pass: warm (the side
// records' sizes are cached while the side store is unchanged) and cold
// (a new handler each time, so every side record is read), and GET
// /api/disk over the same agents dir.
func BenchmarkUsage(b *testing.B) {
	root := b.TempDir()
	dir := root + "/agents/alpha/sessions"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	id := "00000000-0000-4000-8000-000000000001"
	writeSynth(b, dir, id, synth.Options{Size: 10 << 20, Seed: 3})
	writeSessionsJSON(b, dir, "alpha", []string{id})
	set, err := backend.Open(context.Background(), root+"/agents", backend.Options{Idle: 0})
	if err != nil {
		b.Fatal(err)
	}
	rep, err := set.Pass(pruneConfig(), nil).Run(context.Background(), nil)
	if err != nil || rep.Sessions[0].Result == nil {
		b.Fatalf("pass: %+v, %v", rep, err)
	}
	b.Logf("%d values extracted from %d entries", rep.Sessions[0].Result.Values, rep.Sessions[0].Result.Entries)
	srv := serve(b, api.Options{Set: set})
	c := &client{tb: b, srv: srv}
	b.Run("Usage10MBCold", func(b *testing.B) {
		for b.Loop() {
			h, err := api.New(api.Options{Set: set})
			if err != nil {
				b.Fatal(err)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/sessions/alpha/"+id+"/usage", nil))
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
	})
	c.do("GET", "/api/sessions/alpha/"+id+"/usage", "") // warm the cache
	for _, bm := range []struct{ name, path string }{
		{"Usage10MBWarm", "/api/sessions/alpha/" + id + "/usage"},
		{"Disk", "/api/disk"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			for b.Loop() {
				code, body, _ := c.do("GET", bm.path, "")
				if code != http.StatusOK {
					b.Fatalf("%d %s", code, body)
				}
			}
		})
	}
}
