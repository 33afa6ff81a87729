package session

import (
	"bytes"
	"fmt"
	"os"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func bytesContains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

// fingerprintFile returns the version of an open file.
func fingerprintFile(f *os.File) (bs.Version, error) {
	st, err := f.Stat()
	if err != nil {
		return bs.Version{}, err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return bs.Version{}, fmt.Errorf("stat %s: no device and inode on this platform", f.Name())
	}
	return bs.Version{Dev: uint64(sys.Dev), Inode: sys.Ino, Size: st.Size(), ModTime: st.ModTime().UnixNano()}, nil
}
