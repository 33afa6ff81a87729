package sidedir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Copier is an optional interface of a Medium that copies a unit from
// one of its locations to another itself (an object store's server-side
// copy), under the same name and with the same bytes, durable once Sync
// of toLoc returns. A unit already in toLoc under that name is replaced.
// A missing unit is an error wrapping fs.ErrNotExist. MoveSide uses it
// when the Store's Medium has it; otherwise it reads the unit and
// publishes it again through Create and Commit.
type Copier interface {
	Copy(ctx context.Context, fromLoc, name, toLoc string) error
}

var _ Copier = fsMedium{}

// Remote reports whether the Store keeps its units away from the local
// directories that name its side locations (a Medium other than the
// local file system): a session's side directory then does not exist on
// disk, and whoever moves, counts or removes side locations does it
// through MoveSide, SideSize and RemoveSide rather than with files.
func (d *Store) Remote() bool {
	if d == nil {
		return false
	}
	_, local := d.medium().(fsMedium)
	return !local
}

// MoveSide moves every unit of the side location from into the location
// to, under the same names, through the Store's Medium: each unit is
// copied into to (through the Medium's Copier when it has one), then to
// is synced, and only then are the units removed from from, which is
// synced and, when empty, removed. Every unit is therefore in to, or in
// both, at every instant: a crash never loses one, and running MoveSide
// again finishes the move (a unit copied twice is the same bytes). Units
// already in to stay; pack names are unique, so the two sets merge. A
// missing or empty from moves nothing.
//
// A pass writing into from or to through this Store is an error wrapping
// brainsurgeon.ErrBusy; from equal to to one wrapping
// brainsurgeon.ErrInvalid. The Store's cached listings and indexes of
// both locations are dropped.
func (d *Store) MoveSide(ctx context.Context, from, to string) error {
	if filepath.Clean(from) == filepath.Clean(to) {
		return fmt.Errorf("move side %s: to is the same location, expected another: %w", from, bs.ErrInvalid)
	}
	if err := d.idle(from, to); err != nil {
		return fmt.Errorf("move side %s to %s: %w", from, to, err)
	}
	m := d.medium()
	names, err := d.units(ctx, from)
	if err != nil || len(names) == 0 {
		return err
	}
	defer d.forgetLocs(names, from, to)
	cp, _ := m.(Copier)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		release, gerr := d.gate(ctx)
		if gerr != nil {
			return fmt.Errorf("move side %s to %s: %w", from, to, gerr)
		}
		if cp != nil {
			err = cp.Copy(ctx, from, name, to)
		} else {
			err = copyUnit(ctx, m, from, name, to)
		}
		release()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile (a DropUnits kept its records in a newer pack)
		}
		if err != nil {
			return fmt.Errorf("move side %s to %s: unit %s: %w", from, to, name, err)
		}
	}
	if err := m.Sync(ctx, to, true); err != nil {
		return fmt.Errorf("move side %s to %s: %w", from, to, err)
	}
	if err := d.removeUnits(ctx, from, names); err != nil {
		return fmt.Errorf("move side %s to %s: every unit is in both; %w", from, to, err)
	}
	// The units are durable in to and gone from from: an empty from left
	// behind (a directory) costs nothing, so a failure to remove it is no
	// failure of the move.
	_, _ = m.RemoveLoc(ctx, from)
	return nil
}

// SideSize returns how many units the side location loc holds and their
// bytes; a missing or empty loc holds none, without error. On a file
// system every regular file of the directory is a unit (temp files of an
// interrupted pass too).
func (d *Store) SideSize(ctx context.Context, loc string) (files int, bytes int64, err error) {
	m := d.medium()
	names, err := d.units(ctx, loc)
	if err != nil {
		return 0, 0, err
	}
	for _, name := range names {
		fi, err := m.Stat(ctx, loc, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return 0, 0, fmt.Errorf("side size of %s: %w", loc, err)
		}
		files++
		bytes += fi.Size()
	}
	return files, bytes, nil
}

// RemoveSide removes every unit of the side location loc, then loc
// itself when the Medium keeps empty locations. A missing loc is no
// error; a pass writing into loc through this Store is one wrapping
// brainsurgeon.ErrBusy. The Store's cached listing and indexes of loc
// are dropped.
func (d *Store) RemoveSide(ctx context.Context, loc string) error {
	if err := d.idle(loc); err != nil {
		return fmt.Errorf("remove side %s: %w", loc, err)
	}
	m := d.medium()
	names, err := d.units(ctx, loc)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		defer d.forgetLocs(names, loc)
		if err := d.removeUnits(ctx, loc, names); err != nil {
			return fmt.Errorf("remove side %s: %w", loc, err)
		}
	}
	if _, err := m.RemoveLoc(ctx, loc); err != nil {
		return fmt.Errorf("remove side %s: %w", loc, err)
	}
	return nil
}

// idle fails with an error wrapping brainsurgeon.ErrBusy when a pass of
// this Store is writing a pack into one of locs.
func (d *Store) idle(locs ...string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, loc := range locs {
		if d.pending[loc] != nil {
			return fmt.Errorf("a pass is writing into %s: %w", loc, bs.ErrBusy)
		}
	}
	return nil
}

// units returns the names of the regular units of loc, sorted; none for
// a missing loc.
func (d *Store) units(ctx context.Context, loc string) ([]string, error) {
	ents, err := d.medium().List(ctx, loc)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side location %s: %w", loc, err)
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// removeUnits removes names from loc (a missing one is no error) and
// syncs loc.
func (d *Store) removeUnits(ctx context.Context, loc string, names []string) error {
	m := d.medium()
	release, err := d.gate(ctx)
	if err != nil {
		return err
	}
	defer release()
	for _, name := range names {
		if err := m.Remove(ctx, loc, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", m.Describe(loc, name), err)
		}
	}
	return m.Sync(ctx, loc, false)
}

// forgetLocs drops the cached listings of locs and the cached indexes of
// their units names.
func (d *Store) forgetLocs(names []string, locs ...string) {
	m := d.medium()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, loc := range locs {
		delete(d.lists, loc)
		for _, name := range names {
			d.forgetIndex(m.Describe(loc, name))
		}
	}
}

// copyBuffer is the size of the reads copyUnit makes: each ReadAt of an
// object store's Blob is a request of its own.
const copyBuffer = 1 << 20

// copyUnit copies the unit name of from into to through m's Open, Create
// and Commit, checking that every byte arrived.
func copyUnit(ctx context.Context, m Medium, from, name, to string) error {
	b, err := m.Open(ctx, from, name)
	if err != nil {
		return err
	}
	defer b.Close()
	fi, err := b.Stat()
	if err != nil {
		return err
	}
	tmp, _, err := m.Create(ctx, to)
	if err != nil {
		return err
	}
	// Plain Writer and Reader: *os.File's ReadFrom would copy in 32 KiB
	// reads, one request each on an object store.
	n, err := io.CopyBuffer(struct{ io.Writer }{tmp}, struct{ io.Reader }{io.NewSectionReader(b, 0, fi.Size())}, make([]byte, copyBuffer))
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("copied %d bytes of %s, expected its %d: %w", n, m.Describe(from, name), fi.Size(), bs.ErrCorrupt)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := m.Commit(ctx, to, tmp, name); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Copy copies a file of the directory fromLoc into toLoc (created 0700
// when missing) by a hard link, which keeps its modification time (the
// per-entry files of earlier versions are ordered by it); where the file
// system refuses links it copies the bytes and the time. A file of that
// name already in toLoc is replaced.
func (fsMedium) Copy(_ context.Context, fromLoc, name, toLoc string) error {
	src, dst := filepath.Join(fromLoc, name), filepath.Join(toLoc, name)
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(toLoc, 0o700); err != nil {
		return fmt.Errorf("create side dir: %w", err)
	}
	if have, err := os.Stat(dst); err == nil {
		if os.SameFile(fi, have) {
			return nil // linked before a crash
		}
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst, fi)
}

// copyFile copies src into a temp file of dst's directory, gives it
// src's modification time, fsyncs it and renames it to dst.
func copyFile(src, dst string, fi fs.FileInfo) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(filepath.Join(filepath.Dir(dst), packTemp+randHex()+".tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(out.Name(), fi.ModTime(), fi.ModTime())
	}
	if err == nil {
		err = os.Rename(out.Name(), dst)
	}
	if err != nil {
		os.Remove(out.Name())
	}
	return err
}
