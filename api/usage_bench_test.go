package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// BenchmarkUsage measures GET …/usage, the session view's chart, on a
// 10 MB synthetic transcript after an extraction pass: warm (the side
// records' sizes are cached while the side store is unchanged) and cold
// (a new handler each time, so every side record is read), and GET
// /api/disk over the same agents dir.
func BenchmarkUsage(b *testing.B) {
	set, id := bigSession(b)
	rep, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(context.Background(), nil)
	if err != nil || rep.Sessions[0].Result == nil {
		b.Fatalf("pass: %+v, %v", rep, err)
	}
	b.Logf("%d values extracted from %d entries", rep.Sessions[0].Result.Values, rep.Sessions[0].Result.Entries)
	srv := serve(b, api.Options{Installation: set.Installation, Backend: set})
	c := &client{tb: b, srv: srv}
	b.Run("Usage10MBCold", func(b *testing.B) {
		for b.Loop() {
			h, err := api.New(api.Options{Installation: set.Installation, Backend: set})
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
