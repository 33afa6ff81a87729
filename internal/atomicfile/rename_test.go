package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRenameNoReplace(t *testing.T) {
	for _, name := range []string{"Native", "LinkFallback"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			from, to := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			move := RenameNoReplace
			if name == "LinkFallback" {
				move = linkUnlink
			}
			if err := os.WriteFile(from, []byte("moved"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, []byte("there first"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := move(from, to); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("onto an existing file: %v, want fs.ErrExist", err)
			}
			if got, _ := os.ReadFile(to); string(got) != "there first" {
				t.Fatalf("the file at to was replaced: %q", got)
			}
			if _, err := os.Stat(from); err != nil {
				t.Fatalf("from is gone after a refused move: %v", err)
			}
			if err := os.Remove(to); err != nil {
				t.Fatal(err)
			}
			if err := move(from, to); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(to); string(got) != "moved" {
				t.Fatalf("after the move: %q", got)
			}
			if _, err := os.Stat(from); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("from still there: %v", err)
			}
		})
	}
}
