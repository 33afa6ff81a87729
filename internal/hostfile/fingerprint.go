package hostfile

import (
	"fmt"
	"os"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Fingerprint returns the version (device, inode, size, modification time
// in nanoseconds) of the file at path. It follows symbolic links.
func Fingerprint(path string) (bs.Version, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return bs.Version{}, fmt.Errorf("fingerprint: %w", notFound(err))
	}
	return versionOf(fi)
}

// FingerprintFile returns the version of an open file.
func FingerprintFile(f *os.File) (bs.Version, error) {
	fi, err := f.Stat()
	if err != nil {
		return bs.Version{}, fmt.Errorf("fingerprint: %w", err)
	}
	return versionOf(fi)
}

func versionOf(fi os.FileInfo) (bs.Version, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return bs.Version{}, fmt.Errorf("fingerprint %s: no device and inode on this platform", fi.Name())
	}
	return bs.Version{
		Dev:     uint64(st.Dev), //nolint:unconvert // int32 on some platforms
		Inode:   uint64(st.Ino), //nolint:unconvert // uint32 on some platforms
		Size:    fi.Size(),
		ModTime: fi.ModTime().UnixNano(),
	}, nil
}

// devIno returns the device and inode numbers of fi.
func devIno(fi os.FileInfo) (dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), uint64(st.Ino), true //nolint:unconvert // platform types differ
}
