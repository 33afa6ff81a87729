package sidedir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// Medium is where a Store keeps the units of its side locations: packs,
// and the per-entry files of earlier versions. Every rule of the store
// (the pack format, its checksums, the newest-record rule, the pending
// pack, the index cache, SideUnits and DropUnits, the durability order)
// is the Store's; a Medium only lists, reads, publishes and removes
// whole units by name. The local file system is the default Medium; an
// object store can be another.
//
// A location (loc) is a side directory's path as the Store's Locator
// gives it; a Medium maps it to wherever it keeps the units. A unit name
// never holds a '/'. A missing unit or location is reported by an error
// wrapping fs.ErrNotExist. A Medium keeps the ctx of a call no longer
// than the call (a Blob's reads run under the ctx of its Open until
// Close), and is safe for concurrent use.
type Medium interface {
	// Stamp returns the time loc's listing last changed. The Store
	// reuses a listing while the stamp is unchanged and was taken well
	// after it (two seconds), so a Medium that cannot tell when a listing
	// changed returns the zero time: every read then lists loc afresh.
	Stamp(ctx context.Context, loc string) (time.Time, error)
	// List returns the units of loc, sorted by name; a Medium that keeps
	// no empty locations returns none, without error, for a missing one.
	// Info of an entry may cost a request of its own.
	List(ctx context.Context, loc string) ([]fs.DirEntry, error)
	// Stat describes one unit of loc. The Store caches a pack's index by
	// the size and modification time it returns, so a unit published
	// again under the same name must change one of them. A read calls it
	// for every pack it passes over and for the key's per-entry files
	// ("<key>.json.zst", "<key>.json"), so it must be cheap: a medium
	// without per-entry files answers those without a request.
	Stat(ctx context.Context, loc, name string) (fs.FileInfo, error)
	// Open opens one unit of loc for ranged reads; the caller closes it.
	Open(ctx context.Context, loc, name string) (Blob, error)
	// Create creates a temp file, on the local file system, for a new
	// pack of loc, and reports whether it created loc for it. The Store
	// writes the pack into it; on failure the Store closes and removes
	// it, otherwise it hands it to Commit.
	Create(ctx context.Context, loc string) (tmp *os.File, created bool, err error)
	// Commit publishes the complete pack written into tmp as the unit
	// name of loc, whole or not at all, and closes tmp. Once Commit and
	// then Sync of loc return, the unit survives a crash. On error the
	// caller removes tmp.
	Commit(ctx context.Context, loc string, tmp *os.File, name string) error
	// Remove removes one unit of loc.
	Remove(ctx context.Context, loc, name string) error
	// Sync makes the units Committed into loc and Removed from it
	// durable; created tells that Create created loc in this pass, whose
	// own creation is then made durable too.
	Sync(ctx context.Context, loc string, created bool) error
	// RemoveLoc removes loc when it holds nothing and reports whether it
	// did; a loc that holds anything, or does not exist, is left without
	// error. A Medium without empty locations returns false.
	RemoveLoc(ctx context.Context, loc string) (bool, error)
	// Describe returns where a unit of loc is, for SideInfo.Location and
	// errors: a path, or a URL.
	Describe(loc, name string) string
}

// Blob is an open unit of a Medium. ReadAt reads a range of it; Stat
// describes it as it was opened. An *os.File is a Blob.
type Blob interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
	Close() error
}

// fsMedium is the Medium of the local file system: a location is a
// directory, created 0700 with its parents; a unit is a file in it, 0600,
// published by fsync, rename and a fsync of the directory. It ignores
// ctx: every call is a system call or two.
type fsMedium struct{}

var _ Medium = fsMedium{}

// Stamp returns the directory's modification time.
func (fsMedium) Stamp(_ context.Context, loc string) (time.Time, error) {
	fi, err := os.Stat(loc)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// List reads the directory.
func (fsMedium) List(_ context.Context, loc string) ([]fs.DirEntry, error) {
	return os.ReadDir(loc)
}

// Stat stats a file of the directory, following a symbolic link.
func (fsMedium) Stat(_ context.Context, loc, name string) (fs.FileInfo, error) {
	return os.Stat(filepath.Join(loc, name))
}

// Open opens a file of the directory.
func (fsMedium) Open(_ context.Context, loc, name string) (Blob, error) {
	f, err := os.Open(filepath.Join(loc, name))
	if err != nil {
		return nil, err // an *os.File(nil) would be a non-nil Blob
	}
	return f, nil
}

// Create creates the directory when missing, removes temp files older
// than a minute (left by a crash) and creates a pack's temp file in it.
func (fsMedium) Create(_ context.Context, loc string) (f *os.File, created bool, err error) {
	if _, err := os.Stat(loc); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(loc, 0o700); err != nil {
			return nil, false, fmt.Errorf("create side dir: %w", err)
		}
		created = true
	} else if err == nil {
		cleanTemps(loc)
	}
	f, err = os.OpenFile(filepath.Join(loc, packTemp+randHex()+".tmp"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("create pack in %s: %w", loc, err)
	}
	return f, created, nil
}

// renameHook, when set (by tests), runs in Commit after a pack is
// written, fsynced and closed and before it is renamed to its final name;
// an error aborts Commit there.
var renameHook func(tmp string) error

// Commit fsyncs and closes tmp and renames it into the directory; Sync
// then fsyncs the directory.
func (fsMedium) Commit(_ context.Context, loc string, tmp *os.File, name string) error {
	err := tmp.Sync()
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && renameHook != nil {
		err = renameHook(tmp.Name())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(loc, name))
	}
	return err
}

// Remove removes a file of the directory.
func (fsMedium) Remove(_ context.Context, loc, name string) error {
	return os.Remove(filepath.Join(loc, name))
}

// Sync fsyncs the directory and, when created, its parent and
// grandparent (the side dir's "extracted" and the sessions dir).
func (fsMedium) Sync(_ context.Context, loc string, created bool) error {
	dirs := []string{loc}
	if created {
		dirs = append(dirs, filepath.Dir(loc), filepath.Dir(filepath.Dir(loc)))
	}
	for _, p := range dirs {
		if err := atomicfile.SyncDir(p); err != nil {
			return fmt.Errorf("sync side dir %s: %w", p, err)
		}
	}
	return nil
}

// RemoveLoc removes the directory when it is empty (rmdir: whatever
// appeared in it since it was listed keeps it) and fsyncs its parent.
func (fsMedium) RemoveLoc(_ context.Context, loc string) (bool, error) {
	switch err := os.Remove(loc); {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		return false, nil
	default:
		return false, err
	}
	if err := atomicfile.SyncDir(filepath.Dir(loc)); err != nil {
		return true, fmt.Errorf("sync %s: %w", filepath.Dir(loc), err)
	}
	return true, nil
}

// Describe returns the file's path.
func (fsMedium) Describe(loc, name string) string { return filepath.Join(loc, name) }

// tempMaxAge is the age above which a temp file is left by a crash.
var tempMaxAge = time.Minute

// cleanTemps removes the temp files of packs (and of the per-entry files
// of earlier versions) older than tempMaxAge.
func cleanTemps(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	old := time.Now().Add(-tempMaxAge)
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, packTemp) && !strings.HasPrefix(n, ".tmp-") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(old) {
			os.Remove(filepath.Join(dir, n))
		}
	}
}
