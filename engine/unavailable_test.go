package engine_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestViewSideStoreUnavailable restores two extracted tool results while
// the side store cannot be reached: the view is still served, both keep
// their placeholders for this turn, the store is asked once (not once per
// value), and one warning says why; with the store back, the next view
// shows them in full.
func TestViewSideStoreUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name string
		ops  []sidefault.Op
	}{
		{"every operation", nil},
		{"get", []sidefault.Op{sidefault.Get}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newSession(t)
			for k := range 6 {
				s.turn(k, 3000, 1000, false)
			}
			s.write()
			orig := skeleton(t, s.path)
			p := testPolicy()
			cp := extractCopy(t, s.path, p)
			st, ref := openStore(t, cp)
			host := skeleton(t, cp)
			var ks []int
			for k, m := range host {
				if m.Role == "toolResult" && !bytes.Equal(m.content, orig[slicesIndex(orig, m.id)].content) {
					ks = append(ks, k)
				}
			}
			if len(ks) < 2 {
				t.Fatalf("the extraction changed %d tool results, want 2 or more", len(ks))
			}
			ks = ks[:2]
			now := clock
			var logs bytes.Buffer
			side := sidefault.New(sidedir.New(st))
			e := newEngine(t, st, p)
			e.Side, e.Now = side, func() time.Time { return now }
			e.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			for _, k := range ks {
				if err := e.RecordRestore(ctx, ref, host[k].id, now); err != nil {
					t.Fatal(err)
				}
			}
			now = now.Add(time.Second)
			shown := func() int {
				t.Helper()
				v, err := e.Assemble(ctx, ref, request(host, 0))
				if err != nil {
					t.Fatalf("a view while the side store is down: %v", err)
				}
				n := 0
				for _, r := range v.Replace {
					if slices.Contains(ks, r.Index) {
						if !bytes.Equal(r.Content, orig[slicesIndex(orig, host[r.Index].id)].content) {
							t.Fatalf("message %d: the view shows\n%.200s\nwant the content before extraction", r.Index, r.Content)
						}
						n++
					}
				}
				return n
			}
			side.Down(tt.ops...)
			if n := shown(); n != 0 {
				t.Fatalf("%d restored values shown while the side store is down, want 0 (their placeholders)", n)
			}
			if n := side.Failed(sidefault.Get) + side.Failed(sidefault.List); n != 1 {
				t.Errorf("the store that is down was asked %d times in one view, want 1", n)
			}
			if got := logs.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, "side store cannot be reached") ||
				!strings.Contains(got, "messages=2") || !strings.Contains(got, sidefault.Cause) {
				t.Errorf("log:\n%s\nwant one warning naming the 2 messages and the cause", got)
			}
			side.Up()
			now = now.Add(time.Second)
			if n := shown(); n != 2 {
				t.Fatalf("%d restored values shown with the store back, want 2", n)
			}
		})
	}
}
