package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return exists(to)
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		return errNoReplaceUnsupported // a file system (or kernel) without RENAME_NOREPLACE
	}
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
}
