package sidedir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"pgregory.net/rapid"
)

// TestMarshalIndexMatchesJSON checks the hand-written index encoding
// against encoding/json, byte for byte, on random indexes (odd ids and
// zones take the encoding/json path inside marshalIndex).
func TestMarshalIndexMatchesJSON(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		id := rapid.StringMatching(`[A-Za-z0-9._:\-]{1,12}|[<>&"\\ é\x01]{1,4}`)
		tm := rapid.Custom(func(rt *rapid.T) time.Time {
			t := time.Unix(rapid.Int64Range(-1e11, 3e11).Draw(rt, "sec"), rapid.Int64Range(0, 999999999).Draw(rt, "ns"))
			switch rapid.IntRange(0, 2).Draw(rt, "zone") {
			case 0:
				return t.UTC()
			case 1:
				return t.In(time.FixedZone("x", rapid.IntRange(-50000, 50000).Draw(rt, "off")))
			}
			return t.In(time.FixedZone("y", 3600*rapid.IntRange(-12, 12).Draw(rt, "h")))
		})
		ix := &packIndex{Format: PackFormat, PassTime: tm.Draw(rt, "pass")}
		if rapid.Bool().Draw(rt, "entries") {
			ix.Entries = map[string]packEntry{}
			for range rapid.IntRange(0, 20).Draw(rt, "n") {
				e := packEntry{
					Offset: rapid.Int64Range(0, 1<<40).Draw(rt, "off"), Length: rapid.Int64Range(0, 1<<30).Draw(rt, "len"),
					Start: rapid.Int64Range(0, 3).Draw(rt, "start"), Size: rapid.Int64Range(0, 1<<30).Draw(rt, "size"),
					Time: tm.Draw(rt, "time")}
				// Format 2 has a crc32c, format 1 a sha256; both or
				// neither must encode the same way too.
				sums := rapid.IntRange(0, 3).Draw(rt, "sums")
				if sums&1 != 0 {
					e.CRC32C = rapid.StringMatching(`[0-9a-f]{8}|<&>`).Draw(rt, "crc")
				}
				if sums&2 != 0 {
					e.SHA256 = rapid.StringMatching(`[0-9a-f]{64}|<&>`).Draw(rt, "sum")
				}
				ix.Entries[id.Draw(rt, "id")] = e
			}
		}
		if rapid.Bool().Draw(rt, "deleted") {
			ix.Deleted = map[string]time.Time{}
			for range rapid.IntRange(0, 5).Draw(rt, "nd") {
				ix.Deleted[id.Draw(rt, "did")] = tm.Draw(rt, "dtime")
			}
		}
		want, werr := json.Marshal(ix)
		got, gerr := marshalIndex(ix)
		if (werr != nil) != (gerr != nil) {
			rt.Fatalf("errors differ: %v vs %v", gerr, werr)
		}
		if !bytes.Equal(got, want) {
			rt.Fatalf("marshalIndex:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

// TestPackFormat1 reads packs of the first format, whose index checks
// each record with a sha256 instead of a CRC-32C: every record comes
// back, a record whose sha256 no longer matches fails alone, and an
// entry with no checksum at all makes the index unreadable.
func TestPackFormat1(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs := map[string][]byte{}
	var put []bs.SideRecord
	for _, id := range []string{"a1", "a2", "a3"} {
		recs[id] = []byte(`{"entry_id":"` + id + `","v":"` + strings.Repeat(id, 50) + `"}` + "\n")
		put = append(put, bs.SideRecord{EntryID: id, Data: recs[id]})
	}
	w := New(Fixed(dir))
	if err := w.Put(ctx, bs.SessionRef{}, put); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx, bs.SessionRef{}); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(dir, packPrefix+"*"+packSuffix))
	if len(packs) != 1 {
		t.Fatalf("packs %v, want one", packs)
	}
	orig, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	// rewrite gives the pack a format 1 index made by edit.
	rewrite := func(edit func(id string, e *packEntry)) {
		t.Helper()
		ix, err := readPackIndex(bytes.NewReader(orig), int64(len(orig)), packs[0])
		if err != nil {
			t.Fatal(err)
		}
		if ix.Format != PackFormat {
			t.Fatalf("new pack's format %q, want %q", ix.Format, PackFormat)
		}
		ix.Format = packFormatV1
		for id, e := range ix.Entries {
			sum := sha256.Sum256(recs[id])
			e.SHA256, e.CRC32C = hex.EncodeToString(sum[:]), ""
			edit(id, &e)
			ix.Entries[id] = e
		}
		off := int64(binary.LittleEndian.Uint64(orig[len(orig)-16:]))
		tail, err := packTail(ix, off)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(packs[0], append(bytes.Clone(orig[:off]), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) ([]byte, error) {
		r, err := New(Fixed(dir)).Get(ctx, bs.SessionRef{}, id)
		return r.Data, err
	}

	rewrite(func(string, *packEntry) {})
	for id, want := range recs {
		if got, err := get(id); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; want the record back", id, got, err)
		}
	}

	rewrite(func(id string, e *packEntry) {
		if id == "a2" {
			e.SHA256 = strings.Repeat("0", 64)
		}
	})
	for id, want := range recs {
		got, err := get(id)
		switch {
		case id == "a2" && (!errors.Is(err, bs.ErrCorrupt) || !strings.Contains(err.Error(), "sha256")):
			t.Errorf("a2: %v, want ErrCorrupt naming the sha256", err)
		case id != "a2" && (err != nil || !bytes.Equal(got, want)):
			t.Errorf("%s: %q, %v; want the record back", id, got, err)
		}
	}

	rewrite(func(id string, e *packEntry) {
		if id == "a3" {
			e.SHA256 = ""
		}
	})
	for id := range recs {
		if _, err := get(id); !errors.Is(err, bs.ErrCorrupt) || !strings.Contains(err.Error(), "no record checksum") {
			t.Errorf("%s with a checksum-less entry in the index: %v, want ErrCorrupt", id, err)
		}
	}
}
