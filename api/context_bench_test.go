package api_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// BenchmarkContextStatus measures GET …/context/status on a 10 MB
// synthetic transcript with the default (calibrated) tokenizer, as the
// UI's gauge asks for it again and again: the first request measures the
// transcript, the others are answered from the status cache while the
// transcript does not change (BenchmarkStatus100MB in package compact
// measures the cold path on 100 MB).
func BenchmarkContextStatus(b *testing.B) {
	root := b.TempDir()
	dir := root + "/agents/alpha/sessions"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	id := "00000000-0000-4000-8000-000000000001"
	writeSynth(b, dir, id, synth.Options{Size: 10 << 20, Seed: 3})
	writeSessionsJSON(b, dir, "alpha", []string{id})
	set, err := backend.Open(context.Background(), root+"/agents", backend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	srv := serve(b, api.Options{Set: set, Control: newControl(set)})
	c := &client{tb: b, srv: srv}
	for b.Loop() {
		code, body, _ := c.do("GET", "/api/sessions/alpha/"+id+"/context/status", "")
		if code != http.StatusOK {
			b.Fatalf("%d %s", code, body)
		}
	}
}
