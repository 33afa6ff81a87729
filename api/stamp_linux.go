//go:build linux

package api

import (
	"os"
	"syscall"
)

// sysStamp adds the inode, device and change time to a file stamp.
func sysStamp(fi os.FileInfo, fs *fileStamp) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		fs.ino, fs.dev = uint64(st.Ino), uint64(st.Dev)
		fs.ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
		fs.ok = true
	}
}
