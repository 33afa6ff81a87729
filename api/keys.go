package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// DefaultKeyFileInterval is how often at most the key file
// (Options.KeyFile) is checked for a change when
// Options.KeyFileInterval is 0.
const DefaultKeyFileInterval = time.Second

// MaxKeyFileBytes bounds the size of an API key file.
const MaxKeyFileBytes = 64 << 10

// ReadKeyFile returns the keys of an API key file: each non-empty line,
// trimmed, is a key. A missing file is an error wrapping
// os.ErrNotExist; a file larger than MaxKeyFileBytes or without a key is
// an error wrapping brainsurgeon.ErrInvalid.
func ReadKeyFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("API key file %s: %w", path, err)
	}
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("API key file %s: expected at most %d bytes of keys, one a line, found more: %w", path, MaxKeyFileBytes, bs.ErrInvalid)
	}
	var keys []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			keys = append(keys, line)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("API key file %s: expected at least one key, found an empty file: %w", path, bs.ErrInvalid)
	}
	return keys, nil
}

// keyRing holds the accepted keys: the fixed ones (Options.APIKeys) and
// those of the key file, re-read when the file changes (checked by stat at
// most once an interval, at request time). Once the file has been seen,
// keys stay required even when it goes away. Safe for concurrent use.
type keyRing struct {
	fixed    [][32]byte
	path     string
	interval time.Duration
	log      bs.Logger

	mu        sync.Mutex
	checked   time.Time   // the last stat
	fi        os.FileInfo // the file as last read (nil: none)
	fileKeys  [][32]byte
	fileSeen  bool
	fileError string // why the file's keys are not used, "" when they are
}

// newKeyRing returns the keys of opts, reading the key file once now.
func newKeyRing(opts Options, log bs.Logger) (*keyRing, error) {
	k := &keyRing{path: opts.KeyFile, interval: opts.KeyFileInterval, log: log}
	if k.interval == 0 {
		k.interval = DefaultKeyFileInterval
	}
	for i, key := range opts.APIKeys {
		if strings.TrimSpace(key) == "" {
			return nil, fmt.Errorf("api: API key %d is empty (expected a non-empty key; give no keys for open access): %w", i+1, bs.ErrInvalid)
		}
		// Keys are compared as sha256 digests: equal lengths, so the
		// comparison time says nothing about a key's length either.
		k.fixed = append(k.fixed, sha256.Sum256([]byte(key)))
	}
	if k.path != "" {
		k.mu.Lock()
		k.refreshLocked(time.Now())
		err := k.fileError
		k.mu.Unlock()
		if err != "" {
			return nil, fmt.Errorf("api: Options.KeyFile: %s: %w", err, bs.ErrInvalid)
		}
	}
	return k, nil
}

// state returns the current file keys and whether keys are required,
// checking the key file first when the interval has passed.
func (k *keyRing) state() (fileKeys [][32]byte, required bool) {
	if k.path == "" {
		return nil, len(k.fixed) > 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if now := time.Now(); k.interval < 0 || now.Sub(k.checked) >= k.interval {
		k.refreshLocked(now)
	}
	return k.fileKeys, len(k.fixed) > 0 || k.fileSeen
}

// required reports whether requests need a key.
func (k *keyRing) required() bool {
	_, req := k.state()
	return req
}

// ok compares key with every accepted key in constant time.
func (k *keyRing) ok(key string) bool {
	fileKeys, _ := k.state()
	sum := sha256.Sum256([]byte(key))
	ok := 0
	for i := range k.fixed {
		ok |= subtle.ConstantTimeCompare(sum[:], k.fixed[i][:])
	}
	for i := range fileKeys {
		ok |= subtle.ConstantTimeCompare(sum[:], fileKeys[i][:])
	}
	return ok == 1
}

// refreshLocked stats the key file and re-reads it when it is another
// file, or its size or modification time changed. A file that cannot be
// read or holds no key gives no keys (fail closed) and is tried again at
// the next check. k.mu is held.
func (k *keyRing) refreshLocked(now time.Time) {
	first := k.checked.IsZero()
	k.checked = now
	fi, err := os.Stat(k.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if k.fi != nil || k.fileError != "" {
			k.log.Warn("API key file removed: its keys are no longer accepted, and keys stay required", "key_file", k.path)
		}
		k.fi, k.fileKeys, k.fileError = nil, nil, ""
		return
	case err != nil:
		k.failLocked(err.Error())
		return
	}
	if k.fi != nil && os.SameFile(k.fi, fi) && fi.Size() == k.fi.Size() && fi.ModTime().Equal(k.fi.ModTime()) {
		return
	}
	keys, err := ReadKeyFile(k.path)
	if err != nil {
		k.failLocked(err.Error())
		return
	}
	seen := k.fileSeen
	k.fileKeys = k.fileKeys[:0:0]
	for _, key := range keys {
		k.fileKeys = append(k.fileKeys, sha256.Sum256([]byte(key)))
	}
	k.fi, k.fileSeen, k.fileError = fi, true, ""
	switch {
	case first:
	case seen:
		k.log.Info("API key file changed: its keys are accepted now, the ones it held before no longer", "key_file", k.path, "keys", len(keys))
	default:
		k.log.Info("API key file appeared: its keys are required now", "key_file", k.path, "keys", len(keys))
	}
}

// failLocked records a key file that is there but cannot be used: no file
// key is accepted, keys stay required, and the next check reads it again.
func (k *keyRing) failLocked(why string) {
	if why != k.fileError {
		k.log.Warn("API key file unusable: no key of it is accepted until it is fixed", "key_file", k.path, "error", why)
	}
	k.fi, k.fileKeys, k.fileSeen, k.fileError = nil, nil, true, why
}

// hint is a short sentence saying where the keys come from, for the UI's
// key dialog; "" when there are none.
func (k *keyRing) hint() string {
	switch {
	case k.path != "" && len(k.fixed) > 0:
		return fmt.Sprintf("The key is the first line of %s: cat %s (or one of BRAINSURGEON_API_KEYS)", k.path, k.path)
	case k.path != "":
		return fmt.Sprintf("The key is the first line of %s: cat %s", k.path, k.path)
	case len(k.fixed) > 0:
		return "Keys come from BRAINSURGEON_API_KEYS"
	}
	return ""
}
