package sidedir_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// toolCallIDs are keys that come from no transcript entry: tool-call ids
// as providers and hosts write them, stored before any entry exists.
var toolCallIDs = []string{
	"toolu_01A09q90qw90lq917835lq9",
	"call_AbC123xyz",
	"call_abc|fc_123",
	"functions.bash:0",
	"call_<odd>&\"quoted\"",
	strings.Repeat("k", bs.MaxSideKeyLen),
}

// TestToolCallKeys: records keyed by tool-call ids are put, synced, read
// back by a fresh store (the pack's index holds their keys), listed,
// located, seen by SideUnits as live in their pack, and deleted.
func TestToolCallKeys(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ref := bs.SessionRef{}
	side := sidedir.New(sidedir.Fixed(dir))
	var recs []bs.SideRecord
	for _, id := range toolCallIDs {
		recs = append(recs, bs.SideRecord{EntryID: id, Data: record(id, "result of "+id)})
	}
	if err := side.Put(ctx, ref, recs); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	fresh := sidedir.New(sidedir.Fixed(dir))
	for _, s := range []*sidedir.Store{side, fresh} {
		for _, id := range toolCallIDs {
			got, err := get(s, id)
			if err != nil || string(got) != string(record(id, "result of "+id)) {
				t.Errorf("Get %q: %q, %v", id, got, err)
			}
			if in, err := s.Locate(ctx, ref, id); err != nil || filepath.Dir(in.Location) != dir {
				t.Errorf("Locate %q: %+v, %v", id, in, err)
			}
		}
		infos, err := s.List(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, in := range infos {
			listed = append(listed, in.EntryID)
		}
		if want := slices.Sorted(slices.Values(toolCallIDs)); !slices.Equal(listed, want) {
			t.Errorf("List: %q, want %q", listed, want)
		}
		units, err := s.SideUnits(ctx, ref)
		if err != nil || len(units) != 1 || units[0].Kind != bs.SideUnitPack {
			t.Fatalf("SideUnits: %+v, %v; want one pack", units, err)
		}
		if want := slices.Sorted(slices.Values(toolCallIDs)); !slices.Equal(units[0].Live, want) {
			t.Errorf("SideUnits: live %q, want %q", units[0].Live, want)
		}
	}
	if err := side.Delete(ctx, ref, toolCallIDs[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := get(fresh, toolCallIDs[2]); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
}

// TestBadKeys: a key that could reach outside the side directory, or name
// no file, is refused by every method, and nothing is written.
func TestBadKeys(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "side")
	ref := bs.SessionRef{}
	side := sidedir.New(sidedir.Fixed(dir))
	for _, key := range []string{"", ".", "..", "../x", "a/b", "/etc/passwd", `a\b`, `..\x`, "a\x00b", "\x00",
		"a b", "a\nb", "caf\u00e9", strings.Repeat("k", bs.MaxSideKeyLen+1)} {
		if err := bs.CheckSideKey(key); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("CheckSideKey(%q): %v, want ErrInvalid", key, err)
		}
		if err := side.Put(ctx, ref, []bs.SideRecord{{EntryID: key, Data: []byte("{}")}}); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("Put %q: %v, want ErrInvalid", key, err)
		}
		if _, err := side.Get(ctx, ref, key); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("Get %q: %v, want ErrInvalid", key, err)
		}
		if _, err := side.Locate(ctx, ref, key); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("Locate %q: %v, want ErrInvalid", key, err)
		}
		if err := side.Delete(ctx, ref, key); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("Delete %q: %v, want ErrInvalid", key, err)
		}
	}
	if err := side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the side dir exists after refused keys only: %v", err)
	}
}
