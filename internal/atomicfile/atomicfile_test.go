package atomicfile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	for _, data := range [][]byte{[]byte("first\n"), []byte("second, longer\n"), nil} {
		if err := atomicfile.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("content = %q, %v; want %q", got, err, data)
		}
	}
	if runtime.GOOS != "windows" {
		// The mode is exactly perm, whatever the umask.
		if err := atomicfile.WriteFile(path, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("mode = %v, %v; want 0640", fi.Mode(), err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("dir holds %v (%v); want only config.json (no temp file left)", entries, err)
	}
}

func TestWriteFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A missing directory.
	if err := atomicfile.WriteFile(filepath.Join(dir, "no", "f"), []byte("x"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing dir: %v", err)
	}
	// A directory in the way: the rename fails, the temp file goes away.
	target := filepath.Join(dir, "sub")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(target, []byte("x"), 0o600); err == nil {
		t.Fatal("replacing a non-empty directory: no error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dir holds %v after a failed write; want only sub", entries)
	}
}

func TestWriteNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := atomicfile.WriteNew(path, []byte("first"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteNew(path, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("writing over an existing file: %v, want fs.ErrExist", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "first" {
		t.Fatalf("file = %q, %v; want the first content kept", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode = %v, %v; want 0640", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("dir holds %v; want only f (no temp file left)", entries)
	}
}

func TestSyncDir(t *testing.T) {
	t.Parallel()
	if err := atomicfile.SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := atomicfile.SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("missing dir: %v", err)
		}
	}
}
