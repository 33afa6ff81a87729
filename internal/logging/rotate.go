package logging

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// The rotation defaults.
const (
	// DefaultMaxSize is the size at which a log file is rotated, 10 MiB.
	DefaultMaxSize = 10 << 20
	// DefaultMaxFiles is how many rotated files are kept.
	DefaultMaxFiles = 5
)

// Rotating is a log file that is rotated by size: when a write would take
// it past MaxSize, "name.N-1" becomes "name.N" (the oldest, "name.N", is
// removed), …, "name" becomes "name.1", and a new "name" is started. A
// single write larger than MaxSize still goes whole into a fresh file. It
// is safe for concurrent use.
type Rotating struct {
	path     string
	maxSize  int64
	maxFiles int

	mu   sync.Mutex
	f    *os.File
	size int64
}

// OpenRotating opens (appends to) or creates the log file path, mode 0600,
// creating its directory (mode 0700) if missing. maxSize 0 is
// DefaultMaxSize, maxFiles 0 DefaultMaxFiles.
func OpenRotating(path string, maxSize int64, maxFiles int) (*Rotating, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	if maxFiles <= 0 {
		maxFiles = DefaultMaxFiles
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	r := &Rotating{path: path, maxSize: maxSize, maxFiles: maxFiles}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Rotating) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("log file: %w", err)
	}
	r.f, r.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past its
// maximum size.
func (r *Rotating) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return 0, fmt.Errorf("log file %s: %w", r.path, fs.ErrClosed)
	}
	if r.size > 0 && r.size+int64(len(p)) > r.maxSize {
		if err := r.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

// rotate shifts the old files up by one and starts a new file.
func (r *Rotating) rotate() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	r.f = nil
	_ = os.Remove(r.path + "." + strconv.Itoa(r.maxFiles))
	for i := r.maxFiles - 1; i >= 1; i-- {
		from := r.path + "." + strconv.Itoa(i)
		if err := os.Rename(from, r.path+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("rotate log file: %w", err)
		}
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rotate log file: %w", err)
	}
	return r.open()
}

// Close closes the file. Later writes fail.
func (r *Rotating) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
