// Package sidetest holds test helpers that read and write side records in
// a side directory directly, and build the stores tests need.
package sidetest

import (
	"context"
	"os"
	"path/filepath"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Dir returns the side directory of a JSONL transcript's session.
func Dir(transcript, sessionID string) string {
	return filepath.Join(filepath.Dir(transcript), "extracted", sessionID)
}

// ReadRecord reads the record of an entry from dir and returns it with
// the file's path.
func ReadRecord(dir, entryID string) (*extract.Record, string, error) {
	side := extract.NewDirStore(extract.FixedDir(dir))
	rec, err := extract.LoadRecord(context.Background(), side, bs.SessionRef{}, entryID)
	path := filepath.Join(dir, entryID+".json.zst")
	if _, serr := os.Stat(path); serr != nil {
		path = filepath.Join(dir, entryID+".json")
	}
	return rec, path, err
}

// WriteRecord writes rec into dir, compressed above compressAbove bytes
// (0: the default, negative: never), and syncs it.
func WriteRecord(dir string, rec *extract.Record, compressAbove int) error {
	side := &extract.DirStore{Dirs: extract.FixedDir(dir), CompressAbove: compressAbove}
	if _, err := extract.SaveRecord(context.Background(), side, bs.SessionRef{}, rec); err != nil {
		return err
	}
	return side.Sync(context.Background(), bs.SessionRef{})
}

// Store returns a JSONL store over root with no quiet period.
func Store(root string) *session.Store {
	st := session.NewStore(root)
	st.Writer.Quiet = 0 // no quiet period
	return st
}

// Extractor returns an Extractor over st with policy p.
func Extractor(st bs.Store, p extract.Policy) *extract.Extractor {
	return &extract.Extractor{Policy: p, Store: st, Side: side(st)}
}

// Restorer returns a Restorer over st with its state beside root.
func Restorer(st bs.Store, root string) *restore.Restorer {
	return restore.New(st, side(st), restore.StateDir(root))
}

func side(st bs.Store) bs.SideStore {
	if d, ok := st.(extract.SideDirer); ok {
		return extract.NewDirStore(d)
	}
	return nil
}
