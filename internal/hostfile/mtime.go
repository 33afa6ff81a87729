package hostfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Keeping the modification time. A rewrite changes no meaning, so the new
// file must not look newer than the original: OpenClaw 2026.7 starts a new
// session after a run that ended "timeout" or "killed" when the transcript
// is newer than sessions.json updatedAt, and our own idle gate reads the
// mtime too.

// fileTimes is a file's access and modification time, to the nanosecond.
type fileTimes struct {
	atime, mtime unix.Timespec
}

// timesOf returns the times of an open file.
func timesOf(f *os.File) (fileTimes, error) {
	fi, err := f.Stat()
	if err != nil {
		return fileTimes{}, fmt.Errorf("stat: %w", err)
	}
	return timesOfInfo(fi)
}

// keepLastMtime runs after the late carry-over: it gives the new file f the
// old file's last modification time, which includes the bytes carried over
// after the rename (writing them made f look newer). want is f's size when
// only Rewrite wrote to it. When another process appended to f directly
// after the rename, f's newer mtime is the truth and stays; if such a write
// lands while the time is being set, f gets the current time instead. It
// reports whether it changed f's times.
func keepLastMtime(orig, f *os.File, want int64, log bs.Logger) (bool, error) {
	last, err := timesOf(orig)
	if err != nil {
		return false, fmt.Errorf("old file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat new file: %w", err)
	}
	if fi.Size() != want {
		log.Debug("the new file was appended to after the rename; its modification time stays", "file", f.Name(), "size", fi.Size(), "ours", want)
		return false, nil
	}
	cur, err := timesOfInfo(fi)
	if err != nil {
		return false, err
	}
	if cur.mtime == last.mtime {
		return false, nil
	}
	if err := setTimes(f, fileTimes{atime: cur.atime, mtime: last.mtime}); err != nil {
		return false, err
	}
	if fi, err := f.Stat(); err != nil {
		return true, fmt.Errorf("stat new file: %w", err)
	} else if fi.Size() != want {
		// Someone appended while the time was set: the file is newer now.
		if err := touchNow(f); err != nil {
			return true, err
		}
	}
	return true, nil
}
