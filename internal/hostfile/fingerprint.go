package hostfile

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Stamp is a file's identity and state: device, inode, size and
// modification time in nanoseconds. Two stamps of one path differ when the
// file was replaced, grew, shrank or was written.
type Stamp struct {
	Dev, Inode uint64
	Size       int64
	ModTime    int64
}

// String returns "dev:inode:size:mtime", the token of a JSONL version.
func (s Stamp) String() string {
	// strconv, not fmt: the daemon makes one per session on every tick.
	b := make([]byte, 0, 64)
	b = strconv.AppendUint(b, s.Dev, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, s.Inode, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, s.Size, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, s.ModTime, 10)
	return string(b)
}

// Version returns the stamp as a brainsurgeon.Version of the JSONL backend.
func (s Stamp) Version() bs.Version { return bs.NewVersion(bs.BackendJSONL, s.String(), s.Size) }

// ParseStamp reads a stamp back from a JSONL version. It fails on the zero
// version and on a version of another backend.
func ParseStamp(v bs.Version) (Stamp, error) {
	var s Stamp
	if v.IsZero() {
		return s, fmt.Errorf("the transcript's version is unknown (it was not read from a file): %w", bs.ErrInvalid)
	}
	if _, err := fmt.Sscanf(v.Token(), "%d:%d:%d:%d", &s.Dev, &s.Inode, &s.Size, &s.ModTime); err != nil || s.String() != v.Token() || s.Version() != v {
		return Stamp{}, fmt.Errorf("version %s is not a JSONL file version: %w", v, bs.ErrInvalid)
	}
	return s, nil
}

// Fingerprint returns the version (device, inode, size, modification time
// in nanoseconds) of the file at path. It follows symbolic links.
func Fingerprint(path string) (Stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Stamp{}, fmt.Errorf("fingerprint: %w", notFound(err))
	}
	return versionOf(fi)
}

// FingerprintFile returns the version of an open file.
func FingerprintFile(f *os.File) (Stamp, error) {
	fi, err := f.Stat()
	if err != nil {
		return Stamp{}, fmt.Errorf("fingerprint: %w", err)
	}
	return versionOf(fi)
}

func versionOf(fi os.FileInfo) (Stamp, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, fmt.Errorf("fingerprint %s: no device and inode on this platform", fi.Name())
	}
	return Stamp{
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
