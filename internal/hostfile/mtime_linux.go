package hostfile

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func timesOfInfo(fi os.FileInfo) (fileTimes, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileTimes{}, fmt.Errorf("stat %s: no times on this platform", fi.Name())
	}
	return fileTimes{
		atime: unix.NsecToTimespec(syscall.TimespecToNsec(st.Atim)),
		mtime: unix.NsecToTimespec(syscall.TimespecToNsec(st.Mtim)),
	}, nil
}

// setTimes sets the access and modification time of the open file f, to
// the nanosecond (futimens(2): utimensat with a NULL path).
func setTimes(f *os.File, t fileTimes) error {
	ts := [2]unix.Timespec{t.atime, t.mtime}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("set times of %s: %w", f.Name(), errno)
	}
	return nil
}

// touchNow sets f's modification time to now and leaves its access time.
func touchNow(f *os.File) error {
	omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
	return setTimes(f, fileTimes{atime: omit, mtime: unix.Timespec{Nsec: unix.UTIME_NOW}})
}
