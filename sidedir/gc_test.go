package sidedir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// gcDir builds a side dir holding every kind of unit:
//
//	a.json      the first BrainSurgeon's file (__meta), older than the packs
//	b.json      our per-entry file, newer than the packs
//	pack 1      c, d, x
//	pack 2      d (newer: d in pack 1 is stale)
//	pack 3      the deletion of x (it hides x in pack 1)
func gcDir(t *testing.T) (string, *sidedir.Store, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	side := sidedir.New(sidedir.Fixed(dir))
	old := time.Now().Add(-time.Hour)
	if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"output":"legacy","__meta":{"extracted_at":"2026-01-01T00:00:00Z","trigger_type":"tool_result"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "a.json"), old, old); err != nil {
		t.Fatal(err)
	}
	put(t, side, bs.SideRecord{EntryID: "c", Data: record("c", "c1")}, bs.SideRecord{EntryID: "d", Data: record("d", "d1")},
		bs.SideRecord{EntryID: "x", Data: record("x", "x1")})
	put(t, side, bs.SideRecord{EntryID: "d", Data: record("d", "d2")})
	if err := side.Delete(context.Background(), bs.SessionRef{}, "x"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(filepath.Join(dir, "b.json"), record("b", "b1"), 0o600); err != nil {
		t.Fatal(err)
	}
	units, err := side.SideUnits(context.Background(), bs.SessionRef{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	var packNo int
	for _, u := range units {
		if u.Kind == bs.SideUnitPack {
			packNo++
			names["pack"+string(rune('0'+packNo))] = u.Name
		} else {
			names[u.Name] = u.Name
		}
	}
	return dir, side, names
}

func TestSideUnits(t *testing.T) {
	_, side, names := gcDir(t)
	units, err := side.SideUnits(context.Background(), bs.SessionRef{})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, kind   string
		live         []string
		stale, masks int
	}
	var got []row
	for _, u := range units {
		got = append(got, row{u.Name, u.Kind, u.Live, u.Stale, u.Masks})
		if u.Time.IsZero() || u.Size <= 0 || u.Err != "" {
			t.Errorf("unit %s: time %v size %d err %q", u.Name, u.Time, u.Size, u.Err)
		}
	}
	want := []row{
		{"a.json", bs.SideUnitFile, []string{"a"}, 0, 0},
		{names["pack1"], bs.SideUnitPack, []string{"c"}, 2, 0},
		{names["pack2"], bs.SideUnitPack, []string{"d"}, 0, 0},
		{names["pack3"], bs.SideUnitPack, nil, 0, 1},
		{"b.json", bs.SideUnitFile, []string{"b"}, 0, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("units %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].name != want[i].name || got[i].kind != want[i].kind || !slices.Equal(got[i].live, want[i].live) ||
			got[i].stale != want[i].stale || got[i].masks != want[i].masks {
			t.Errorf("unit %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDropUnits(t *testing.T) {
	for _, tt := range []struct {
		name      string
		units     []string // keys of gcDir's names
		keep      []string
		removed   int
		newPack   bool
		readable  []string // entries Get still finds
		gone      []string // entries Get no longer finds
		wantUnits int
	}{
		{name: "DeleteWholePack", units: []string{"pack1"}, removed: 1,
			readable: []string{"a", "b", "d"}, gone: []string{"c", "x"}, wantUnits: 4},
		{name: "RepackKeepsReferenced", units: []string{"pack1", "pack2"}, keep: []string{"c", "x"}, removed: 2, newPack: true,
			readable: []string{"a", "b", "c"}, gone: []string{"d", "x"}, wantUnits: 4},
		{name: "DeletionStillHidesOlderRecord", units: []string{"pack3"}, removed: 1, newPack: true,
			readable: []string{"c", "d"}, gone: []string{"x"}, wantUnits: 5},
		{name: "DeletionWithWhatItHides", units: []string{"pack1", "pack3"}, keep: []string{"c"}, removed: 2, newPack: true,
			readable: []string{"c", "d"}, gone: []string{"x"}, wantUnits: 4},
		{name: "LegacyFile", units: []string{"a.json"}, removed: 1, readable: []string{"b", "c"}, gone: []string{"a"}, wantUnits: 4},
		{name: "PerEntryFileIntoPack", units: []string{"b.json", "a.json"}, keep: []string{"b"}, removed: 2, newPack: true,
			readable: []string{"b"}, gone: []string{"a"}, wantUnits: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			_, side, names := gcDir(t)
			before := map[string][]byte{}
			for _, id := range []string{"a", "b", "c", "d"} {
				data, err := get(side, id) // fills the caches
				if err != nil {
					t.Fatal(err)
				}
				before[id] = data
			}
			var units []string
			for _, k := range tt.units {
				units = append(units, names[k])
			}
			res, err := side.DropUnits(ctx, bs.SessionRef{}, units, tt.keep)
			if err != nil {
				t.Fatal(err)
			}
			if res.Removed != tt.removed || (res.Pack != "") != tt.newPack {
				t.Errorf("result %+v, want %d removed, new pack %v", res, tt.removed, tt.newPack)
			}
			for _, id := range tt.readable {
				data, err := get(side, id)
				if err != nil || string(data) != string(before[id]) {
					t.Errorf("entry %s after prune: %q, %v; want %q", id, data, err, before[id])
				}
			}
			for _, id := range tt.gone {
				if _, err := get(side, id); !errors.Is(err, bs.ErrNotFound) {
					t.Errorf("entry %s after prune: %v, want ErrNotFound", id, err)
				}
			}
			after, err := side.SideUnits(ctx, bs.SessionRef{})
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != tt.wantUnits {
				t.Errorf("%d units after prune, want %d: %+v", len(after), tt.wantUnits, after)
			}
			for _, u := range after {
				if u.Name == res.Pack && len(tt.keep) > 0 && len(u.Live) == 0 {
					t.Errorf("new pack %s holds no live record", u.Name)
				}
			}
			list, err := side.List(ctx, bs.SessionRef{})
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range list {
				if slices.Contains(tt.gone, in.EntryID) {
					t.Errorf("List still has %s in %s", in.EntryID, in.Location)
				}
			}
		})
	}
}

func TestDropUnitsKeepsAge(t *testing.T) {
	ctx := context.Background()
	_, side, names := gcDir(t)
	units, _ := side.SideUnits(ctx, bs.SessionRef{})
	var t2 time.Time
	for _, u := range units {
		if u.Name == names["pack2"] {
			t2 = u.Time
		}
	}
	res, err := side.DropUnits(ctx, bs.SessionRef{}, []string{names["pack1"], names["pack2"]}, []string{"c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	units, _ = side.SideUnits(ctx, bs.SessionRef{})
	for _, u := range units {
		if u.Name == res.Pack && !u.Time.Equal(t2) {
			t.Errorf("repacked pass time %v, want the newest unit's %v", u.Time, t2)
		}
	}
}

func TestDropUnitsUnknownUnit(t *testing.T) {
	dir, side, names := gcDir(t)
	_, err := side.DropUnits(context.Background(), bs.SessionRef{}, []string{names["pack1"], "pack-nope.bszst"}, nil)
	if !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("err %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join(dir, names["pack1"])); err != nil {
		t.Errorf("pack 1 removed although the call failed: %v", err)
	}
}

// TestDropUnitsConcurrentGet: readers never fail while retention repacks
// and deletes the units they read from.
func TestDropUnitsConcurrentGet(t *testing.T) {
	ctx := context.Background()
	for round := range 10 {
		_, side, names := gcDir(t)
		want := map[string][]byte{}
		for _, id := range []string{"a", "b", "c", "d"} {
			data, err := get(side, id)
			if err != nil {
				t.Fatal(err)
			}
			want[id] = data
		}
		done, stop := make(chan struct{}), make(chan struct{})
		errs := make(chan error, 1)
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					if i > 0 {
						return
					}
				default:
				}
				for id, w := range want {
					data, err := get(side, id)
					if err != nil || string(data) != string(w) {
						select {
						case errs <- fmt.Errorf("round %d: entry %s: %q, %v", round, id, data, err):
						default:
						}
						return
					}
				}
			}
		}()
		if _, err := side.DropUnits(ctx, bs.SessionRef{}, []string{names["pack1"], names["pack2"], "a.json", "b.json"}, []string{"a", "b", "c", "d"}); err != nil {
			t.Fatal(err)
		}
		close(stop)
		<-done
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
}
