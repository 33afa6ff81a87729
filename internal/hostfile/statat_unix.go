//go:build linux || darwin

package hostfile

import (
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Dir is an open directory whose files can be fingerprinted by name,
// without resolving the directory's path again for each (fstatat).
type Dir struct {
	fd   int
	path string
}

// OpenDir opens the directory at path.
func OpenDir(path string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open dir %s: %w", path, notFound(&fs.PathError{Op: "open", Path: path, Err: err}))
	}
	return &Dir{fd: fd, path: path}, nil
}

// Fingerprint returns the stamp of the file name in d, following a
// symbolic link as Fingerprint does. The stamp equals Fingerprint's of
// the same file.
func (d *Dir) Fingerprint(name string) (Stamp, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return Stamp{}, fmt.Errorf("fingerprint: %w", notFound(&fs.PathError{Op: "stat", Path: d.path + "/" + name, Err: err}))
		}
		break
	}
	return Stamp{
		Dev:     uint64(st.Dev), //nolint:unconvert // int32 on darwin
		Inode:   uint64(st.Ino), //nolint:unconvert // platform types differ
		Size:    st.Size,
		ModTime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, //nolint:unconvert // platform types differ
	}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return unix.Close(d.fd) }
