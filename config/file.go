package config

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// MaxFileSize is the largest config file that Load reads, 1 MiB; a real one
// is well under 1 KiB.
const MaxFileSize = 1 << 20

// Load reads the config file of the agents directory agentsDir (see
// [Path]) and decodes it with [Decode], which fills missing fields with
// their defaults and logs each one as an upgrade. A nil log discards.
//
// A missing file is not an error: Load returns [Default] and does not
// create the file, since creating it is the daemon's job. Load never
// writes, not even when fields were added by the upgrade; a caller that
// wants them on disk (the daemon at start-up does) calls [Save] with the
// returned config.
//
// Errors are wrapped with the file's path. A file that fails validation
// gives a *ValidationError (find it with errors.As) together with the
// decoded config, as Decode does; a file that is not a JSON object gives a
// *SyntaxError whose Path is the file's, so that the message reads
// "load config: <path>:<line>:<column>: …"; an empty agentsDir or a file
// larger than [MaxFileSize] gives an error wrapping
// brainsurgeon.ErrInvalid and the zero Config. Load returns
// ctx.Err() if ctx is already done.
func Load(ctx context.Context, agentsDir string, log brainsurgeon.Logger) (Config, error) {
	c, _, err := LoadFile(ctx, agentsDir, log)
	return c, err
}

// FileInfo says what [LoadFile] found besides the config.
type FileInfo struct {
	// Path is the config file's path (see [Path]).
	Path string
	// Exists is false when there is no file (the defaults were used).
	Exists bool
	// Unknown lists the names in the file that are not fields of Config,
	// in file order, without repeats; they are ignored. See NearestField
	// for a hint.
	Unknown []string
	// Obsolete lists the fields of earlier versions that the file holds
	// and that nothing reads any more (scan_interval_seconds), in file
	// order; they are ignored, and saving the config removes them.
	Obsolete []string
	// Added lists the fields missing from the file, which got defaults.
	Added []string
}

// LoadFile is [Load] that also says whether the file exists and which of
// its names are unknown, so that a command can tell its user. The config
// and the error are Load's.
func LoadFile(ctx context.Context, agentsDir string, log brainsurgeon.Logger) (Config, FileInfo, error) {
	log = brainsurgeon.LoggerOrDiscard(log)
	if err := ctx.Err(); err != nil {
		return Config{}, FileInfo{}, err
	}
	if agentsDir == "" {
		return Config{}, FileInfo{}, fmt.Errorf("load config: no agents dir given: %w", brainsurgeon.ErrInvalid)
	}
	info := FileInfo{Path: Path(agentsDir)}
	data, err := readFile(info.Path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Debug("no config file, using the defaults", "path", info.Path)
		return Default(), info, nil
	}
	info.Exists = true
	if err != nil {
		return Config{}, info, fmt.Errorf("load config %s: %w", info.Path, err)
	}
	c, added, o, err := decode(data, log)
	info.Added, info.Unknown, info.Obsolete = added, o.unknown, o.obsolete
	var se *SyntaxError
	if errors.As(err, &se) {
		se.Path = info.Path // "<path>:<line>:<column>: …"
		return c, info, fmt.Errorf("load config: %w", se)
	}
	if err != nil {
		return c, info, fmt.Errorf("load config %s: %w", info.Path, err)
	}
	return c, info, nil
}

// readFile reads a regular file of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): %w", fi.Mode().Type(), brainsurgeon.ErrInvalid)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes: %w", MaxFileSize, brainsurgeon.ErrInvalid)
	}
	return data, nil
}

// Save validates c and writes it to the config file of the agents directory
// agentsDir (see [Path]) as pretty JSON: two-space indent, the fields in
// the documented order, a trailing newline. Unknown fields that the file
// held before are not kept.
//
// The write is atomic: the directory ".brainsurgeon" is created with mode
// 0700 if it is missing (its parent must exist), the JSON goes to a temp
// file of mode 0600 in that directory, which is synced and renamed over
// config.json, and the directory is synced. A reader sees either the old
// file or the new one, never a mix; after a crash there may be a leftover
// temp file named ".config.json.tmp-*", never a partial config.json.
//
// If c is invalid, Save writes nothing and returns the *ValidationError
// wrapped; an empty agentsDir gives an error wrapping
// brainsurgeon.ErrInvalid. Concurrent Saves do not corrupt the file; the
// last rename wins.
func Save(agentsDir string, c Config) error {
	if agentsDir == "" {
		return fmt.Errorf("save config: no agents dir given: %w", brainsurgeon.ErrInvalid)
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	data, err := c.encode("  ")
	if err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	data = append(data, '\n')
	path := Path(agentsDir)
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("save config %s: %w", path, err)
	}
	return nil
}

// writeAtomic replaces path with data through a synced temp file in the
// same directory (atomicfile.WriteFile, mode 0600), creating the directory
// (mode 0700) if it is missing.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	switch err := os.Mkdir(dir, 0o700); {
	case err == nil:
		if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Dir(dir), err)
		}
	case errors.Is(err, fs.ErrExist):
		fi, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory: %w", dir, brainsurgeon.ErrInvalid)
		}
	default:
		return err
	}

	return atomicfile.WriteFile(path, data, 0o600)
}
