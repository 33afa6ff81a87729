// Package sidetest holds test helpers that read and write side records in
// a side directory directly, and build the stores tests need.
package sidetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// Dir returns the side directory of a JSONL transcript's session.
func Dir(transcript, sessionID string) string {
	return filepath.Join(filepath.Dir(transcript), "extracted", sessionID)
}

// stores keeps one sidedir.Store per side dir, so that reading many records
// does not re-read pack indexes (a sidedir.Store notices changed packs).
var stores sync.Map

func dirStore(dir string) *sidedir.Store {
	s, _ := stores.LoadOrStore(dir, sidedir.New(sidedir.Fixed(dir)))
	return s.(*sidedir.Store)
}

// ReadRecord reads the record of an entry from dir and returns it with
// where it is stored (its pack or per-entry file).
func ReadRecord(dir, entryID string) (*extract.Record, string, error) {
	rec, err := extract.LoadRecord(context.Background(), dirStore(dir), bs.SessionRef{}, entryID)
	return rec, Location(dir, entryID), err
}

// Location returns where the newest record of an entry is stored in dir,
// or "".
func Location(dir, entryID string) string {
	in, err := dirStore(dir).Locate(context.Background(), bs.SessionRef{}, entryID)
	if err != nil {
		return ""
	}
	return in.Location
}

// WriteRecord writes rec into dir as a pack of one record and syncs it.
func WriteRecord(dir string, rec *extract.Record) error {
	side := sidedir.New(sidedir.Fixed(dir))
	if _, err := extract.SaveRecord(context.Background(), side, bs.SessionRef{}, rec); err != nil {
		return err
	}
	return side.Sync(context.Background(), bs.SessionRef{})
}

// RemoveRecord deletes the record of an entry from dir.
func RemoveRecord(dir, entryID string) error {
	return sidedir.New(sidedir.Fixed(dir)).Delete(context.Background(), bs.SessionRef{}, entryID)
}

// CorruptRecord damages the stored record of an entry in dir: in a pack,
// the record's bytes inside its frame are overwritten with garbage of the
// same length and the pack is rewritten with every frame recompressed, so
// the record no longer matches its sha256 while the records sharing its
// frame stay intact; a per-entry file is replaced by invalid JSON. It
// returns where the record is.
func CorruptRecord(dir, entryID string) (string, error) {
	loc := Location(dir, entryID)
	if loc == "" {
		return "", fmt.Errorf("no record of entry %s in %s", entryID, dir)
	}
	if !strings.HasSuffix(loc, ".bszst") {
		return loc, os.WriteFile(loc, []byte("{not json"), 0o600)
	}
	return loc, rewritePack(loc, entryID)
}

// rewritePack rewrites a pack with the record of entryID garbled, as a
// reader of the format would see it: frames, then the index frame, then
// the trailer.
func rewritePack(pack, entryID string) error {
	data, err := os.ReadFile(pack)
	if err != nil {
		return err
	}
	if len(data) < 32 {
		return fmt.Errorf("pack %s too short", pack)
	}
	off := binary.LittleEndian.Uint64(data[len(data)-16:])
	var ix map[string]json.RawMessage
	if err := json.Unmarshal(data[off+8:len(data)-24], &ix); err != nil {
		return fmt.Errorf("pack %s index: %w", pack, err)
	}
	type entry = map[string]any
	var entries map[string]entry
	if err := json.Unmarshal(ix["entries"], &entries); err != nil {
		return fmt.Errorf("pack %s entries: %w", pack, err)
	}
	num := func(e entry, k string) int64 { f, _ := e[k].(float64); return int64(f) }
	target, ok := entries[entryID]
	if !ok {
		return fmt.Errorf("pack %s has no entry %s", pack, entryID)
	}
	dec, _ := zstd.NewReader(nil)
	defer dec.Close()
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	// Frames in pack order; each is rewritten, the target's garbled.
	var starts []int64
	seen := map[int64]bool{}
	for _, e := range entries {
		if o := num(e, "offset"); !seen[o] {
			seen[o] = true
			starts = append(starts, o)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	var out []byte
	moved := map[int64][2]int64{} // old offset → new offset, new length
	for _, o := range starts {
		var length int64
		for _, e := range entries {
			if num(e, "offset") == o {
				length = num(e, "length")
				break
			}
		}
		frame, err := dec.DecodeAll(data[o:o+length], nil)
		if err != nil {
			return fmt.Errorf("pack %s frame at %d: %w", pack, o, err)
		}
		if o == num(target, "offset") {
			s, n := num(target, "start"), num(target, "size")
			copy(frame[s:s+n], bytes.Repeat([]byte{'#'}, int(n)))
		}
		z := enc.EncodeAll(frame, nil)
		moved[o] = [2]int64{int64(len(out)), int64(len(z))}
		out = append(out, z...)
	}
	for _, e := range entries {
		m := moved[num(e, "offset")]
		e["offset"], e["length"] = m[0], m[1]
	}
	if ix["entries"], err = json.Marshal(entries); err != nil {
		return err
	}
	js, err := json.Marshal(ix)
	if err != nil {
		return err
	}
	at := len(out)
	out = binary.LittleEndian.AppendUint32(out, 0x184D2A50)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(js)))
	out = append(out, js...)
	out = append(out, data[len(data)-24:len(data)-16]...)
	out = binary.LittleEndian.AppendUint64(out, uint64(at))
	out = append(out, data[len(data)-8:]...)
	tmp := pack + ".corrupt"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, pack)
}

// PackFrame returns the offset and length of an entry's frame in a pack,
// read from the pack's index as a reader of the format would.
func PackFrame(pack, entryID string) (int64, int64, error) {
	data, err := os.ReadFile(pack)
	if err != nil {
		return 0, 0, err
	}
	if len(data) < 32 {
		return 0, 0, fmt.Errorf("pack %s too short", pack)
	}
	off := binary.LittleEndian.Uint64(data[len(data)-16:])
	var ix struct {
		Entries map[string]struct{ Offset, Length int64 } `json:"entries"`
	}
	if err := json.Unmarshal(data[off+8:len(data)-24], &ix); err != nil {
		return 0, 0, fmt.Errorf("pack %s index: %w", pack, err)
	}
	e, ok := ix.Entries[entryID]
	if !ok {
		return 0, 0, fmt.Errorf("pack %s has no entry %s", pack, entryID)
	}
	return e.Offset, e.Length, nil
}

// Store returns a JSONL store over root with no quiet period.
func Store(root string) *session.Store {
	st := session.NewStore(root)
	st.Writer.Quiet = 0 // no quiet period
	return st
}

// Extractor returns an Extractor over st with policy p.
func Extractor(st bs.Store, p extract.Policy) *extract.Extractor {
	return &extract.Extractor{Policy: p, Store: st, Side: side(st)}
}

// Restorer returns a Restorer over st with its state beside root.
func Restorer(st bs.Store, root string) *restore.Restorer {
	return restore.New(st, side(st), config.StateDir(root))
}

func side(st bs.Store) bs.SideStore {
	if d, ok := st.(sidedir.Locator); ok {
		return sidedir.New(d)
	}
	return nil
}

// PassConfig saves and returns the config of agents for a pass that
// extracts every trigger type from values of minLen bytes or more, with no
// quiet period, age or saving threshold, into the side store side.
func PassConfig(tb testing.TB, agents, side string, minLen int) config.Config {
	tb.Helper()
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.MinValueLength, c.KeepRecent = true, 0, minLen, 1
	c.MinSavingTokens, c.AgeThresholdHours = 0, 0
	c.TriggerTypes = nil
	for _, tt := range bs.TriggerTypes() {
		c.TriggerTypes = append(c.TriggerTypes, string(tt))
	}
	c.SideStore = side
	if err := config.Save(agents, c); err != nil {
		tb.Fatal(err)
	}
	return c
}

// VerifyAll fails tb unless every placeholder of every session of st has
// its value in side, and returns how many placeholders there are.
func VerifyAll(tb testing.TB, st bs.Store, side bs.SideStore) int {
	tb.Helper()
	ctx := context.Background()
	refs, _, err := st.Sessions(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, ref := range refs {
		v, err := restore.Verify(ctx, st, side, ref)
		if err != nil {
			tb.Fatal(err)
		}
		if !v.OK() {
			tb.Fatalf("verify %s: %+v", ref, v.Problems)
		}
		n += v.Placeholders
	}
	return n
}
