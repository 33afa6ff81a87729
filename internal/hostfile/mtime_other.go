//go:build !linux

package hostfile

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timesOfInfo returns the modification time; the access time is not
// portable, so it is taken to be the modification time.
func timesOfInfo(fi os.FileInfo) (fileTimes, error) {
	m := unix.NsecToTimespec(fi.ModTime().UnixNano())
	return fileTimes{atime: m, mtime: m}, nil
}

// setTimes sets the access and modification time of f by its name.
func setTimes(f *os.File, t fileTimes) error {
	if err := os.Chtimes(f.Name(), time.Unix(0, t.atime.Nano()), time.Unix(0, t.mtime.Nano())); err != nil {
		return fmt.Errorf("set times of %s: %w", f.Name(), err)
	}
	return nil
}

// touchNow sets f's modification time to now.
func touchNow(f *os.File) error {
	now := time.Now()
	return os.Chtimes(f.Name(), now, now)
}
