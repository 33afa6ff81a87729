package trash_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sides3"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// faultCopies fails the server-side copies numbered in [from, to) (1
// first), as a server that goes away in the middle of a move; to 0 means
// for ever.
type faultCopies struct {
	from, to atomic.Int32
	n        atomic.Int32
	// deletes, when set, fails every DELETE: a move copies, then stops
	// before removing anything, as a crash there would.
	deletes atomic.Bool
}

func (f *faultCopies) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && f.deletes.Load() {
		return nil, errors.New("connection reset by peer (test)")
	}
	if req.Header.Get("X-Amz-Copy-Source") != "" {
		n, from, to := f.n.Add(1), f.from.Load(), f.to.Load()
		if from > 0 && n >= from && (to == 0 || n < to) {
			return nil, errors.New("connection reset by peer (test)")
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// set makes copies from the (from)th (counted from now) up to the (to)th
// fail; 0, 0 heals.
func (f *faultCopies) set(from, to int32) {
	n := f.n.Load()
	if from == 0 {
		f.from.Store(0)
		f.to.Store(0)
		return
	}
	f.from.Store(n + from)
	if to > 0 {
		f.to.Store(n + to)
	} else {
		f.to.Store(0)
	}
}

// s3fx is the fixture with its side values in an S3 server (versitygw):
// the side store keys the agents dir under "agents" and the state dir,
// which holds the trash, under "state".
type s3fx struct {
	*fx
	srv   *s3test.Server
	side  *sides3.Store
	fault *faultCopies
}

const keyBase = "t/test/"

func newS3Fixture(t *testing.T) *s3fx {
	t.Helper()
	srv := s3test.Start(t)
	srv.Env(t)
	x := &s3fx{srv: srv, fault: &faultCopies{}}
	x.fx = newFixtureSide(t, "done", func(set *backend.Set) bs.SideStore {
		st, err := sides3.Open(srv.URL("t"), set.Store.(sidedir.Locator), sides3.Options{
			Roots:     []sides3.Root{{Name: "agents", Dir: set.AgentsDir}, {Name: "state", Dir: set.StateDir}},
			Spool:     filepath.Join(set.StateDir, "spool"),
			Transport: x.fault,
		})
		if err != nil {
			t.Fatal(err)
		}
		x.side = st
		return st
	})
	if x.bin.Sides == nil {
		t.Fatal("trash.RemoteSides gave no Sides for the S3 store")
	}
	return x
}

// keys returns the keys under the side location of a session in the
// sessions dir (item "") or in a trash item.
func (x *s3fx) keys(t *testing.T, item, sid string) []string {
	t.Helper()
	p := keyBase + "agents/main/sessions/extracted/" + sid + "/"
	if item != "" {
		p = keyBase + "state/trash/" + item + "/extracted/" + sid + "/"
	}
	return x.srv.Keys(t, p)
}

// values reads every side value of the sessions through the side store,
// by session and entry.
func (x *s3fx) values(t *testing.T, sids ...string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][]byte{}
	for _, sid := range sids {
		ref, err := x.set.Store.Resolve(ctx, "main/"+sid)
		if err != nil {
			t.Fatal(err)
		}
		infos, err := x.side.List(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			r, err := x.side.Get(ctx, ref, in.EntryID)
			if err != nil {
				t.Fatalf("%s %s: %v", sid, in.EntryID, err)
			}
			out[sid+"/"+in.EntryID] = r.Data
		}
	}
	return out
}

// sameValues checks that every value of before reads the same now.
func (x *s3fx) sameValues(t *testing.T, when string, before map[string][]byte) {
	t.Helper()
	var sids []string
	seen := map[string]bool{}
	for k := range before {
		if sid, _, _ := strings.Cut(k, "/"); !seen[sid] {
			seen[sid] = true
			sids = append(sids, sid)
		}
	}
	now := x.values(t, sids...)
	if len(now) != len(before) {
		t.Errorf("%s: %d values, want the %d of before", when, len(now), len(before))
	}
	for k, v := range before {
		if !bytes.Equal(now[k], v) {
			t.Errorf("%s: value %s %.40q, want %.40q", when, k, now[k], v)
		}
	}
}

func TestRemoteSides(t *testing.T) {
	if got := trash.RemoteSides(sidedir.New(sidedir.Fixed(t.TempDir()))); got != nil {
		t.Errorf("RemoteSides of the local pack store: %v, want nil (side dirs move by rename)", got)
	}
	if got := trash.RemoteSides(nil); got != nil {
		t.Errorf("RemoteSides(nil): %v, want nil", got)
	}
	if got := trash.RemoteSides((*sidedir.Store)(nil)); got != nil {
		t.Errorf("RemoteSides of a nil *sidedir.Store: %v, want nil", got)
	}
}

// TestDeleteAndRestoreS3: with the side values in an object store the
// trash moves them under the item's prefix, brings them back with the
// session, and counts them.
func TestDeleteAndRestoreS3(t *testing.T) {
	ctx := context.Background()
	x := newS3Fixture(t)
	before := x.values(t, "p1", "c2", "g1", "u1")
	p1Keys, c2Keys := x.keys(t, "", "p1"), x.keys(t, "", "c2")
	if len(p1Keys) == 0 || len(c2Keys) == 0 || len(before) == 0 {
		t.Fatalf("the pass stored no values in S3: p1 %v, c2 %v", p1Keys, c2Keys)
	}
	item, err := x.bin.Delete(ctx, "main", "p1")
	if err != nil {
		t.Fatal(err)
	}
	var units int
	for _, s := range item.Sessions {
		if left := x.keys(t, "", s.SessionID); len(left) != 0 {
			t.Errorf("%s: units left in place after delete: %v", s.SessionID, left)
		}
		moved := x.keys(t, item.ID, s.SessionID)
		units += len(moved)
		if s.ExtractedFiles != len(moved) || (len(moved) > 0) != (s.ExtractedBytes > 0) {
			t.Errorf("%s: extracted %d files, %d bytes; %d units moved", s.SessionID, s.ExtractedFiles, s.ExtractedBytes, len(moved))
		}
	}
	if n := len(x.keys(t, item.ID, "p1")); n != len(p1Keys) {
		t.Errorf("p1: %d units in the item, want the %d it had", n, len(p1Keys))
	}
	if item.Files != len(item.Sessions)+units {
		t.Errorf("item files %d, want %d transcripts and %d units", item.Files, len(item.Sessions), units)
	}
	if got, _ := x.bin.Get(ctx, item.ID); got == nil || got.Files != item.Files || got.Bytes != item.Bytes {
		t.Errorf("meta.json %+v, want the counts of the item returned", got)
	}
	if len(x.keys(t, "", "u1")) == 0 {
		t.Errorf("u1's units went with p1")
	}
	for _, ev := range auditLines(t, x.set) {
		if ev.Action == "delete_extracted" && ev.SessionID == "p1" && (ev.FilesRemoved == nil || *ev.FilesRemoved != len(p1Keys)) {
			t.Errorf("audit %+v, want %d files", ev, len(p1Keys))
		}
	}

	if _, err := x.bin.Restore(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	x.sameAsBefore(t, "after restore")
	x.sameValues(t, "after restore", before)
	if keys := x.srv.Keys(t, keyBase+"state/"); len(keys) != 0 {
		t.Errorf("keys left under the trash: %v", keys)
	}
	ref, err := x.set.Store.Resolve(ctx, "main/p1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := restore.New(x.set.Store, x.set.Side, x.set.StateDir).Restore(ctx, ref, "r1", nil, restore.RestoreOptions{})
	if err != nil || !res.Restored {
		t.Fatalf("restore r1 after trash restore: %+v, %v", res, err)
	}
}

// TestPurgeAndExpireS3: Purge and CleanExpired remove the units of the
// item's side locations too, and count them.
func TestPurgeAndExpireS3(t *testing.T) {
	ctx := context.Background()
	x := newS3Fixture(t)
	item, err := x.bin.Delete(ctx, "main", "c2") // c2 and its child g1
	if err != nil {
		t.Fatal(err)
	}
	units := len(x.keys(t, item.ID, "c2")) + len(x.keys(t, item.ID, "g1"))
	if units == 0 {
		t.Fatal("no units moved into the item")
	}
	if _, err := x.bin.Purge(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	if keys := x.srv.Keys(t, keyBase+"state/"); len(keys) != 0 {
		t.Errorf("keys left after purge: %v", keys)
	}
	removed := 0
	for _, ev := range auditLines(t, x.set) {
		if ev.Action == "delete_extracted" && ev.MovedToTrash != nil && !*ev.MovedToTrash && ev.FilesRemoved != nil {
			removed += *ev.FilesRemoved
		}
	}
	if removed != units {
		t.Errorf("purge audited %d side files removed, want %d", removed, units)
	}

	x.bin.Clock = fixedClock(time.Now().Add(-20 * 24 * time.Hour))
	old, err := x.bin.Delete(ctx, "main", "u1")
	if err != nil {
		t.Fatal(err)
	}
	x.bin.Clock = nil
	fresh, err := x.bin.Delete(ctx, "main", "p1")
	if err != nil {
		t.Fatal(err)
	}
	u1Units := len(x.keys(t, old.ID, "u1"))
	n, freed, err := x.bin.CleanExpired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != old.Files || freed != old.Bytes || n != 1+u1Units {
		t.Errorf("CleanExpired: %d files, %d bytes; want the item's %d (1 transcript, %d units) and %d bytes", n, freed, old.Files, u1Units, old.Bytes)
	}
	if keys := x.keys(t, old.ID, "u1"); len(keys) != 0 {
		t.Errorf("keys of the expired item left: %v", keys)
	}
	if len(x.keys(t, fresh.ID, "p1")) == 0 {
		t.Errorf("the fresh item lost its units")
	}
}

// TestDeleteFailsMidMoveS3: the server fails in the middle of moving a
// session's units. A failure that heals before the undo leaves
// everything in place; one that lasts leaves the item "trashing", and a
// restore once the server is back brings every value back.
func TestDeleteFailsMidMoveS3(t *testing.T) {
	ctx := context.Background()
	t.Run("RolledBack", func(t *testing.T) {
		x := newS3Fixture(t)
		before := x.values(t, "p1", "c2", "g1")
		x.fault.set(2, 5) // the second copy fails (its 3 attempts), then the server is back
		_, err := x.bin.Delete(ctx, "main", "p1")
		x.fault.set(0, 0)
		if !errors.Is(err, bs.ErrUnavailable) {
			t.Fatalf("delete: %v, want ErrUnavailable", err)
		}
		x.sameAsBefore(t, "after a failed delete")
		x.sameValues(t, "after a failed delete", before)
		if items, _ := x.bin.List(ctx); len(items) != 0 {
			t.Errorf("trash after a failed delete: %+v", items)
		}
		if keys := x.srv.Keys(t, keyBase+"state/"); len(keys) != 0 {
			t.Errorf("keys left under the trash: %v", keys)
		}
	})
	t.Run("Lasting", func(t *testing.T) {
		x := newS3Fixture(t)
		before := x.values(t, "p1", "c2", "g1")
		x.fault.set(2, 0) // the second copy fails and so does every later one
		_, err := x.bin.Delete(ctx, "main", "p1")
		if !errors.Is(err, bs.ErrUnavailable) || !strings.Contains(err.Error(), "undo failed") {
			t.Fatalf("delete: %v, want ErrUnavailable with the undo failed", err)
		}
		items, err := x.bin.List(ctx)
		if err != nil || len(items) != 1 || items[0].State != trash.StateTrashing {
			t.Fatalf("trash: %+v, %v; want one item left trashing", items, err)
		}
		if _, err := x.bin.Restore(ctx, items[0].ID); !errors.Is(err, bs.ErrUnavailable) {
			t.Errorf("restore while the server fails: %v, want ErrUnavailable", err)
		}
		x.fault.set(0, 0)
		if _, err := x.bin.Restore(ctx, items[0].ID); err != nil {
			t.Fatalf("restore once the server is back: %v", err)
		}
		x.sameAsBefore(t, "after the restore")
		x.sameValues(t, "after the restore", before)
		if keys := x.srv.Keys(t, keyBase+"state/"); len(keys) != 0 {
			t.Errorf("keys left under the trash: %v", keys)
		}
	})
	t.Run("UnitsInBothPlaces", func(t *testing.T) {
		// Every copy arrives and no removal does, in the move and in its
		// undo: the units are in the item and in place; restore merges.
		x := newS3Fixture(t)
		before := x.values(t, "p1", "c2", "g1")
		x.fault.deletes.Store(true)
		_, err := x.bin.Delete(ctx, "main", "p1")
		x.fault.deletes.Store(false)
		if !errors.Is(err, bs.ErrUnavailable) || !strings.Contains(err.Error(), "undo failed") {
			t.Fatalf("delete: %v, want ErrUnavailable with the undo failed", err)
		}
		items, _ := x.bin.List(ctx)
		if len(items) != 1 || len(x.keys(t, items[0].ID, "p1")) == 0 || len(x.keys(t, "", "p1")) == 0 {
			t.Fatalf("trash %+v; want one item with p1's units in it and in place", items)
		}
		if _, err := x.bin.Restore(ctx, items[0].ID); err != nil {
			t.Fatalf("restore over units in place: %v, want them merged", err)
		}
		x.sameAsBefore(t, "after the restore")
		x.sameValues(t, "after the restore", before)
		if keys := x.srv.Keys(t, keyBase+"state/"); len(keys) != 0 {
			t.Errorf("keys left under the trash: %v", keys)
		}
	})
	t.Run("Crash", func(t *testing.T) {
		x := newS3Fixture(t)
		before := x.values(t, "p1", "c2", "g1")
		trash.SetFailpoint(func(s string) error {
			if s == "side:c2" {
				return trash.ErrCrash
			}
			return nil
		})
		_, err := x.bin.Delete(ctx, "main", "p1")
		trash.SetFailpoint(nil)
		if !errors.Is(err, trash.ErrCrash) {
			t.Fatalf("delete: %v, want the crash", err)
		}
		items, _ := x.bin.List(ctx)
		if len(items) != 1 {
			t.Fatalf("trash: %+v, want the item left trashing", items)
		}
		if _, err := x.bin.Restore(ctx, items[0].ID); err != nil {
			t.Fatal(err)
		}
		x.sameAsBefore(t, "after a crash and a restore")
		x.sameValues(t, "after a crash and a restore", before)
	})
}
