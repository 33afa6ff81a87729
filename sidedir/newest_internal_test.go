package sidedir

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// writeBarePack writes a pack named for time at, holding one record of
// key, whose index has no pass time (as a pack written by hand may have).
func writeBarePack(t *testing.T, dir, key string, rec []byte, at time.Time) string {
	t.Helper()
	enc, _ := zstd.NewWriter(nil)
	frame := enc.EncodeAll(rec, nil)
	ix := &packIndex{Format: PackFormat, Entries: map[string]packEntry{
		key: {Offset: 0, Length: int64(len(frame)), Size: int64(len(rec)), CRC32C: recordCRC(rec), Time: at},
	}}
	tail, err := packTail(ix, int64(len(frame)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, packName(at))
	if err := os.WriteFile(path, append(frame, tail...), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNewestPackWithoutPassTime: a pack whose index has no pass time is
// as old as its name says, for every reader alike. Get, Locate, List,
// SideUnits and DropUnits agree on which record of the key is the newest:
// the pack's when the per-entry file is older than the pack's name, the
// file's when it is newer.
func TestNewestPackWithoutPassTime(t *testing.T) {
	ctx := context.Background()
	ref := bs.SessionRef{}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		fileTime time.Time
		packWins bool
	}{
		{"file older than the pack's name", at.Add(-time.Hour), true},
		{"file newer than the pack's name", at.Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			packRec, fileRec := []byte(`{"entry_id":"e","from":"pack"}`+"\n"), []byte(`{"entry_id":"e","from":"file"}`)
			pack := writeBarePack(t, dir, "e", packRec, at)
			file := filepath.Join(dir, "e.json")
			if err := os.WriteFile(file, fileRec, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(file, tc.fileTime, tc.fileTime); err != nil {
				t.Fatal(err)
			}
			winner, want, loser := pack, packRec, file
			if !tc.packWins {
				winner, want, loser = file, fileRec, pack
			}
			d := New(Fixed(dir))
			got, err := d.Get(ctx, ref, "e")
			if err != nil || string(got.Data) != string(want) {
				t.Errorf("Get: %q, %v; want %q", got.Data, err, want)
			}
			if in, err := d.Locate(ctx, ref, "e"); err != nil || in.Location != winner {
				t.Errorf("Locate: %+v, %v; want %s", in, err, winner)
			}
			infos, err := d.List(ctx, ref)
			if err != nil || len(infos) != 1 || infos[0].Location != winner {
				t.Errorf("List: %+v, %v; want one record in %s", infos, err, winner)
			}
			if tc.packWins && (len(infos) != 1 || !infos[0].ModTime.Equal(at)) {
				t.Errorf("List: the pack's record is timed %v, want the name's %v", infos, at)
			}
			units, err := d.SideUnits(ctx, ref)
			if err != nil || len(units) != 2 {
				t.Fatalf("SideUnits: %+v, %v", units, err)
			}
			for _, u := range units {
				path := filepath.Join(dir, u.Name)
				switch {
				case path == winner && !slices.Equal(u.Live, []string{"e"}):
					t.Errorf("unit %s holds the newest record of e, but SideUnits says live %v", u.Name, u.Live)
				case path == loser && (len(u.Live) != 0 || u.Stale != 1):
					t.Errorf("unit %s holds an older record of e, but SideUnits says live %v, stale %d", u.Name, u.Live, u.Stale)
				}
				if u.Kind == bs.SideUnitPack && !u.Time.Equal(at) {
					t.Errorf("pack unit timed %v, want its name's %v", u.Time, at)
				}
			}
			// Pruning the unit that holds the older record loses nothing.
			res, err := d.DropUnits(ctx, ref, []string{filepath.Base(loser)}, []string{"e"})
			if err != nil || res.Dropped != 0 || res.Removed != 1 {
				t.Errorf("DropUnits of the older unit: %+v, %v; want it removed and nothing dropped", res, err)
			}
			got, err = d.Get(ctx, ref, "e")
			if err != nil || string(got.Data) != string(want) {
				t.Errorf("Get after DropUnits: %q, %v; want %q", got.Data, err, want)
			}
		})
	}
}
