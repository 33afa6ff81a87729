// Package atomicfile replaces files so that a reader sees the old content or the new, never a mix, and the new
// content survives a crash once the call returns: write a temp file in the same directory, fsync it, rename it
// over the target, fsync the directory.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// WriteFile replaces path with data, atomically and durably. The temp file is created in path's directory (a
// rename is atomic only within one file system) as ".<name>.tmp-<random>", gets mode perm exactly (the umask does
// not apply), is written, fsynced and renamed over path; then the directory is fsynced. The directory must
// exist. A symbolic link at path is replaced, not followed.
//
// On error the temp file is removed and path keeps its old content, except when only the final directory sync
// failed: then path has the new content, which may not survive a crash.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, os.Rename)
}

// WriteNew is WriteFile for a path that must not exist: the temp file is hard-linked to path instead of renamed
// over it, so a file already there (or created meanwhile) is never replaced and the error wraps fs.ErrExist. The
// temp file is removed in every case. Where the file system has no hard links (LinkUnsupported), path is created
// exclusively and written instead: still never a replacement, but a reader may then see it part-written.
func WriteNew(path string, data []byte, perm os.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return &fs.PathError{Op: "create", Path: path, Err: fs.ErrExist}
	}
	return write(path, data, perm, func(tmp, path string) error {
		err := os.Link(tmp, path)
		if err != nil && LinkUnsupported(err) {
			err = writeExclusive(path, data, perm)
		}
		if err != nil {
			return err
		}
		_ = os.Remove(tmp)
		return nil
	})
}

// LinkUnsupported reports whether err, from os.Link, says the file system has no hard links.
func LinkUnsupported(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EOPNOTSUPP) ||
		errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EMLINK)
}

// writeExclusive creates path exclusively with mode perm, writes data and fsyncs it; a failed write removes the
// file it created.
func writeExclusive(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if err := fill(f, data, perm); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

// fill gives the new file f mode perm exactly (the umask does not apply),
// writes data, fsyncs it and closes it.
func fill(f *os.File, data []byte, perm os.FileMode) error {
	err := f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// write writes data to a temp file beside path with mode perm, fsyncs it, puts it in place with place(tmp, path)
// and fsyncs the directory.
func write(path string, data []byte, perm os.FileMode, place func(tmp, path string) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	err = fill(tmp, data, perm)
	if err == nil {
		err = place(name, path)
	}
	if err != nil {
		_ = os.Remove(name)
		return err
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, so that files created, renamed or removed in it stay so after a crash.
// File systems that cannot sync a directory (EINVAL, as some network and FUSE ones) are accepted, and on Windows,
// where a directory cannot be synced this way, it does nothing.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
