package hostfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// notFound wraps err with brainsurgeon.ErrNotFound when err says a file
// does not exist.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", bs.ErrNotFound, err)
	}
	return err
}

// pidState tells whether process pid runs, by OpenClaw's rules (OC7
// src/shared/pid-alive.ts): kill(pid, 0) must succeed (EPERM counts as
// dead, like OpenClaw) and on Linux the process must not be a zombie. It
// returns a reason when the process is not alive.
func pidState(pid int) (alive bool, reason string) {
	if pid <= 0 {
		return false, fmt.Sprintf("invalid pid %d", pid)
	}
	switch err := syscall.Kill(pid, 0); {
	case err == nil:
	case errors.Is(err, syscall.ESRCH):
		return false, fmt.Sprintf("pid %d is not running", pid)
	case errors.Is(err, syscall.EPERM):
		return false, fmt.Sprintf("pid %d belongs to another user (EPERM counts as dead, as in OpenClaw)", pid)
	default:
		// Unknown trouble: be conservative and call it alive.
		return true, ""
	}
	if isZombie(pid) {
		return false, fmt.Sprintf("pid %d is a zombie", pid)
	}
	return true, ""
}

// isZombie reports whether /proc/<pid>/stat shows state Z. It returns
// false when /proc is not available.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The command name is in parentheses and may hold spaces or ")"; the
	// state follows the last ")".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// procStartTime returns field 22 of /proc/<pid>/stat (the process start
// time in clock ticks since boot), which OpenClaw records as "starttime"
// to detect a recycled pid. ok is false when it cannot be read.
func procStartTime(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	return v, err == nil
}

// foreignWriters counts the file descriptors, in any process this process
// may inspect, that are open for writing on the deleted file (dev, ino).
// After a rename replaced a file, they are the only way more bytes can
// reach the old inode. ok is false when /proc cannot be read at all.
func foreignWriters(dev, ino uint64) (n int, ok bool) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid <= 0 {
			continue
		}
		base := "/proc/" + p.Name()
		fds, err := os.ReadDir(base + "/fd")
		if err != nil {
			continue // gone, or another user's process
		}
		for _, fd := range fds {
			link, err := os.Readlink(base + "/fd/" + fd.Name())
			if err != nil || !strings.HasSuffix(link, " (deleted)") {
				continue
			}
			fi, err := os.Stat(base + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			d, i, good := devIno(fi)
			if !good || d != dev || i != ino {
				continue
			}
			if fdWritable(base+"/fdinfo/"+fd.Name()) || (pid != self && !fdInfoReadable(base+"/fdinfo/"+fd.Name())) {
				n++
			}
		}
	}
	return n, true
}

// fdWritable reports whether the fdinfo file at path shows an access mode
// that allows writing.
func fdWritable(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		v, found := strings.CutPrefix(line, "flags:")
		if !found {
			continue
		}
		flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
		if err != nil {
			return false
		}
		return flags&syscall.O_ACCMODE != syscall.O_RDONLY
	}
	return false
}

func fdInfoReadable(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
