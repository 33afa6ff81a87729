package sides3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
)

// failCopies fails every server-side copy after the first after ones, as
// a server gone in the middle of a move, until healed.
type failCopies struct {
	next   http.RoundTripper
	after  int32
	n      atomic.Int32
	healed atomic.Bool
}

func (f *failCopies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("X-Amz-Copy-Source") != "" && f.n.Add(1) > f.after && !f.healed.Load() {
		return nil, errors.New("connection reset by peer (test)")
	}
	return f.next.RoundTrip(req)
}

// TestMoveSideCopies: MoveSide on the object store copies each pack on
// the server (no byte of it is fetched), then deletes the originals; a
// server failing midway leaves every pack in one place or both, and the
// move run again finishes it.
func TestMoveSideCopies(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	srv.Env(t)
	base := t.TempDir()
	agents, state := filepath.Join(base, "agents"), filepath.Join(base, ".brainsurgeon")
	from := filepath.Join(agents, "main", "sessions", "extracted", "s1")
	to := filepath.Join(state, "trash", "item", "extracted", "s1")
	counter := &s3test.Counter{}
	fault := &failCopies{next: counter, after: 1}
	open := func(loc string) *sides3.Store {
		st, err := sides3.Open(srv.URL("t"), sidedir.Fixed(loc), sides3.Options{
			Roots:     []sides3.Root{{Name: "agents", Dir: agents}, {Name: "state", Dir: state}},
			Spool:     filepath.Join(state, "spool"),
			Transport: fault,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	side, moved := open(from), open(to)
	if !side.Remote() {
		t.Errorf("Remote() = false for the object store")
	}
	want := map[string][]byte{}
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		want[id] = []byte(fmt.Sprintf(`{"entry_id":%q,"value":%q}`+"\n", id, strings.Repeat(id, 1000)))
		if err := side.Put(ctx, bs.SessionRef{}, []bs.SideRecord{{EntryID: id, Data: want[id]}}); err != nil {
			t.Fatal(err)
		}
		if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	const fromKeys, toKeys = "t/test/agents/main/sessions/extracted/s1/", "t/test/state/trash/item/extracted/s1/"
	if n := len(srv.Keys(t, fromKeys)); n != 3 {
		t.Fatalf("%d packs under %s, want 3", n, fromKeys)
	}

	err := side.MoveSide(ctx, from, to)
	if !errors.Is(err, bs.ErrUnavailable) {
		t.Fatalf("MoveSide with the server failing after one copy: %v, want ErrUnavailable", err)
	}
	if a, b := len(srv.Keys(t, fromKeys)), len(srv.Keys(t, toKeys)); a != 3 || b != 1 {
		t.Errorf("after the failure: %d packs in from, %d in to; want 3 and 1", a, b)
	}
	fault.healed.Store(true)
	counter.Reset()
	if err := side.MoveSide(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	reqs := counter.Snapshot()
	if reqs["LIST"] != 1 || reqs["PUT"] != 3 || reqs["DELETE"] != 3 || reqs["GET"] != 0 || counter.BytesIn > 4096 {
		t.Errorf("requests of a move of 3 packs: %v, %d bytes in; want 1 LIST, 3 PUT (copies), 3 DELETE, no GET", reqs, counter.BytesIn)
	}
	if a, b := len(srv.Keys(t, fromKeys)), len(srv.Keys(t, toKeys)); a != 0 || b != 3 {
		t.Errorf("after the move: %d packs in from, %d in to; want 0 and 3", a, b)
	}
	for id, v := range want {
		if r, err := moved.Get(ctx, bs.SessionRef{}, id); err != nil || !bytes.Equal(r.Data, v) {
			t.Errorf("%s from %s: %.40q, %v", id, to, r.Data, err)
		}
		if _, err := side.Get(ctx, bs.SessionRef{}, id); !errors.Is(err, bs.ErrNotFound) {
			t.Errorf("%s from %s: %v, want ErrNotFound", id, from, err)
		}
	}
	if n, b, err := moved.SideSize(ctx, to); err != nil || n != 3 || b == 0 {
		t.Errorf("SideSize(to) = %d, %d, %v; want 3 packs", n, b, err)
	}
	if err := moved.RemoveSide(ctx, to); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(t, "t/"); len(keys) != 0 {
		t.Errorf("keys left after RemoveSide: %v", keys)
	}
}
