package sidedir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// memMedium is a sidedir.Medium in memory: loc → name → bytes. Its
// listing has no stamp (every read lists afresh, as an object store's
// would), a missing location has no units and RemoveLoc removes an empty
// one. Temp packs are files in tmp, read back whole by Commit.
type memMedium struct {
	tmp string

	mu      sync.Mutex
	locs    map[string]map[string]memUnit
	commits int
	syncs   int
}

type memUnit struct {
	data []byte
	mod  time.Time
}

// memInfo describes a unit of a memMedium.
type memInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) Mode() fs.FileMode  { return 0o600 }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return false }
func (i memInfo) Sys() any           { return nil }

// memBlob is an open unit: ranged reads over its bytes.
type memBlob struct {
	*bytes.Reader
	info memInfo
}

func (b memBlob) Stat() (fs.FileInfo, error) { return b.info, nil }
func (b memBlob) Close() error               { return nil }

var _ sidedir.Medium = (*memMedium)(nil)

func newMemMedium(t *testing.T) *memMedium {
	return &memMedium{tmp: t.TempDir(), locs: map[string]map[string]memUnit{}}
}

func (m *memMedium) notExist(op, loc, name string) error {
	return &fs.PathError{Op: op, Path: m.Describe(loc, name), Err: fs.ErrNotExist}
}

func (m *memMedium) Stamp(context.Context, string) (time.Time, error) { return time.Time{}, nil }

func (m *memMedium) List(_ context.Context, loc string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []fs.DirEntry
	for name, u := range m.locs[loc] {
		out = append(out, fs.FileInfoToDirEntry(memInfo{name, int64(len(u.data)), u.mod}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m *memMedium) Stat(_ context.Context, loc, name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.locs[loc][name]
	if !ok {
		return nil, m.notExist("stat", loc, name)
	}
	return memInfo{name, int64(len(u.data)), u.mod}, nil
}

func (m *memMedium) Open(_ context.Context, loc, name string) (sidedir.Blob, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.locs[loc][name]
	if !ok {
		return nil, m.notExist("open", loc, name)
	}
	return memBlob{bytes.NewReader(u.data), memInfo{name, int64(len(u.data)), u.mod}}, nil
}

func (m *memMedium) Create(_ context.Context, loc string) (*os.File, bool, error) {
	f, err := os.CreateTemp(m.tmp, ".pack-*.tmp")
	return f, false, err
}

func (m *memMedium) Commit(_ context.Context, loc string, tmp *os.File, name string) error {
	data, err := os.ReadFile(tmp.Name())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	os.Remove(tmp.Name())
	m.put(loc, name, data, time.Now())
	m.mu.Lock()
	m.commits++
	m.mu.Unlock()
	return nil
}

func (m *memMedium) put(loc, name string, data []byte, mod time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locs[loc] == nil {
		m.locs[loc] = map[string]memUnit{}
	}
	m.locs[loc][name] = memUnit{data: data, mod: mod}
}

func (m *memMedium) Remove(_ context.Context, loc, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.locs[loc][name]; !ok {
		return m.notExist("remove", loc, name)
	}
	delete(m.locs[loc], name)
	return nil
}

func (m *memMedium) Sync(context.Context, string, bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.syncs++
	return nil
}

func (m *memMedium) RemoveLoc(_ context.Context, loc string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	units, ok := m.locs[loc]
	if !ok || len(units) > 0 {
		return false, nil
	}
	delete(m.locs, loc)
	return true, nil
}

func (m *memMedium) Describe(loc, name string) string { return "mem://" + loc + "/" + name }

// units returns the units of loc by name.
func (m *memMedium) units(loc string) map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for name, u := range m.locs[loc] {
		out[name] = u.data
	}
	return out
}

// mediumCase is a Store on one medium, with what a test needs to reach
// the units behind the Store's back.
type mediumCase struct {
	side *sidedir.Store
	// units returns the units of the side location by name.
	units func(t *testing.T) map[string][]byte
	// plant writes a unit (a damaged pack, a per-entry file) modified at mod.
	plant func(t *testing.T, name string, data []byte, mod time.Time)
	// where returns the Location of a unit.
	where func(name string) string
	// objects is set for a medium without per-entry files (whose units have
	// no modification time) and without empty locations: an object store.
	objects bool
}

// media returns the table of media the engine runs on: the file system
// (New) and memMedium (NewWithMedium), whose location is a path that must
// never appear on disk.
func media() []struct {
	name string
	new  func(t *testing.T) mediumCase
} {
	return []struct {
		name string
		new  func(t *testing.T) mediumCase
	}{
		{"file system", func(t *testing.T) mediumCase {
			dir := filepath.Join(t.TempDir(), "side")
			return mediumCase{
				side: sidedir.New(sidedir.Fixed(dir)),
				units: func(t *testing.T) map[string][]byte {
					out := map[string][]byte{}
					ents, _ := os.ReadDir(dir)
					for _, e := range ents {
						data, err := os.ReadFile(filepath.Join(dir, e.Name()))
						if err != nil {
							t.Fatal(err)
						}
						out[e.Name()] = data
					}
					return out
				},
				plant: func(t *testing.T, name string, data []byte, mod time.Time) {
					p := filepath.Join(dir, name)
					if err := os.WriteFile(p, data, 0o600); err != nil {
						t.Fatal(err)
					}
					if err := os.Chtimes(p, mod, mod); err != nil {
						t.Fatal(err)
					}
				},
				where: func(name string) string { return filepath.Join(dir, name) },
			}
		}},
		{"memory", func(t *testing.T) mediumCase {
			loc := filepath.Join(t.TempDir(), "never", "side")
			m := newMemMedium(t)
			t.Cleanup(func() {
				if _, err := os.Stat(filepath.Dir(loc)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the store touched the file system at %s: %v", loc, err)
				}
				if ents, _ := os.ReadDir(m.tmp); len(ents) > 0 {
					t.Errorf("temp packs left behind: %v", ents)
				}
			})
			return mediumCase{
				side:  sidedir.NewWithMedium(sidedir.Fixed(loc), m),
				units: func(*testing.T) map[string][]byte { return m.units(loc) },
				plant: func(_ *testing.T, name string, data []byte, mod time.Time) { m.put(loc, name, data, mod) },
				where: func(name string) string { return m.Describe(loc, name) },
			}
		}},
		{"s3", s3Case},
	}
}

// packNames returns the pack names of units, oldest first.
func packNames(units map[string][]byte) []string {
	var out []string
	for name := range units {
		if strings.HasPrefix(name, "pack-") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestMedium runs the store's core behaviours on each medium: the engine
// (packs, frames, checksums, the newest-record rule, the pending pack,
// Delete, SideUnits and DropUnits) needs nothing beyond its Medium, and
// gives the same answers on both.
func TestMedium(t *testing.T) {
	ctx := context.Background()
	ref := bs.SessionRef{}
	big := strings.Repeat("0123456789abcdef", 5000) // a frame of its own (80 KB)
	for _, tt := range []struct {
		name string
		run  func(t *testing.T, c mediumCase)
	}{
		{"put, get before and after sync, list", func(t *testing.T, c mediumCase) {
			recs := []bs.SideRecord{{EntryID: "a", Data: record("a", "small a")}, {EntryID: "call_1|fc_2", Data: record("call_1|fc_2", "tool call")},
				{EntryID: "big", Data: record("big", big)}}
			if err := c.side.Put(ctx, ref, recs); err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if got, err := get(c.side, r.EntryID); err != nil || !bytes.Equal(got, r.Data) {
					t.Errorf("pending %s: %.40q, %v", r.EntryID, got, err)
				}
			}
			if err := c.side.Sync(ctx, ref); err != nil {
				t.Fatal(err)
			}
			names := packNames(c.units(t))
			if len(names) != 1 || len(c.units(t)) != 1 {
				t.Fatalf("units after one pass %v, want one pack", names)
			}
			cold := sidedir.Store{Dirs: c.side.Dirs, Medium: c.side.Medium} // no caches
			for _, r := range recs {
				for _, s := range []*sidedir.Store{c.side, &cold} {
					if got, err := get(s, r.EntryID); err != nil || !bytes.Equal(got, r.Data) {
						t.Errorf("synced %s: %.40q, %v", r.EntryID, got, err)
					}
				}
			}
			infos, err := c.side.List(ctx, ref)
			if err != nil || len(infos) != 3 {
				t.Fatalf("List: %+v, %v", infos, err)
			}
			for _, in := range infos {
				if in.Location != c.where(names[0]) || in.Size <= 0 {
					t.Errorf("List: %+v, want in %s", in, c.where(names[0]))
				}
			}
			if _, err := get(c.side, "nope"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("missing key: %v, want ErrNotFound", err)
			}
		}},
		{"newest record across passes", func(t *testing.T, c mediumCase) {
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v1")}, bs.SideRecord{EntryID: "b", Data: record("b", "v1")})
			time.Sleep(2 * time.Millisecond) // pack names sort by time
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v2")})
			names := packNames(c.units(t))
			if len(names) != 2 {
				t.Fatalf("packs %v, want 2", names)
			}
			for id, want := range map[string]string{"a": "v2", "b": "v1"} {
				if got, err := get(c.side, id); err != nil || !bytes.Equal(got, record(id, want)) {
					t.Errorf("%s: %q, %v; want %s", id, got, err, want)
				}
			}
			infos, err := c.side.List(ctx, ref)
			if err != nil || len(infos) != 2 || infos[0].Location != c.where(names[1]) || infos[1].Location != c.where(names[0]) {
				t.Errorf("List: %+v, %v; want a in %s, b in %s", infos, err, names[1], names[0])
			}
			if c.objects {
				return
			}
			// A per-entry file newer than the packs wins, as on disk.
			c.plant(t, "b.json", record("b", "file"), time.Now().Add(time.Hour))
			if got, err := get(c.side, "b"); err != nil || !bytes.Equal(got, record("b", "file")) {
				t.Errorf("b after a newer per-entry file: %q, %v", got, err)
			}
			if in, err := c.side.Locate(ctx, ref, "b"); err != nil || in.Location != c.where("b.json") {
				t.Errorf("Locate b: %+v, %v", in, err)
			}
		}},
		{"delete", func(t *testing.T, c mediumCase) {
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v1")}, bs.SideRecord{EntryID: "b", Data: record("b", "v1")})
			if err := c.side.Delete(ctx, ref, "a"); err != nil {
				t.Fatal(err)
			}
			if _, err := get(c.side, "a"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("deleted a: %v, want ErrNotFound", err)
			}
			infos, err := c.side.List(ctx, ref)
			if err != nil || len(infos) != 1 || infos[0].EntryID != "b" {
				t.Errorf("List: %+v, %v; want b only", infos, err)
			}
			units, err := c.side.SideUnits(ctx, ref)
			if err != nil || len(units) != 2 || units[1].Masks != 1 || !slices.Equal(units[0].Live, []string{"b"}) {
				t.Errorf("SideUnits: %+v, %v; want the pack (b live) and the deletion masking a", units, err)
			}
			// Deleting a key no pack holds writes nothing.
			if err := c.side.Delete(ctx, ref, "zz"); err != nil || len(c.units(t)) != 2 {
				t.Errorf("delete of a missing key: %v, %d units", err, len(c.units(t)))
			}
		}},
		{"side units and drop units (repack)", func(t *testing.T, c mediumCase) {
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v1")}, bs.SideRecord{EntryID: "b", Data: record("b", "v1")},
				bs.SideRecord{EntryID: "big", Data: record("big", big)})
			time.Sleep(2 * time.Millisecond)
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v2")})
			units, err := c.side.SideUnits(ctx, ref)
			if err != nil || len(units) != 2 || units[0].Stale != 1 || !slices.Equal(units[0].Live, []string{"b", "big"}) ||
				!slices.Equal(units[1].Live, []string{"a"}) {
				t.Fatalf("SideUnits: %+v, %v", units, err)
			}
			res, err := c.side.DropUnits(ctx, ref, []string{units[0].Name, units[1].Name}, []string{"a", "big"})
			if err != nil || res.Removed != 2 || res.Kept != 2 || res.Dropped != 1 || res.Pack == "" {
				t.Fatalf("DropUnits: %+v, %v; want 2 removed, a and big kept, b dropped", res, err)
			}
			if names := packNames(c.units(t)); !slices.Equal(names, []string{res.Pack}) {
				t.Errorf("packs %v, want the repacked %s only", names, res.Pack)
			}
			for id, want := range map[string][]byte{"a": record("a", "v2"), "big": record("big", big)} {
				if got, err := get(c.side, id); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s after repack: %.40q, %v", id, got, err)
				}
			}
			if _, err := get(c.side, "b"); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("dropped b: %v, want ErrNotFound", err)
			}
			if _, err := c.side.DropUnits(ctx, ref, []string{"pack-nope.bszst"}, nil); !errors.Is(err, bs.ErrNotFound) {
				t.Errorf("unknown unit: %v, want ErrNotFound", err)
			}
			if _, err := c.side.DropUnits(ctx, ref, []string{res.Pack}, nil); err != nil {
				t.Fatal(err)
			}
			if removed, err := c.side.RemoveSideIfEmpty(ctx, ref); err != nil || removed != !c.objects {
				t.Errorf("RemoveSideIfEmpty: %v, %v; want removed", removed, err)
			}
			if infos, err := c.side.List(ctx, ref); err != nil || len(infos) != 0 {
				t.Errorf("List after removal: %+v, %v", infos, err)
			}
		}},
		{"damaged pack", func(t *testing.T, c mediumCase) {
			put(t, c.side, bs.SideRecord{EntryID: "a", Data: record("a", "v1")})
			units := c.units(t)
			name := packNames(units)[0]
			data := bytes.Clone(units[name])
			data[len(data)-1] ^= 0xff // the trailer's tag
			c.plant(t, name, data, time.Now().Add(time.Minute))
			cold := sidedir.Store{Dirs: c.side.Dirs, Medium: c.side.Medium}
			_, err := get(&cold, "a")
			if !errors.Is(err, bs.ErrCorrupt) || !strings.Contains(err.Error(), c.where(name)) {
				t.Errorf("Get from a pack without its trailer: %v, want ErrCorrupt naming %s", err, c.where(name))
			}
			us, err := cold.SideUnits(ctx, ref)
			if err != nil || len(us) != 1 || us[0].Err == "" {
				t.Errorf("SideUnits: %+v, %v; want the pack with its error", us, err)
			}
		}},
	} {
		for _, m := range media() {
			t.Run(tt.name+"/"+m.name, func(t *testing.T) { tt.run(t, m.new(t)) })
		}
	}
}

// TestMediumSameBytes: a pack written through another medium is the same
// format, byte for byte readable by the file-system store; the medium's
// Commit and Sync run once per pass.
func TestMediumSameBytes(t *testing.T) {
	m := newMemMedium(t)
	loc := filepath.Join(t.TempDir(), "agents/main/sessions/extracted/s1") // never created
	side := sidedir.NewWithMedium(sidedir.Fixed(loc), m)
	var recs []bs.SideRecord
	for i := range 300 {
		id := fmt.Sprintf("e%03d", i)
		recs = append(recs, bs.SideRecord{EntryID: id, Data: record(id, strings.Repeat(id, i*7))})
	}
	put(t, side, recs...)
	if m.commits != 1 || m.syncs != 1 {
		t.Errorf("one pass: %d commits, %d syncs; want 1 and 1", m.commits, m.syncs)
	}
	dir := t.TempDir()
	for name, data := range m.units(loc) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local := sidedir.New(sidedir.Fixed(dir))
	for _, r := range recs {
		if got, err := get(local, r.EntryID); err != nil || !bytes.Equal(got, r.Data) {
			t.Fatalf("%s from the copied pack: %.40q, %v", r.EntryID, got, err)
		}
	}
}
