package sidedir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// copyMedium is a memMedium with a Copier that fails from the (fail)th
// copy on (0: never).
type copyMedium struct {
	*memMedium
	copies atomic.Int32
	fail   int32
}

var _ sidedir.Copier = (*copyMedium)(nil)

func (m *copyMedium) Copy(_ context.Context, fromLoc, name, toLoc string) error {
	if n := m.copies.Add(1); m.fail > 0 && n >= m.fail {
		return fmt.Errorf("copy %s: the server is gone: %w", name, bs.ErrUnavailable)
	}
	m.mu.Lock()
	u, ok := m.locs[fromLoc][name]
	m.mu.Unlock()
	if !ok {
		return m.notExist("copy", fromLoc, name)
	}
	m.put(toLoc, name, bytes.Clone(u.data), u.mod)
	return nil
}

// TestMoveSide moves, counts and removes side locations on each medium:
// the values read the same from the new location, nothing is left in the
// old one, a half-done move finishes when run again and merges with
// units already there.
func TestMoveSide(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("0123456789abcdef", 5000)
	want := map[string][]byte{"a": record("a", "v2"), "b": record("b", "v1"), "big": record("big", big)}
	for _, m := range media() {
		t.Run(m.name, func(t *testing.T) {
			c := m.new(t)
			loc := string(c.side.Dirs.(sidedir.Fixed))
			to := filepath.Join(filepath.Dir(loc), "s2")
			moved := sidedir.NewWithMedium(sidedir.Fixed(to), c.side.Medium)
			if c.side.Medium == nil {
				moved = sidedir.New(sidedir.Fixed(to))
			}
			if got := c.side.Remote(); got != (c.side.Medium != nil) {
				t.Errorf("Remote() = %v on %s", got, m.name)
			}
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v1")}, bs.SideRecord{EntryID: "b", Data: record("b", "v1")},
				bs.SideRecord{EntryID: "big", Data: record("big", big)})
			time.Sleep(2 * time.Millisecond)
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v2")})
			before := c.units(t)
			var size int64
			for _, data := range before {
				size += int64(len(data))
			}
			if n, b, err := c.side.SideSize(ctx, loc); err != nil || n != 2 || b != size {
				t.Fatalf("SideSize before: %d, %d, %v; want 2, %d", n, b, err, size)
			}
			for id, v := range want { // warm the caches
				if got, err := get(c.side, id); err != nil || !bytes.Equal(got, v) {
					t.Fatalf("%s before the move: %.40q, %v", id, got, err)
				}
			}

			// A pass in flight keeps its location.
			if err := c.side.Put(ctx, bs.SessionRef{}, []bs.SideRecord{{EntryID: "p", Data: record("p", "x")}}); err != nil {
				t.Fatal(err)
			}
			if err := c.side.MoveSide(ctx, loc, to); !errors.Is(err, bs.ErrBusy) {
				t.Errorf("MoveSide during a pass: %v, want ErrBusy", err)
			}
			if err := c.side.Delete(ctx, bs.SessionRef{}, "p"); err != nil { // ends the pass
				t.Fatal(err)
			}
			if err := c.side.Sync(ctx, bs.SessionRef{}); err != nil {
				t.Fatal(err)
			}
			before = c.units(t)
			if err := c.side.MoveSide(ctx, loc, loc); !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("MoveSide onto itself: %v, want ErrInvalid", err)
			}

			if err := c.side.MoveSide(ctx, loc, to); err != nil {
				t.Fatal(err)
			}
			if left := c.units(t); len(left) != 0 {
				t.Errorf("units left in %s: %v", loc, slices.Sorted(maps.Keys(left)))
			}
			if _, err := get(c.side, "a"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("a from the old location: %v, want ErrNotFound", err)
			}
			check := func(when string) {
				t.Helper()
				for id, v := range want {
					if got, err := get(moved, id); err != nil || !bytes.Equal(got, v) {
						t.Errorf("%s: %s from %s: %.40q, %v", when, id, to, got, err)
					}
				}
				if n, b, err := moved.SideSize(ctx, to); err != nil || n != len(before) {
					t.Errorf("%s: SideSize(%s) = %d, %d, %v; want %d units", when, to, n, b, err, len(before))
				}
				if n, b, err := c.side.SideSize(ctx, loc); err != nil || n != 0 || b != 0 {
					t.Errorf("%s: SideSize(%s) = %d, %d, %v; want 0, 0", when, loc, n, b, err)
				}
			}
			check("after the move")

			// A crash after the copies, before the removals: the units are
			// in both; running again finishes, and units of to stay.
			if c.side.Medium == nil {
				if err := os.MkdirAll(loc, 0o700); err != nil { // MoveSide removed the empty dir
					t.Fatal(err)
				}
			}
			for name, data := range before {
				c.plant(t, name, data, time.Now())
			}
			if err := c.side.MoveSide(ctx, loc, to); err != nil {
				t.Fatal(err)
			}
			if left := c.units(t); len(left) != 0 {
				t.Errorf("units left in %s after the second move: %v", loc, slices.Sorted(maps.Keys(left)))
			}
			check("after the second move")

			// Back again, byte for byte.
			if err := moved.MoveSide(ctx, to, loc); err != nil {
				t.Fatal(err)
			}
			after := c.units(t)
			if !maps.EqualFunc(before, after, bytes.Equal) {
				t.Errorf("units back in %s: %v, want %v", loc, slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
			}
			for id, v := range want {
				if got, err := get(c.side, id); err != nil || !bytes.Equal(got, v) {
					t.Errorf("%s back: %.40q, %v", id, got, err)
				}
			}

			if err := c.side.RemoveSide(ctx, loc); err != nil {
				t.Fatal(err)
			}
			if left := c.units(t); len(left) != 0 {
				t.Errorf("units left after RemoveSide: %v", slices.Sorted(maps.Keys(left)))
			}
			if _, err := get(c.side, "a"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("a after RemoveSide: %v, want ErrNotFound", err)
			}
			for _, l := range []string{loc, to} {
				if n, b, err := c.side.SideSize(ctx, l); err != nil || n != 0 || b != 0 {
					t.Errorf("SideSize(%s) of nothing: %d, %d, %v", l, n, b, err)
				}
				if err := c.side.RemoveSide(ctx, l); err != nil {
					t.Errorf("RemoveSide(%s) of nothing: %v", l, err)
				}
				if err := c.side.MoveSide(ctx, l, l+"x"); err != nil {
					t.Errorf("MoveSide(%s) of nothing: %v", l, err)
				}
			}
		})
	}
}

// TestMoveSideFileTimes: on a file system a per-entry file of an earlier
// version keeps its modification time, so it still wins over older packs.
func TestMoveSideFileTimes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	from, to := filepath.Join(dir, "s1"), filepath.Join(dir, "s2")
	side := sidedir.New(sidedir.Fixed(from))
	put(t, side, bs.SideRecord{EntryID: "b", Data: record("b", "pack")})
	planted, old := filepath.Join(from, "b.json"), time.Now().Add(-time.Hour)
	if err := os.WriteFile(planted, record("b", "file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}
	if err := side.MoveSide(ctx, from, to); err != nil {
		t.Fatal(err)
	}
	moved := sidedir.New(sidedir.Fixed(to))
	if got, err := get(moved, "b"); err != nil || !bytes.Equal(got, record("b", "pack")) {
		t.Errorf("b after the move: %q, %v; want the pack's (the file is an hour older)", got, err)
	}
	if fi, err := os.Stat(filepath.Join(to, "b.json")); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("b.json moved: %v, %v; want modified at %v", fi, err, old)
	}
	if _, err := os.Stat(from); err == nil {
		t.Errorf("%s left after the move", from)
	}
}

// TestMoveSideCopier: a medium's Copier does the copies; one failing
// midway leaves every unit in one place or both, and the move run again
// after the fault finishes it.
func TestMoveSideCopier(t *testing.T) {
	ctx := context.Background()
	m := &copyMedium{memMedium: newMemMedium(t), fail: 2}
	loc := filepath.Join(t.TempDir(), "never", "s1")
	to := filepath.Join(filepath.Dir(loc), "s2")
	side := sidedir.NewWithMedium(sidedir.Fixed(loc), m)
	moved := sidedir.NewWithMedium(sidedir.Fixed(to), m)
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		put(t, side, bs.SideRecord{EntryID: id, Data: record(id, "v")})
		time.Sleep(2 * time.Millisecond)
	}
	if err := side.MoveSide(ctx, loc, to); !errors.Is(err, bs.ErrUnavailable) {
		t.Fatalf("MoveSide with a failing copy: %v, want ErrUnavailable", err)
	}
	if len(m.units(loc)) != 3 || len(m.units(to)) != 1 {
		t.Errorf("after the fault: %d units in from, %d in to; want 3 and 1", len(m.units(loc)), len(m.units(to)))
	}
	m.fail = 0
	if err := side.MoveSide(ctx, loc, to); err != nil {
		t.Fatal(err)
	}
	if len(m.units(loc)) != 0 || len(m.units(to)) != 3 || m.commits != 3 {
		t.Errorf("after the second move: %d units in from, %d in to, %d commits; want 0, 3 and the 3 of the passes",
			len(m.units(loc)), len(m.units(to)), m.commits)
	}
	for i := range 3 {
		id := fmt.Sprintf("e%d", i)
		if got, err := get(moved, id); err != nil || !bytes.Equal(got, record(id, "v")) {
			t.Errorf("%s: %q, %v", id, got, err)
		}
	}
}
