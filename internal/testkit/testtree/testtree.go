// Package testtree lets a test tell that nothing under a directory
// changed: a snapshot of every file and directory (mode, size,
// modification time and the sha256 of a file's bytes), and the
// differences between two snapshots.
package testtree

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Snapshot describes every file and directory under root, by path.
func Snapshot(tb testing.TB, root string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		tb.Fatalf("snapshot of %s: %v", root, err)
	}
	return out
}

// Diff lists, sorted, what differs between two snapshots: a path changed,
// created or removed.
func Diff(before, after map[string]string) []string {
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, p+": removed")
		case a != b:
			out = append(out, fmt.Sprintf("%s: changed (%s → %s)", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, p+": created")
		}
	}
	sort.Strings(out)
	return out
}

// Unchanged fails the test for every difference between before and the
// tree under root now.
func Unchanged(tb testing.TB, root string, before map[string]string) {
	tb.Helper()
	for _, d := range Diff(before, Snapshot(tb, root)) {
		tb.Errorf("%s", d)
	}
}
