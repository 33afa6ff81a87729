package extract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// SideDirer is implemented by stores that know where a session's side
// files live on disk (session.Store and the SQLite store: the JSONL era's
// "agents/<agent>/sessions/extracted/<sessionId>/").
type SideDirer interface {
	// SideDir returns the side directory of a session, or an error
	// wrapping brainsurgeon.ErrInvalid when the ref cannot have one.
	SideDir(ref bs.SessionRef) (string, error)
}

// DirStore is the brainsurgeon.SideStore on a local file system: one file
// per entry, "<entryId>.json", or "<entryId>.json.zst" (one zstd frame,
// readable with `zstd -dc`) when the record is larger than CompressAbove.
// It also reads the files of the first BrainSurgeon. Directories are
// created 0700 and files 0600. A file is written to a temp file and
// renamed, not fsynced one by one: Sync makes a session's files durable in
// one go (DESIGN decision 8).
//
// A DirStore is safe for concurrent use.
type DirStore struct {
	// Dirs locates each session's side directory.
	Dirs SideDirer
	// CompressAbove compresses records larger than this many bytes
	// (0 means 4096; negative never compresses).
	CompressAbove int

	mu      sync.Mutex
	pending map[string]*dirState // by side dir, files written since the last Sync
	// encs and decs keep a few (de)compressors for reuse: they hold large
	// buffers, so they are kept rather than left to a sync.Pool, which
	// drops them at every garbage collection.
	once    sync.Once
	encs    chan *zstd.Encoder
	decList chan *zstd.Decoder
}

func (d *DirStore) pools() {
	d.once.Do(func() {
		n := runtime.GOMAXPROCS(0)
		d.encs = make(chan *zstd.Encoder, n)
		d.decList = make(chan *zstd.Decoder, n)
	})
}

// dirState is what a DirStore knows about one side dir between Syncs.
type dirState struct {
	// names maps an entry id to the name its file had when the dir was
	// listed (or was last written), so the other name can be removed
	// without a probe.
	names map[string]string
	// written are the files written since the last Sync.
	written []string
	created bool
}

var _ bs.SideStore = (*DirStore)(nil)

// NewDirStore returns a DirStore over dirs.
func NewDirStore(dirs SideDirer) *DirStore { return &DirStore{Dirs: dirs} }

func (d *DirStore) dir(ref bs.SessionRef) (string, error) {
	if d.Dirs == nil {
		return "", fmt.Errorf("side store: no directory locator: %w", bs.ErrInvalid)
	}
	return d.Dirs.SideDir(ref)
}

// state returns the state of dir, listing it on first use since the last
// Sync. The caller holds d.mu.
func (d *DirStore) state(dir string) (*dirState, error) {
	if d.pending == nil {
		d.pending = map[string]*dirState{}
	}
	if st, ok := d.pending[dir]; ok {
		return st, nil
	}
	st := &dirState{names: map[string]string{}}
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create side dir: %w", err)
		}
		st.created = true
	case err != nil:
		return nil, fmt.Errorf("side dir %s: %w", dir, err)
	}
	for _, e := range ents {
		if id, ok := sideFileID(e.Name()); ok {
			st.names[id] = e.Name()
		}
	}
	d.pending[dir] = st
	return st, nil
}

func (d *DirStore) limit() int {
	if d.CompressAbove == 0 {
		return 4096
	}
	return d.CompressAbove
}

func (d *DirStore) encoder() *zstd.Encoder {
	d.pools()
	select {
	case e := <-d.encs:
		return e
	default:
	}
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	return e
}

func (d *DirStore) putEncoder(e *zstd.Encoder) {
	select {
	case d.encs <- e:
	default:
	}
}

func (d *DirStore) decoder() *zstd.Decoder {
	d.pools()
	select {
	case e := <-d.decList:
		return e
	default:
	}
	e, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	return e
}

func (d *DirStore) putDecoder(e *zstd.Decoder) {
	select {
	case d.decList <- e:
	default:
		e.Close()
	}
}

// Put writes the records' files, replacing earlier files of the same
// entries (compressed or not). It may be called from several goroutines.
func (d *DirStore) Put(ctx context.Context, ref bs.SessionRef, recs []bs.SideRecord) error {
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	d.mu.Lock()
	st, err := d.state(dir)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ValidID(r.EntryID); err != nil {
			return err
		}
		data, name := r.Data, r.EntryID+".json"
		if l := d.limit(); l >= 0 && len(data) > l {
			enc := d.encoder()
			data = enc.EncodeAll(data, make([]byte, 0, len(data)/3))
			d.putEncoder(enc)
			name += ".zst"
		}
		path := filepath.Join(dir, name)
		tmp := filepath.Join(dir, ".tmp-"+r.EntryID+"-"+randHex())
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("write side file of entry %s: %w", r.EntryID, err)
		}
		if err := os.Rename(tmp, path); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("rename side file of entry %s: %w", r.EntryID, err)
		}
		d.mu.Lock()
		old := st.names[r.EntryID]
		st.names[r.EntryID] = name
		st.written = append(st.written, path)
		d.mu.Unlock()
		if old != "" && old != name {
			if err := os.Remove(filepath.Join(dir, old)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove old side file %s: %w", old, err)
			}
		}
	}
	return nil
}

// Get reads the record of one entry, decompressed. A missing file is an
// error wrapping brainsurgeon.ErrNotFound; an undecodable one wraps
// ErrCorrupt.
func (d *DirStore) Get(ctx context.Context, ref bs.SessionRef, entryID string) (bs.SideRecord, error) {
	if err := ValidID(entryID); err != nil {
		return bs.SideRecord{}, err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return bs.SideRecord{}, err
	}
	zst := filepath.Join(dir, entryID+".json.zst")
	data, err := os.ReadFile(zst)
	if err == nil {
		dec := d.decoder()
		data, err = dec.DecodeAll(data, nil)
		d.putDecoder(dec)
		if err != nil {
			return bs.SideRecord{}, fmt.Errorf("side file %s: zstd: %v: %w", zst, err, ErrCorrupt)
		}
		return bs.SideRecord{EntryID: entryID, Data: data}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return bs.SideRecord{}, fmt.Errorf("side file %s: %w", zst, err)
	}
	plain := filepath.Join(dir, entryID+".json")
	data, err = os.ReadFile(plain)
	if errors.Is(err, fs.ErrNotExist) {
		return bs.SideRecord{}, fmt.Errorf("side file for entry %s in %s: %w", entryID, dir, bs.ErrNotFound)
	}
	if err != nil {
		return bs.SideRecord{}, fmt.Errorf("side file %s: %w", plain, err)
	}
	return bs.SideRecord{EntryID: entryID, Data: data}, nil
}

// List returns the side files of a session (compressed or not; temp and
// other dot files excluded) with their sizes on disk. A missing directory
// has none.
func (d *DirStore) List(ctx context.Context, ref bs.SessionRef) ([]bs.SideInfo, error) {
	dir, err := d.dir(ref)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", dir, err)
	}
	out := make([]bs.SideInfo, 0, len(ents))
	for _, e := range ents {
		id, ok := sideFileID(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info := bs.SideInfo{EntryID: id, Location: filepath.Join(dir, e.Name())}
		if fi, err := e.Info(); err == nil {
			info.Size, info.ModTime = fi.Size(), fi.ModTime()
		}
		out = append(out, info)
	}
	return out, nil
}

// Delete removes the side file of one entry, under either name.
func (d *DirStore) Delete(ctx context.Context, ref bs.SessionRef, entryID string) error {
	if err := ValidID(entryID); err != nil {
		return err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	for _, n := range []string{entryID + ".json", entryID + ".json.zst"} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete side file: %w", err)
		}
	}
	d.mu.Lock()
	if st, ok := d.pending[dir]; ok {
		delete(st.names, entryID)
	}
	d.mu.Unlock()
	return nil
}

// Sync makes the files Put for the session since the last Sync durable:
// their data (one syncfs on Linux, an fsync per file elsewhere), the side
// directory and, when it was created, its parent.
func (d *DirStore) Sync(ctx context.Context, ref bs.SessionRef) error {
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	d.mu.Lock()
	st := d.pending[dir]
	delete(d.pending, dir)
	d.mu.Unlock()
	if st == nil || (len(st.written) == 0 && !st.created) {
		return nil
	}
	if err := syncFiles(dir, st.written); err != nil {
		return fmt.Errorf("sync side files of %s: %w", ref, err)
	}
	dirs := []string{dir}
	if st.created {
		dirs = append(dirs, filepath.Dir(dir), filepath.Dir(filepath.Dir(dir)))
	}
	for _, p := range dirs {
		if err := atomicfile.SyncDir(p); err != nil {
			return fmt.Errorf("sync side dir %s: %w", p, err)
		}
	}
	return nil
}

func syncEach(files []string) error {
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // replaced by a later write of the same entry
			}
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// sideFileID returns the entry id of a side file name.
func sideFileID(name string) (string, bool) {
	if strings.HasPrefix(name, ".") {
		return "", false
	}
	id, ok := strings.CutSuffix(name, ".json.zst")
	if !ok {
		id, ok = strings.CutSuffix(name, ".json")
	}
	if !ok || ValidID(id) != nil {
		return "", false
	}
	return id, true
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// LoadRecord reads and decodes the record of one entry from a side store.
// A missing record wraps brainsurgeon.ErrNotFound, an undecodable one
// ErrCorrupt.
func LoadRecord(ctx context.Context, side bs.SideStore, ref bs.SessionRef, entryID string) (*Record, error) {
	sr, err := side.Get(ctx, ref, entryID)
	if err != nil {
		return nil, err
	}
	rec, err := DecodeRecord(sr.Data)
	if err != nil {
		return nil, fmt.Errorf("side record of entry %s: %w", entryID, err)
	}
	if rec.EntryID == "" {
		rec.EntryID = entryID
	}
	return rec, nil
}

// SaveRecord encodes rec and puts it into a side store (not yet durable:
// call Sync).
func SaveRecord(ctx context.Context, side bs.SideStore, ref bs.SessionRef, rec *Record) (int, error) {
	data, err := EncodeRecord(rec)
	if err != nil {
		return 0, fmt.Errorf("encode side record of entry %s: %w", rec.EntryID, err)
	}
	return len(data), side.Put(ctx, ref, []bs.SideRecord{{EntryID: rec.EntryID, Data: data}})
}

// FixedDir is a SideDirer that places the side files of every session in
// one directory: for tools and tests that work on one session's side dir.
type FixedDir string

// SideDir returns the directory.
func (d FixedDir) SideDir(bs.SessionRef) (string, error) { return string(d), nil }
