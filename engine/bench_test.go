package engine_test

import (
	"context"
	"testing"
)

// BenchmarkAssemble serves one turn of a 2,000-message session (500 tool
// turns, results of 2,000 bytes) whose collapses are sticky: the join,
// layer 1, the prediction and the state's save.
func BenchmarkAssemble(b *testing.B) {
	s := newSession(b)
	for k := range 500 {
		s.turn(k, 2000, 1000+10*k, false)
	}
	s.write()
	st, ref := openStore(b, s.path)
	e := newEngine(b, st, testPolicy())
	req := request(skeleton(b, s.path), 0)
	ctx := context.Background()
	if v, err := e.Assemble(ctx, ref, req); err != nil || v.Passthrough != "" || len(req.Messages) != 2000 {
		b.Fatalf("first view: %v, passthrough %q, %d messages", err, v.Passthrough, len(req.Messages))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Assemble(ctx, ref, req); err != nil {
			b.Fatal(err)
		}
	}
}
