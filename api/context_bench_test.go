package api_test

import (
	"net/http"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
)

// BenchmarkContextStatus measures GET …/context/status on a 10 MB
// synthetic transcript with the default (calibrated) tokenizer, as the
// UI's gauge asks for it again and again: the first request measures the
// transcript, the others are answered from the status cache while the
// transcript does not change (BenchmarkStatus100MB in package compact
// measures the cold path on 100 MB).
func BenchmarkContextStatus(b *testing.B) {
	set, id := bigSession(b)
	srv := serve(b, api.Options{Installation: set.Installation, Backend: set, Daemon: newDaemon(b, set)})
	c := &client{tb: b, srv: srv}
	for b.Loop() {
		code, body, _ := c.do("GET", "/api/sessions/alpha/"+id+"/context/status", "")
		if code != http.StatusOK {
			b.Fatalf("%d %s", code, body)
		}
	}
}
