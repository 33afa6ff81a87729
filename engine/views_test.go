package engine_test

import (
	"context"
	"testing"
)

// TestViewsObservable proves what a view tells of itself: the time the
// engine took (View.ElapsedMS, kept in the turn), the host's and the
// view's characters, and the latest turns in Status.LastViews, newest
// first, at most engine.MaxLastViews.
func TestViewsObservable(t *testing.T) {
	s := newSession(t)
	for k := range 4 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	ctx := context.Background()
	host := skeleton(t, s.path)
	e := newEngine(t, st, testPolicy())
	const calls = 12
	for i := range calls {
		v, err := e.Assemble(ctx, ref, request(host, 0))
		if err != nil {
			t.Fatal(err)
		}
		if v.ElapsedMS <= 0 {
			t.Errorf("view %d: elapsed_ms %v; want the time Assemble took", i+1, v.ElapsedMS)
		}
		hostChars := 0
		for _, m := range host {
			hostChars += m.Chars
		}
		if v.HostChars != hostChars || v.Chars <= 0 || v.Chars >= hostChars {
			t.Errorf("view %d: host_chars %d (want %d), view_chars %d (want fewer: the results collapse)", i+1, v.HostChars, hostChars, v.Chars)
		}
		status, err := e.Status(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if len(status.LastViews) != min(i+1, 10) {
			t.Fatalf("view %d: %d last views; want %d", i+1, len(status.LastViews), min(i+1, 10))
		}
		got := status.LastViews[0]
		if got.N != v.Turn || got.ElapsedMS != v.ElapsedMS || got.Chars != v.Chars || got.HostChars != v.HostChars || got.Changed != v.Changed {
			t.Errorf("view %d: newest last view %+v; want the view's turn %d, elapsed %v, chars %d of %d", i+1, got, v.Turn, v.ElapsedMS, v.Chars, v.HostChars)
		}
		for j := 1; j < len(status.LastViews); j++ {
			if status.LastViews[j].N != status.LastViews[j-1].N-1 {
				t.Errorf("view %d: last views %d then %d; want newest first", i+1, status.LastViews[j-1].N, status.LastViews[j].N)
			}
		}
	}
}
