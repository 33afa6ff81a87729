//go:build !linux

package atomicfile

func renameNoReplace(from, to string) error { return errNoReplaceUnsupported }
