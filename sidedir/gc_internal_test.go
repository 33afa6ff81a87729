package sidedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TestRepackCrash: a failure between the new pack's write and its rename
// leaves the old packs whole and no temp file; a crash after the rename
// but before the old packs are removed leaves both, every record
// readable, and the next prune finishes the job.
func TestRepackCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := New(Fixed(dir))
	ref := bs.SessionRef{}
	for _, id := range []string{"a", "b"} {
		if err := d.Put(ctx, ref, []bs.SideRecord{{EntryID: id, Data: []byte(`{"entry_id":"` + id + `"}`)}}); err != nil {
			t.Fatal(err)
		}
		if err := d.Sync(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	units, err := d.SideUnits(ctx, ref)
	if err != nil || len(units) != 2 {
		t.Fatalf("units %+v, %v", units, err)
	}
	names := []string{units[0].Name, units[1].Name}
	check := func(when string) {
		t.Helper()
		for _, id := range []string{"a", "b"} {
			r, err := d.Get(ctx, ref, id)
			if err != nil || !strings.Contains(string(r.Data), id) {
				t.Errorf("%s: entry %s: %q, %v", when, id, r.Data, err)
			}
		}
	}

	boom := errors.New("power cut")
	renameHook = func(tmp string) error {
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("hook: the temp pack is not there: %v", err)
		}
		return boom
	}
	_, err = d.DropUnits(ctx, ref, names, []string{"a", "b"})
	renameHook = nil
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want the hook's", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("after a failed repack the dir holds %d files, want the 2 old packs", len(ents))
	}
	check("after a failed repack")

	// A crash after the rename: the new pack exists beside the old ones.
	s, err := d.survey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.repack(ctx, s, map[string]bool{"a": true, "b": true}, nil, units[1].Time); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "pack-*")); len(m) != 3 {
		t.Errorf("after the rename %d packs, want 3", len(m))
	}
	check("after a crash before the old packs were removed")
	res, err := d.DropUnits(ctx, ref, names, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 2 {
		t.Errorf("removed %d, want 2", res.Removed)
	}
	check("after the next prune")
}

// TestIndexCacheBounded: the pack-index cache keeps at most
// IndexCacheEntries entries, dropping the least recently used packs, and
// a dropped index is read again when needed.
func TestIndexCacheBounded(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d := &Store{Dirs: Fixed(root), IndexCacheEntries: 25}
	var refs []string
	for p := 0; p < 6; p++ {
		dir := filepath.Join(root, fmt.Sprint(p))
		s := &Store{Dirs: Fixed(dir)}
		for i := 0; i < 10; i++ {
			id := fmt.Sprintf("e%d-%d", p, i)
			if err := s.Put(ctx, bs.SessionRef{}, []bs.SideRecord{{EntryID: id, Data: []byte(`{"entry_id":"` + id + `"}` + "\n")}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Sync(ctx, bs.SessionRef{}); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, dir)
	}
	for round := 0; round < 2; round++ {
		for p, dir := range refs {
			d.Dirs = Fixed(dir)
			got, err := d.Get(ctx, bs.SessionRef{}, fmt.Sprintf("e%d-%d", p, 3))
			if err != nil || !strings.Contains(string(got.Data), fmt.Sprintf("e%d-3", p)) {
				t.Fatalf("pack %d: %q %v", p, got.Data, err)
			}
			d.mu.Lock()
			cached, n := d.cached, len(d.indexes)
			d.mu.Unlock()
			if cached > 25 || n > 3 {
				t.Fatalf("after pack %d: %d entries in %d cached indexes, want at most 25", p, cached, n)
			}
		}
	}
}
