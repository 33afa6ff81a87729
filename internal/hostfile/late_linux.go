package hostfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// writersGone tells, in two fcntl(2) calls whatever the number of
// processes on the machine, whether any descriptor anywhere is still open
// for writing on f's inode (f itself must be open read-only). It asks the
// kernel for a read lease (F_SETLEASE, F_RDLCK) and gives it back at once:
// Linux grants a read lease only while the inode's count of writers
// (i_writecount: every descriptor opened for writing, in any process,
// including ones we may not inspect in /proc, and every shared writable
// mapping) is zero, and fails with EAGAIN otherwise. A writer's count is
// dropped only when its last reference goes away, after any write(2) in
// flight on it has returned, so when the lease is granted every byte
// written so far is visible in f's size.
//
// EAGAIN also comes from another process's write lease on the inode
// (which needs a writer of its own): it is reported as a writer, so the
// caller waits as for one, at most lateWriterWait.
//
// ok is false when the answer is unknown: leases disabled
// (/proc/sys/fs/leases-enable), a file we do not own without CAP_LEASE
// (EACCES), or a file system without lease support (EINVAL, for example
// some network and FUSE file systems). The caller then falls back to
// scanning /proc.
func writersGone(f *os.File) (gone, ok bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		if _, lerr = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_RDLCK); lerr == nil {
			// Closing f would drop the lease too; give it back now so
			// that an open for writing never waits for a lease break.
			_, _ = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
		}
	}); err != nil {
		return false, false
	}
	switch {
	case lerr == nil:
		return true, true
	case errors.Is(lerr, unix.EAGAIN):
		return false, true
	default:
		return false, false
	}
}
