package sidedir

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TransferStats is what TransferTo did for one side location.
type TransferStats struct {
	// Packs counts the packs of the location; Copied those sent now (the
	// others were in the target already, or verified by an earlier run).
	Packs, Copied int
	// Bytes is the bytes sent.
	Bytes int64
	// Verified counts the units read back from the target and checked now.
	Verified int
	// Records counts the records checked in them.
	Records int
	// Converted counts the per-entry files (of earlier versions) folded
	// into one pack for a target without per-entry files; Folded names
	// that pack.
	Converted int
	Folded    string
}

// TransferTo copies the side location loc of d into the same location of
// dst, another Store on another Medium (the local file system and an
// object store): every pack under its own name, byte for byte, and each
// read back from dst and checked (its sha256 equals the source's, its
// index parses, every frame decodes and every record matches its size
// and CRC-32C). Per-entry files of earlier versions that hold the newest
// record of their entry are folded, with their times, into one pack named
// after loc and the newest of them, so that a re-run makes the same pack
// and the newest-record rule gives the same answers in dst (the pack is
// newer than every pack whose record its files outrank); each folded
// record is read back and compared.
//
// skip reports units (by name) an earlier run verified: they are left as
// they are. done is told each unit verified now. d is never written.
// dst's location is synced before TransferTo returns: every unit it
// reports is durable there.
func (d *Store) TransferTo(ctx context.Context, dst *Store, loc string, skip func(name string) bool, done func(name string)) (TransferStats, error) {
	var st TransferStats
	s, err := d.surveyCtx(ctx, loc)
	if err != nil {
		return st, err
	}
	have := map[string]int64{}
	if ents, err := dst.medium().List(ctx, loc); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil {
				have[e.Name()] = fi.Size()
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("transfer %s: list the target: %w", loc, err)
	}
	wrote := false
	for _, u := range s.units {
		if u.Kind != bs.SideUnitPack {
			continue
		}
		if u.Err != "" {
			return st, fmt.Errorf("transfer %s: pack %s cannot be read (%s): repair or remove it first: %w", loc, u.path, u.Err, bs.ErrCorrupt)
		}
		st.Packs++
		if skip != nil && skip(u.Name) {
			continue
		}
		var sum [32]byte
		if size, ok := have[u.Name]; !ok || size != u.Size {
			if sum, err = copyUnitTo(ctx, d.medium(), dst.medium(), loc, u.Name); err != nil {
				return st, fmt.Errorf("transfer %s: copy %s: %w", loc, u.path, err)
			}
			st.Copied++
			st.Bytes += u.Size
			wrote = true
		} else if sum, err = d.unitSum(ctx, loc, u.Name); err != nil {
			return st, fmt.Errorf("transfer %s: read %s: %w", loc, u.path, err)
		}
		n, err := dst.CheckUnit(ctx, loc, u.Name, sum)
		if err != nil {
			return st, fmt.Errorf("transfer %s: %w", loc, err)
		}
		st.Verified++
		st.Records += n
		if done != nil {
			done(u.Name)
		}
	}
	if err := d.foldFiles(ctx, dst, s, skip, done, &st, &wrote); err != nil {
		return st, fmt.Errorf("transfer %s: %w", loc, err)
	}
	if wrote {
		if err := dst.medium().Sync(ctx, loc, true); err != nil {
			return st, fmt.Errorf("transfer %s: %w", loc, err)
		}
	}
	dst.mu.Lock()
	delete(dst.lists, loc)
	dst.mu.Unlock()
	return st, nil
}

// foldFiles folds the per-entry files of a survey that hold the newest
// record of their entry into one pack of dst (see TransferTo).
func (d *Store) foldFiles(ctx context.Context, dst *Store, s *gcSurvey, skip func(string) bool, done func(string), st *TransferStats, wrote *bool) error {
	kept := map[string]bool{}
	var newestTime time.Time
	for id, u := range s.newest {
		if u.Kind == bs.SideUnitFile {
			kept[id] = true
			if u.Time.After(newestTime) {
				newestTime = u.Time
			}
		}
	}
	if len(kept) == 0 {
		return nil
	}
	// Past the newest file by a nanosecond: never equal to a pack it
	// outranks (files win only when strictly newer).
	passTime := newestTime.Add(time.Nanosecond).UTC()
	name := packPrefix + passTime.Format(packTimeFmt) + "-" + foldedSuffix(s.dir) + packSuffix
	st.Converted, st.Folded = len(kept), name
	if skip != nil && skip(name) {
		return nil
	}
	if _, err := dst.medium().Stat(ctx, s.dir, name); errors.Is(err, fs.ErrNotExist) {
		if _, _, err := d.repackInto(ctx, dst, s, kept, nil, passTime, name); err != nil {
			return fmt.Errorf("fold %d per-entry files: %w", len(kept), err)
		}
		*wrote = true
		st.Copied++
	} else if err != nil {
		return err
	}
	// Read every folded record back from dst and compare.
	for id := range kept {
		want, _, err := d.readUnitRecord(ctx, s.dir, s.newest[id], id)
		if err != nil {
			return err
		}
		got, err := dst.getIn(ctx, s.dir, name, id)
		if err != nil {
			return fmt.Errorf("read back %s from %s: %w", id, dst.medium().Describe(s.dir, name), err)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("%s of %s reads back %d bytes that differ from the file's %d: %w", id, dst.medium().Describe(s.dir, name), len(got), len(want), bs.ErrCorrupt)
		}
		st.Records++
	}
	st.Verified++
	if done != nil {
		done(name)
	}
	return nil
}

// getIn reads the record of id from the pack name of loc.
func (d *Store) getIn(ctx context.Context, loc, name, id string) ([]byte, error) {
	m := d.medium()
	path := m.Describe(loc, name)
	d.forgetPath(loc, path)
	ix, err := d.index(ctx, loc, name, path)
	if err != nil {
		return nil, err
	}
	e, ok := ix.Entries[id]
	if !ok {
		return nil, fmt.Errorf("no record of %s: %w", id, bs.ErrNotFound)
	}
	f, err := m.Open(ctx, loc, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return d.readFrame(f, path, id, e, true)
}

// unitSum returns the sha256 of a unit of loc, read whole.
func (d *Store) unitSum(ctx context.Context, loc, name string) ([32]byte, error) {
	b, err := d.medium().Open(ctx, loc, name)
	if err != nil {
		return [32]byte{}, err
	}
	defer b.Close()
	fi, err := b.Stat()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(b, 0, fi.Size()), make([]byte, copyBuffer)); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}

// CheckUnit reads the pack name of loc whole (one read: one request on
// an object store) into a temp file and checks it: its sha256 equals
// sum (unless sum is zero), its index parses, and every record decodes
// and matches its size and CRC-32C. It returns how many records it
// checked. Problems wrap brainsurgeon.ErrCorrupt and name the pack.
func (d *Store) CheckUnit(ctx context.Context, loc, name string, sum [32]byte) (int, error) {
	m := d.medium()
	path := m.Describe(loc, name)
	b, err := m.Open(ctx, loc, name)
	if err != nil {
		return 0, fmt.Errorf("read back %s: %w", path, err)
	}
	defer b.Close()
	fi, err := b.Stat()
	if err != nil {
		return 0, fmt.Errorf("read back %s: %w", path, err)
	}
	tmp, err := os.CreateTemp("", ".bs-check-*.bszst")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(struct{ io.Writer }{tmp}, h), io.NewSectionReader(b, 0, fi.Size()), make([]byte, copyBuffer))
	if err != nil {
		return 0, fmt.Errorf("read back %s: %w", path, err)
	}
	var got [32]byte
	h.Sum(got[:0])
	if sum != ([32]byte{}) && got != sum {
		return 0, fmt.Errorf("%s reads back %d bytes whose sha256 %x differs from the source's %x: %w", path, n, got[:8], sum[:8], bs.ErrCorrupt)
	}
	ix, err := readPackIndex(tmp, n, path)
	if err != nil {
		return 0, err
	}
	ids := make([]string, 0, len(ix.Entries))
	for id := range ix.Entries {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ix.Entries[ids[i]], ix.Entries[ids[j]]
		return a.Offset < b.Offset || a.Offset == b.Offset && a.Start < b.Start
	})
	dec := d.decoder()
	defer d.putDecoder(dec)
	var frame []byte
	frameAt := int64(-1)
	for _, id := range ids {
		e := ix.Entries[id]
		if e.Offset != frameAt {
			buf := make([]byte, e.Length)
			if _, err := tmp.ReadAt(buf, e.Offset); err != nil {
				return 0, fmt.Errorf("pack %s: entry %s: read frame at %d: %v: %w", path, id, e.Offset, err, bs.ErrCorrupt)
			}
			if frame, err = dec.DecodeAll(buf, frame[:0]); err != nil {
				return 0, fmt.Errorf("pack %s: entry %s: zstd frame at %d: %v: %w", path, id, e.Offset, err, bs.ErrCorrupt)
			}
			frameAt = e.Offset
		}
		if e.Start+e.Size > int64(len(frame)) {
			return 0, fmt.Errorf("pack %s: entry %s: record at %d+%d is past the frame's %d bytes: %w", path, id, e.Start, e.Size, len(frame), bs.ErrCorrupt)
		}
		if err := checkRecord(frame[e.Start:e.Start+e.Size], e); err != nil {
			return 0, fmt.Errorf("pack %s: entry %s: %v: %w", path, id, err, bs.ErrCorrupt)
		}
	}
	return len(ids), nil
}

// copyUnitTo copies the unit name of loc from the medium from into the
// same location of the medium to, under the same name, and returns the
// sha256 of the bytes read.
func copyUnitTo(ctx context.Context, from, to Medium, loc, name string) (sum [32]byte, err error) {
	b, err := from.Open(ctx, loc, name)
	if err != nil {
		return sum, err
	}
	defer b.Close()
	fi, err := b.Stat()
	if err != nil {
		return sum, err
	}
	tmp, _, err := to.Create(ctx, loc)
	if err != nil {
		return sum, err
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(struct{ io.Writer }{tmp}, h), struct{ io.Reader }{io.NewSectionReader(b, 0, fi.Size())}, make([]byte, copyBuffer))
	h.Sum(sum[:0])
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("copied %d bytes of %s, expected its %d: %w", n, from.Describe(loc, name), fi.Size(), bs.ErrCorrupt)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return sum, err
	}
	if err := to.Commit(ctx, loc, tmp, name); err != nil {
		os.Remove(tmp.Name())
		return sum, err
	}
	return sum, nil
}

// foldedSuffix is the random part of the name of the pack TransferTo
// folds the per-entry files of loc into: the first 12 hex digits of the
// sha256 of loc, the same on every run.
func foldedSuffix(loc string) string {
	h := sha256.Sum256([]byte(loc))
	return hex.EncodeToString(h[:6])
}

// IsFoldedPack reports whether name is the name of a pack TransferTo
// folded the per-entry files of loc into.
func IsFoldedPack(loc, name string) bool {
	return isPackName(name) && strings.HasSuffix(name, "-"+foldedSuffix(loc)+packSuffix)
}

// IsPackName reports whether name is the name of a pack.
func IsPackName(name string) bool { return isPackName(name) }

// FileSystem is the Medium of the local file system: the one a Store
// whose Medium is nil uses.
var FileSystem Medium = fsMedium{}
