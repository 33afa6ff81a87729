package atomicfile

import (
	"errors"
	"io/fs"
	"os"
)

// RenameNoReplace renames from to to unless something exists at to: then
// nothing moves and the error wraps fs.ErrExist. On Linux it is one
// renameat2(2) with RENAME_NOREPLACE; where that is not available (another
// system, or a file system without it) from is hard-linked to to (which
// fails when to exists) and then unlinked. from must be a regular file
// (or, with renameat2, anything rename moves).
func RenameNoReplace(from, to string) error {
	err := renameNoReplace(from, to)
	if err == nil || !errors.Is(err, errNoReplaceUnsupported) {
		return err
	}
	return linkUnlink(from, to)
}

// linkUnlink moves from to to by a hard link and an unlink: the link fails
// when to exists.
func linkUnlink(from, to string) error {
	if err := os.Link(from, to); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return exists(to)
		}
		return err
	}
	if err := os.Remove(from); err != nil {
		_ = os.Remove(to)
		return err
	}
	return nil
}

// errNoReplaceUnsupported says the system cannot rename without replacing
// in one call: RenameNoReplace then links and unlinks.
var errNoReplaceUnsupported = errors.New("rename without replacing is not supported here")

// exists is the error of a rename onto a path that exists.
func exists(to string) error {
	return &os.LinkError{Op: "rename", New: to, Err: fs.ErrExist}
}
