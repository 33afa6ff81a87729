package sidedir_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

func record(id, value string) []byte {
	return []byte(fmt.Sprintf(`{"format":%q,"entry_id":%q,"values":[{"path":"/x","raw":%q}]}`+"\n", "brainsurgeon.extracted/1", id, value))
}

func packs(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "pack-*.bszst"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func put(t *testing.T, side *sidedir.Store, recs ...bs.SideRecord) {
	t.Helper()
	ctx := context.Background()
	if err := side.Put(ctx, bs.SessionRef{}, recs); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
		t.Fatal(err)
	}
}

func get(side *sidedir.Store, id string) ([]byte, error) {
	r, err := side.Get(context.Background(), bs.SessionRef{}, id)
	return r.Data, err
}

// TestPackZstdCLI: a pack is a valid zstd stream whose content is the
// records as JSON lines; with CI set the zstd CLI must be installed.
func TestPackZstdCLI(t *testing.T) {
	dir := t.TempDir()
	side := sidedir.New(sidedir.Fixed(dir))
	var want bytes.Buffer
	var recs []bs.SideRecord
	for i := range 50 {
		r := record(fmt.Sprintf("e%d", i), strings.Repeat("value ", i*50))
		recs = append(recs, bs.SideRecord{EntryID: fmt.Sprintf("e%d", i), Data: r})
		want.Write(r)
	}
	put(t, side, recs...)
	ps := packs(t, dir)
	if len(ps) != 1 {
		t.Fatalf("packs %v, want one", ps)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("dir holds %d files, want the pack only", len(ents))
	}
	raw, err := os.ReadFile(ps[0])
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := zstd.NewReader(nil)
	got, err := dec.DecodeAll(raw, nil)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("Go zstd decoder: %v (%d bytes, want %d)", err, len(got), want.Len())
	}
	zstdCLI(t, ps[0], want.Bytes())
}

// zstdCLI checks `zstd -dc pack` prints want, every line valid JSON.
func zstdCLI(t *testing.T, pack string, want []byte) {
	t.Helper()
	bin, err := exec.LookPath("zstd")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI: the zstd CLI is required (apt-get install zstd)")
		}
		t.Skip("no zstd CLI")
	}
	out, err := exec.Command(bin, "-dc", pack).Output()
	if err != nil {
		t.Fatalf("zstd -dc %s: %v", pack, err)
	}
	if want != nil && !bytes.Equal(out, want) {
		t.Fatalf("zstd -dc: %d bytes, want %d", len(out), len(want))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("zstd -dc: invalid JSON line %.80q", sc.Bytes())
		}
	}
}

// TestPackMixedDir: packs, our per-entry files and the first
// BrainSurgeon's files in one directory; the newest record of each entry
// wins and List has one per entry.
func TestPackMixedDir(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(name string, data []byte, mtime time.Time) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	legacy := []byte(`{"output": "legacy", "__meta": {"extracted_at": "2026-02-19T10:00:00.000Z", "trigger_type": "tool_result"}}`)
	write("legacy.json", legacy, old)
	write("plain.json", record("plain", "p"), old)
	enc, _ := zstd.NewWriter(nil)
	write("zst.json.zst", enc.EncodeAll(record("zst", "z"), nil), old)
	write("shadowed.json", record("shadowed", "old file"), old)
	side := sidedir.New(sidedir.Fixed(dir))
	put(t, side, bs.SideRecord{EntryID: "shadowed", Data: record("shadowed", "pack 1")}, bs.SideRecord{EntryID: "p1", Data: record("p1", "one")})
	put(t, side, bs.SideRecord{EntryID: "p1", Data: record("p1", "two")})
	time.Sleep(20 * time.Millisecond)
	write("newer.json", record("newer", "file"), time.Now().Add(time.Minute))
	put(t, side, bs.SideRecord{EntryID: "newer", Data: record("newer", "pack, older than the file")})

	want := map[string][]byte{"legacy": legacy, "plain": record("plain", "p"), "zst": record("zst", "z"),
		"shadowed": record("shadowed", "pack 1"), "p1": record("p1", "two"), "newer": record("newer", "file")}
	fresh := sidedir.New(sidedir.Fixed(dir))
	for _, s := range []*sidedir.Store{side, fresh} {
		for id, w := range want {
			got, err := get(s, id)
			if err != nil || !bytes.Equal(got, w) {
				t.Errorf("Get %s = %q, %v; want %q", id, got, err, w)
			}
		}
		infos, err := s.List(context.Background(), bs.SessionRef{})
		if err != nil || len(infos) != len(want) {
			t.Fatalf("List: %+v %v", infos, err)
		}
		for _, in := range infos {
			if in.EntryID == "p1" && !strings.HasSuffix(in.Location, ps(t, dir)[1]) {
				t.Errorf("p1 at %s, want the second pack", in.Location)
			}
		}
	}
	if _, err := get(side, "none"); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("missing entry: %v", err)
	}
	// Delete: a tombstone pack hides the pack records.
	for _, id := range []string{"p1", "plain"} {
		if err := side.Delete(context.Background(), bs.SessionRef{}, id); err != nil {
			t.Fatal(err)
		}
		for _, s := range []*sidedir.Store{side, sidedir.New(sidedir.Fixed(dir))} {
			if _, err := get(s, id); !errors.Is(err, bs.ErrNotFound) {
				t.Fatalf("deleted %s: %v", id, err)
			}
		}
	}
	for _, p := range packs(t, dir) {
		zstdCLI(t, p, nil)
	}
}

// ps returns the base names of dir's packs, oldest first.
func ps(t *testing.T, dir string) []string {
	var out []string
	for _, p := range packs(t, dir) {
		out = append(out, filepath.Base(p))
	}
	return out
}

// TestPackBadInput: a truncated pack, a pack with a corrupt index, a
// record whose content does not match its checksum and a garbled frame fail
// for the entries they hold only, with an error naming the pack and
// wrapping ErrCorrupt.
func TestPackBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, pack string)
		ids    []string // entries that fail
	}{
		{"Truncated", func(t *testing.T, pack string) {
			fi, _ := os.Stat(pack)
			if err := os.Truncate(pack, fi.Size()-10); err != nil {
				t.Fatal(err)
			}
		}, []string{"b1", "b2"}},
		{"CorruptIndex", func(t *testing.T, pack string) {
			b, _ := os.ReadFile(pack)
			i := bytes.Index(b, []byte(`{"format":"`+sidedir.PackFormat))
			b[i] = '['
			if err := os.WriteFile(pack, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"b1", "b2"}},
		{"ChecksumMismatch", func(t *testing.T, pack string) {
			b, _ := os.ReadFile(pack)
			i := bytes.Index(b, []byte(`"b2":{`))
			j := bytes.Index(b[i:], []byte(`"crc32c":"`)) + i + len(`"crc32c":"`)
			b[j] ^= 1 // '0'..'9' ↔ '1'..'8', 'a'..'f' stay hex-like; the checksum no longer matches
			if err := os.WriteFile(pack, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"b2"}},
		{"RecordGarbage", func(t *testing.T, pack string) {
			if _, err := sidetest.CorruptRecord(filepath.Dir(pack), "b2"); err != nil {
				t.Fatal(err)
			}
		}, []string{"b2"}},
		{"FrameGarbage", func(t *testing.T, pack string) {
			// b1 and b2 share a frame: both fail, nothing else does.
			off, n, err := sidetest.PackFrame(pack, "b2")
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(pack, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(n)), off); err != nil {
				t.Fatal(err)
			}
		}, []string{"b1", "b2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			side := sidedir.New(sidedir.Fixed(dir))
			put(t, side, bs.SideRecord{EntryID: "a1", Data: record("a1", "a")})
			put(t, side, bs.SideRecord{EntryID: "b1", Data: record("b1", "b")}, bs.SideRecord{EntryID: "b2", Data: record("b2", "bb")})
			put(t, side, bs.SideRecord{EntryID: "c1", Data: record("c1", "c")})
			bad := filepath.Join(dir, ps(t, dir)[1])
			// Warm the index cache: damage must still be seen.
			if _, err := get(side, "b1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			tc.damage(t, bad)
			for _, s := range []*sidedir.Store{side, sidedir.New(sidedir.Fixed(dir))} {
				for _, id := range []string{"a1", "b1", "b2", "c1"} {
					data, err := get(s, id)
					failing := strings.Contains(strings.Join(tc.ids, " "), id)
					switch {
					case failing && (!errors.Is(err, bs.ErrCorrupt) || !strings.Contains(err.Error(), bad)):
						t.Errorf("%s: err %v, want ErrCorrupt naming %s", id, err, bad)
					case failing && len(tc.ids) == 1 && !strings.Contains(err.Error(), id):
						t.Errorf("%s: err %v does not name the entry", id, err)
					case !failing && (err != nil || len(data) == 0):
						t.Errorf("%s: %v", id, err)
					}
				}
			}
		})
	}
}

// TestPackPending: records Put from several goroutines are readable before
// Sync and land in one pack at Sync; records Put after it go to the next.
func TestPackPending(t *testing.T) {
	dir := t.TempDir()
	side := sidedir.New(sidedir.Fixed(dir))
	ctx := context.Background()
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			var err error
			for i := range 20 {
				id := fmt.Sprintf("g%d-%d", g, i)
				if err = side.Put(ctx, bs.SessionRef{}, []bs.SideRecord{{EntryID: id, Data: record(id, id)}}); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got, err := get(side, "g3-7"); err != nil || !bytes.Equal(got, record("g3-7", "g3-7")) {
		t.Fatalf("pending record: %q %v", got, err)
	}
	if len(packs(t, dir)) != 0 {
		t.Fatal("a pack before Sync")
	}
	if err := side.Sync(ctx, bs.SessionRef{}); err != nil {
		t.Fatal(err)
	}
	infos, err := sidedir.New(sidedir.Fixed(dir)).List(ctx, bs.SessionRef{})
	if err != nil || len(infos) != 160 || len(packs(t, dir)) != 1 {
		t.Fatalf("%d records, %d packs, %v", len(infos), len(packs(t, dir)), err)
	}
	put(t, side, bs.SideRecord{EntryID: "g3-7", Data: record("g3-7", "again")})
	if got, err := get(sidedir.New(sidedir.Fixed(dir)), "g3-7"); err != nil || !bytes.Equal(got, record("g3-7", "again")) || len(packs(t, dir)) != 2 {
		t.Fatalf("newest record: %q %v", got, err)
	}
}
