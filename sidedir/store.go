package sidedir

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Locator locates the side directories of sessions. The transcript
// stores implement it (the JSONL store, the SQLite store and the store
// over both), from where a session's transcript is or was.
type Locator interface {
	// SideDir returns the side directory of a session, or an error
	// wrapping brainsurgeon.ErrInvalid when the ref cannot have one.
	SideDir(ref bs.SessionRef) (string, error)
}

// Store is the brainsurgeon.SideStore in the side directories of
// sessions, with the layout, the newest-record rule and the durability
// the package documentation describes: the records Put for a session
// between two Syncs go into one pack, durable when Sync returns.
//
// A Store is safe for concurrent use.
type Store struct {
	// Dirs locates each session's side directory.
	Dirs Locator
	// Medium keeps the units of the side directories; nil means the
	// local file system (directories 0700, files 0600, fsync before and
	// after each rename).
	Medium Medium
	// IndexCacheEntries bounds the pack indexes kept in memory, in entries
	// (about 200 bytes each; 0 means DefaultIndexCacheEntries): a daemon
	// reads the packs of thousands of sessions over its life. The least
	// recently used indexes are dropped first.
	IndexCacheEntries int
	// Gate, when set, is held around every change of the units: each
	// Commit of a new unit and each removal. It fails when the Store may
	// no longer change them (the values moved to another store:
	// package backend's side migrate), and the change is then not made.
	// nil lets every change through.
	Gate func(ctx context.Context) (release func(), err error)

	mu      sync.Mutex
	pending map[string]*packWriter // by side dir: the pack being written
	indexes map[string]cachedIndex // by pack path
	cached  int                    // entries in indexes
	tick    uint64
	lists   map[string]dirList // by side dir
	// encs and decs keep a few (de)compressors for reuse: they hold large
	// buffers, so they are kept rather than left to a sync.Pool, which
	// drops them at every garbage collection.
	once    sync.Once
	encs    chan *zstd.Encoder
	decList chan *zstd.Decoder
	bufs    chan []byte // frame buffers
	frame   frameCache  // the last frame decoded
}

// frameCache is a decoded frame of a finished pack.
type frameCache struct {
	path        string
	key         statKey
	off, length int64
	data        []byte
}

type cachedIndex struct {
	key  statKey
	ix   *packIndex
	err  error
	used uint64 // d.tick when last used
}

// DefaultIndexCacheEntries is the default of Store.IndexCacheEntries.
const DefaultIndexCacheEntries = 200_000

// cacheIndex keeps c as the index of path, dropping the least recently
// used others while the cache holds more entries than allowed. d.mu is
// held.
func (d *Store) cacheIndex(path string, c cachedIndex) {
	if d.indexes == nil {
		d.indexes = map[string]cachedIndex{}
	}
	d.tick++
	c.used = d.tick
	if old, ok := d.indexes[path]; ok && old.ix != nil {
		d.cached -= len(old.ix.Entries)
	}
	d.indexes[path] = c
	if c.ix != nil {
		d.cached += len(c.ix.Entries)
	}
	limit := d.IndexCacheEntries
	if limit <= 0 {
		limit = DefaultIndexCacheEntries
	}
	for d.cached > limit && len(d.indexes) > 1 {
		victim, oldest := "", uint64(0)
		for p, x := range d.indexes {
			if p != path && (victim == "" || x.used < oldest) {
				victim, oldest = p, x.used
			}
		}
		d.forgetIndex(victim)
	}
}

// forgetIndex drops the cached index of path. d.mu is held.
func (d *Store) forgetIndex(path string) {
	if x, ok := d.indexes[path]; ok {
		if x.ix != nil {
			d.cached -= len(x.ix.Entries)
		}
		delete(d.indexes, path)
	}
}

// dirList is a cached listing of a side dir's packs, newest first; it is
// used while the dir's mtime is unchanged and was at least listSlack older
// than the listing (a change in the same clock tick is then impossible).
type dirList struct {
	mtime time.Time
	packs []string
}

const listSlack = 2 * time.Second

// packWriter is the pack being written into one side dir. Records are
// gathered into an open frame; a full frame is compressed outside the lock
// by the goroutine that filled it and then appended to the file.
type packWriter struct {
	mu      sync.Mutex
	idle    sync.Cond // signalled when a frame in flight is written
	dir     string
	tmp     string
	f       *os.File
	off     int64
	ix      packIndex
	created bool // the dir was created for it
	done    bool // Sync took it
	err     error

	group    []byte            // the open frame's records
	members  []member          // their places in it
	inflight int               // frames being compressed outside the lock
	seq      uint64            // the last Put's sequence number
	newest   map[string]uint64 // by entry id: the sequence number of its newest record here
	// unwritten holds, by entry id, records put but not yet in a written
	// frame, so Get finds them meanwhile.
	unwritten map[string]member
}

// member is one record put into a pack writer.
type member struct {
	id    string
	seq   uint64
	start int64
	data  []byte // the record; valid until its frame is written
	sum   string // the record's CRC-32C in hex (recordCRC)
	time  time.Time
}

// frameJob is a closed frame to compress and append.
type frameJob struct {
	data    []byte
	members []member
}

func (d *Store) pools() {
	d.once.Do(func() {
		n := runtime.GOMAXPROCS(0)
		d.encs = make(chan *zstd.Encoder, n)
		d.decList = make(chan *zstd.Decoder, n)
		d.bufs = make(chan []byte, 4*n)
	})
}

var _ bs.SideStore = (*Store)(nil)

// New returns a Store over dirs on the local file system.
func New(dirs Locator) *Store { return &Store{Dirs: dirs} }

// NewWithMedium returns a Store over dirs whose units m keeps: the same
// packs, rules and durability order as New's, on another medium (nil
// means the local file system).
func NewWithMedium(dirs Locator, m Medium) *Store { return &Store{Dirs: dirs, Medium: m} }

// gate holds the Store's Gate, when it has one, until release.
func (d *Store) gate(ctx context.Context) (release func(), err error) {
	if d.Gate == nil {
		return func() {}, nil
	}
	return d.Gate(ctx)
}

// medium returns the Store's Medium.
func (d *Store) medium() Medium {
	if d.Medium != nil {
		return d.Medium
	}
	return fsMedium{}
}

func (d *Store) dir(ref bs.SessionRef) (string, error) {
	if d.Dirs == nil {
		return "", fmt.Errorf("side store: no directory locator: %w", bs.ErrInvalid)
	}
	return d.Dirs.SideDir(ref)
}

func (d *Store) encoder() *zstd.Encoder {
	d.pools()
	select {
	case e := <-d.encs:
		return e
	default:
	}
	// Frames hold at most frameTarget bytes of small records, or one
	// larger record: a 256 KB window loses little and keeps each
	// encoder's history at about 0.5 MB instead of 8 MB. Frames carry no
	// xxhash checksum: the index's CRC-32C checks each record, and the
	// record each value's sha256.
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(256<<10), zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false))
	return e
}

func (d *Store) putEncoder(e *zstd.Encoder) {
	select {
	case d.encs <- e:
	default:
	}
}

func (d *Store) decoder() *zstd.Decoder {
	d.pools()
	select {
	case e := <-d.decList:
		return e
	default:
	}
	e, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	return e
}

func (d *Store) putDecoder(e *zstd.Decoder) {
	select {
	case d.decList <- e:
	default:
		e.Close()
	}
}

// writer returns the pack being written into dir, creating it.
func (d *Store) writer(ctx context.Context, dir string) (*packWriter, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.pending[dir]; w != nil {
		return w, nil
	}
	f, created, err := d.medium().Create(ctx, dir)
	if err != nil {
		return nil, err
	}
	w := &packWriter{dir: dir, tmp: f.Name(), f: f, created: created,
		ix:     packIndex{Format: PackFormat, Entries: map[string]packEntry{}},
		newest: map[string]uint64{}, unwritten: map[string]member{}}
	w.idle.L = &w.mu
	if d.pending == nil {
		d.pending = map[string]*packWriter{}
	}
	d.pending[dir] = w
	return w, nil
}

// Put adds the records to the session's pending pack, replacing earlier
// records of the same entries once the pack is synced. It may be called
// from several goroutines: a frame filled by one call is compressed by
// that call, outside the pack's lock, so frames compress concurrently.
func (d *Store) Put(ctx context.Context, ref bs.SessionRef, recs []bs.SideRecord) error {
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	sums := make([]string, len(recs))
	for i, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := bs.CheckSideKey(r.EntryID); err != nil {
			return err
		}
		sums[i] = recordCRC(r.Data)
	}
	if len(recs) == 0 {
		return nil
	}
	for {
		w, err := d.writer(ctx, dir)
		if err != nil {
			return err
		}
		w.mu.Lock()
		if w.done {
			w.mu.Unlock()
			continue // synced meanwhile: the records go into the next pack
		}
		if w.err != nil {
			err := w.err
			w.mu.Unlock()
			return err
		}
		now := time.Now().UTC()
		var jobs []frameJob
		for i, r := range recs {
			w.seq++
			m := member{id: r.EntryID, seq: w.seq, sum: sums[i], time: now}
			w.newest[r.EntryID] = m.seq
			if len(r.Data) >= frameTarget {
				m.data = r.Data
				jobs = append(jobs, frameJob{data: r.Data, members: []member{m}})
			} else {
				if w.group == nil {
					w.group = d.buffer()
				}
				m.start = int64(len(w.group))
				w.group = append(w.group, r.Data...)
				m.data = w.group[m.start:len(w.group):len(w.group)]
				w.members = append(w.members, m)
				if len(w.group) >= frameTarget {
					jobs = append(jobs, frameJob{data: w.group, members: w.members})
					w.group, w.members = nil, nil
				}
			}
			w.unwritten[r.EntryID] = m
		}
		w.inflight += len(jobs)
		w.mu.Unlock()
		var firstErr error
		for _, j := range jobs {
			if err := d.writeFrame(w, j, true); err != nil && firstErr == nil {
				firstErr = err
			}
		}
		return firstErr
	}
}

// writeFrame compresses a frame of records and appends it to w's file,
// indexing each record unless a newer one of its entry was put since.
// inflight tells that the frame was counted in w.inflight and the lock is
// not held (compression then runs outside it); otherwise the caller holds
// w.mu.
func (d *Store) writeFrame(w *packWriter, j frameJob, inflight bool) error {
	enc := d.encoder()
	data := enc.EncodeAll(j.data, d.buffer())
	d.putEncoder(enc)
	defer d.putBuffer(data)
	if inflight {
		w.mu.Lock()
		defer w.mu.Unlock()
		defer w.idle.Broadcast()
		w.inflight--
	}
	if w.err != nil {
		return w.err
	}
	if _, err := w.f.Write(data); err != nil {
		w.err = fmt.Errorf("write pack %s: %w", w.tmp, err)
		return w.err
	}
	for _, m := range j.members {
		if w.newest[m.id] != m.seq {
			continue // replaced or deleted meanwhile
		}
		w.ix.Entries[m.id] = packEntry{Offset: w.off, Length: int64(len(data)), Start: m.start,
			Size: int64(len(m.data)), CRC32C: m.sum, Time: m.time}
		if u, ok := w.unwritten[m.id]; ok && u.seq == m.seq {
			delete(w.unwritten, m.id)
		}
	}
	w.off += int64(len(data))
	if len(j.members) > 1 || len(j.data) < frameTarget {
		d.putBuffer(j.data) // a group's buffer: nothing refers to it now
	}
	return nil
}

// buffer returns an empty buffer that holds a frame of small records
// without growing (they are below frameTarget, and a frame is closed once
// it reaches frameTarget).
func (d *Store) buffer() []byte {
	d.pools()
	select {
	case b := <-d.bufs:
		return b[:0]
	default:
		return make([]byte, 0, 2*frameTarget)
	}
}

// putBuffer keeps b for reuse when it is a frame buffer.
func (d *Store) putBuffer(b []byte) {
	if cap(b) != 2*frameTarget {
		return
	}
	select {
	case d.bufs <- b:
	default:
	}
}

// Sync writes the session's pending pack's index, fsyncs the pack,
// renames it to its final name and fsyncs the side directory (and, when
// the pass created it, its parents): the Medium's Commit, then its Sync.
func (d *Store) Sync(ctx context.Context, ref bs.SessionRef) error {
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	d.mu.Lock()
	w := d.pending[dir]
	delete(d.pending, dir)
	d.mu.Unlock()
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	for w.inflight > 0 {
		w.idle.Wait()
	}
	if len(w.members) > 0 {
		j := frameJob{data: w.group, members: w.members}
		w.group, w.members = nil, nil
		_ = d.writeFrame(w, j, false) // an error is in w.err
	}
	if w.err != nil {
		w.f.Close()
		os.Remove(w.tmp)
		return fmt.Errorf("sync side records of %s: %w", ref, w.err)
	}
	if len(w.ix.Entries) == 0 && len(w.ix.Deleted) == 0 {
		w.f.Close()
		os.Remove(w.tmp)
	} else if _, _, err := d.finish(ctx, dir, w.f, w.off, &w.ix, time.Now()); err != nil {
		return fmt.Errorf("sync side records of %s: %w", ref, err)
	}
	return d.medium().Sync(ctx, dir, w.created)
}

// finish appends the index, with the given pass time, and the trailer to
// the temp file f of a pack of dir and commits it under its final name
// (the file system: fsync, close, rename), which it returns with the
// pack's size. The caller then syncs dir. On error f is removed.
func (d *Store) finish(ctx context.Context, dir string, f *os.File, off int64, ix *packIndex, passTime time.Time) (string, int64, error) {
	return d.finishNamed(ctx, dir, f, off, ix, passTime, "")
}

// finishNamed is finish committing the pack under name when it is not
// "" (else a new pack name for passTime).
func (d *Store) finishNamed(ctx context.Context, dir string, f *os.File, off int64, ix *packIndex, passTime time.Time, name string) (string, int64, error) {
	ix.PassTime = passTime.UTC()
	tail, err := packTail(ix, off)
	if err == nil {
		_, err = f.Write(tail)
	}
	m := d.medium()
	if name == "" {
		name = packName(ix.PassTime)
	}
	if err != nil {
		f.Close()
	} else if release, gerr := d.gate(ctx); gerr != nil {
		f.Close()
		err = gerr
	} else {
		err = m.Commit(ctx, dir, f, name)
		release()
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, fmt.Errorf("write pack in %s: %w", m.Describe(dir, ""), err)
	}
	d.mu.Lock()
	delete(d.lists, dir)
	// The index just written is the pack's: reading it back would cost a
	// parse of the whole index.
	if fi, err := m.Stat(ctx, dir, name); err == nil {
		ix.sumFrames()
		d.cacheIndex(m.Describe(dir, name), cachedIndex{key: keyOf(fi), ix: ix})
	}
	d.mu.Unlock()
	return name, off + int64(len(tail)), nil
}

// packs returns the names of dir's packs, newest first.
func (d *Store) packs(ctx context.Context, dir string) ([]string, error) {
	m := d.medium()
	stamp, err := m.Stamp(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", m.Describe(dir, ""), err)
	}
	d.mu.Lock()
	l, ok := d.lists[dir]
	d.mu.Unlock()
	if ok && l.mtime.Equal(stamp) {
		return l.packs, nil
	}
	ents, err := m.List(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", m.Describe(dir, ""), err)
	}
	return d.listed(dir, stamp, ents), nil
}

// listed caches and returns the packs of a listing of dir taken when dir's
// mtime (the Medium's stamp) was mtime; a zero stamp is never cached.
func (d *Store) listed(dir string, mtime time.Time, ents []fs.DirEntry) []string {
	var packs []string
	for _, e := range ents {
		if isPackName(e.Name()) && e.Type().IsRegular() {
			packs = append(packs, e.Name())
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(packs)))
	d.mu.Lock()
	defer d.mu.Unlock()
	if !mtime.IsZero() && time.Since(mtime) > listSlack {
		if d.lists == nil {
			d.lists = map[string]dirList{}
		}
		d.lists[dir] = dirList{mtime: mtime, packs: packs}
	} else {
		delete(d.lists, dir)
	}
	return packs
}

// index returns the index of the pack name of dir, at path (the Medium's
// Describe), cached by (path, size, mtime). A cached index costs one
// stat: the pack is opened only to read an index that is not cached
// (readers call this for every pack they pass over).
func (d *Store) index(ctx context.Context, dir, name, path string) (*packIndex, error) {
	m := d.medium()
	if fi, err := m.Stat(ctx, dir, name); err == nil {
		if ix, err, ok := d.cachedIndex(path, keyOf(fi)); ok {
			return ix, err
		}
	}
	f, err := m.Open(ctx, dir, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &packIndex{}, nil // removed meanwhile
		}
		return nil, fmt.Errorf("pack %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", path, err)
	}
	k := keyOf(fi)
	if ix, err, ok := d.cachedIndex(path, k); ok {
		return ix, err
	}
	ix, err := readPackIndex(f, fi.Size(), path)
	d.mu.Lock()
	d.cacheIndex(path, cachedIndex{key: k, ix: ix, err: err})
	d.mu.Unlock()
	return ix, err
}

// cachedIndex returns the cached index of the pack at path, when it was
// read from the pack as it is now (key), and marks it used.
func (d *Store) cachedIndex(path string, key statKey) (*packIndex, error, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.indexes[path]
	if !ok || c.key != key {
		return nil, nil, false
	}
	d.tick++
	c.used = d.tick
	d.indexes[path] = c
	return c.ix, c.err, true
}

// found is where the newest record of an entry is.
type found struct {
	pack    string // the pack's path, "" for a per-entry file or the pending pack
	file    string // the per-entry file's path
	name    string // the unit name of the pack or the per-entry file
	pending *packWriter
	data    []byte // a pending record not yet in a written frame
	entry   packEntry
	time    time.Time
	deleted bool
	size    int64
}

// resolve finds the newest record of entryID in dir: the session's
// pending pack, when it holds the entry, is newer than everything on disk;
// otherwise newest decides among the packs (names, newest first) and the
// per-entry files. files, when not nil, holds the per-entry files of dir
// by name (otherwise they are looked up); ixs holds indexes already read,
// by path. A deleted entry is not found. bad lists the packs whose index
// cannot be read.
func (d *Store) resolve(ctx context.Context, dir, entryID string, packs []string, files map[string]os.FileInfo, ixs map[string]*packIndex) (best found, ok bool, bad []error) {
	d.mu.Lock()
	w := d.pending[dir]
	d.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		u, unwritten := w.unwritten[entryID]
		e, in := w.ix.Entries[entryID]
		if unwritten {
			u.data = bytes.Clone(u.data)
		}
		w.mu.Unlock()
		if unwritten {
			// Copied under the lock: the frame's buffer is reused once written.
			return found{pending: w, data: u.data, entry: packEntry{Size: int64(len(u.data)), CRC32C: u.sum, Time: u.time}, size: int64(len(u.data))}, true, nil
		}
		if in {
			return found{pending: w, entry: e, size: e.Length}, true, nil
		}
	}
	m := d.medium()
	where := func(name string) string { return m.Describe(dir, name) }
	index := func(name, path string) (*packIndex, error) {
		if ix := ixs[path]; ix != nil {
			return ix, nil
		}
		return d.index(ctx, dir, name, path)
	}
	file := func(name string) os.FileInfo {
		if files != nil {
			return files[name]
		}
		fi, _ := m.Stat(ctx, dir, name)
		return fi
	}
	best, ok, bad = newest(entryID, packs, where, index, file)
	if ok && best.deleted {
		ok = false
	}
	return best, ok, bad
}

// newest applies the newest-record rule, which every reader of a side
// dir follows (Get, List, Locate, Delete, SideUnits and DropUnits), to the
// durable state of one key in dir. The first of packs (names, newest
// first) whose index holds the key, as a record or as a deletion, gives
// its pack state, timed by the pack's pass time (the index's, or the
// name's when the index has none) or the deletion's time. The key's
// per-entry file (".json.zst" looked at before ".json") wins when no pack
// holds the key or when it was modified after that time. A deletion that
// wins is returned with deleted set: the key has no record.
//
// where returns the path of a unit of dir by name (the Medium's
// Describe). index returns a pack's index by name and path; a pack whose
// index cannot be read is passed over and its error returned in bad. file
// returns the FileInfo of a file of dir by name, or nil.
func newest(key string, packs []string, where func(name string) string, index func(name, path string) (*packIndex, error), file func(name string) os.FileInfo) (best found, ok bool, bad []error) {
	for _, name := range packs {
		path := where(name)
		ix, err := index(name, path)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if e, in := ix.Entries[key]; in {
			best, ok = found{pack: path, name: name, entry: e, time: ix.PassTime, size: ix.stored(e)}, true
			break
		}
		if t, in := ix.Deleted[key]; in {
			best, ok = found{pack: path, name: name, time: t, deleted: true}, true
			break
		}
	}
	for _, n := range []string{key + ".json.zst", key + ".json"} {
		fi := file(n)
		if fi == nil || !fi.Mode().IsRegular() {
			continue
		}
		if !ok || fi.ModTime().After(best.time) {
			best, ok = found{file: where(n), name: n, time: fi.ModTime(), size: fi.Size()}, true
		}
		break
	}
	return best, ok, bad
}

// Get reads the record of one entry, decompressed: the newest of the
// packs and the per-entry files. A missing record is an error wrapping
// brainsurgeon.ErrNotFound; an undecodable one, or a missing one while a
// pack's index cannot be read, wraps bs.ErrCorrupt and names the pack.
func (d *Store) Get(ctx context.Context, ref bs.SessionRef, entryID string) (bs.SideRecord, error) {
	if err := bs.CheckSideKey(entryID); err != nil {
		return bs.SideRecord{}, err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return bs.SideRecord{}, err
	}
	packs, err := d.packs(ctx, dir)
	if err != nil {
		return bs.SideRecord{}, err
	}
	best, ok, bad := d.resolve(ctx, dir, entryID, packs, nil, nil)
	if !ok && d.packsChanged(ctx, dir, packs) {
		return d.Get(ctx, ref, entryID) // DropUnits replaced packs meanwhile: look again
	}
	if !ok {
		if len(bad) > 0 {
			return bs.SideRecord{}, fmt.Errorf("side record of entry %s in %s: not in any readable pack or file: %w", entryID, dir, errors.Join(bad...))
		}
		return bs.SideRecord{}, fmt.Errorf("side file for entry %s in %s: %w", entryID, dir, bs.ErrNotFound)
	}
	var data []byte
	switch {
	case best.data != nil:
		data = best.data
	case best.pending != nil:
		w := best.pending
		w.mu.Lock()
		if w.done {
			// Synced meanwhile: the record is in a pack now.
			w.mu.Unlock()
			return d.Get(ctx, ref, entryID)
		}
		data, err = d.readFrame(w.f, w.tmp, entryID, best.entry, false)
		w.mu.Unlock()
	case best.pack != "":
		var f Blob
		if f, err = d.medium().Open(ctx, dir, best.name); err == nil {
			data, err = d.readFrame(f, best.pack, entryID, best.entry, true)
			f.Close()
		}
	default:
		data, err = d.readFile(ctx, dir, best.name)
	}
	if err != nil && best.pending == nil && (errors.Is(err, fs.ErrNotExist) || (best.file != "" && errors.Is(err, bs.ErrNotFound))) {
		// Removed meanwhile by DropUnits, which made the records it keeps
		// durable in a new pack first: look again.
		d.forgetPath(dir, best.pack+best.file)
		return d.Get(ctx, ref, entryID)
	}
	if err != nil {
		return bs.SideRecord{}, err
	}
	return bs.SideRecord{EntryID: entryID, Data: data}, nil
}

// readFrame reads and checks the record of entryID at e in the pack f.
// The last frame decoded of a finished pack (keep) is kept, so reading
// the records of one frame in turn (verify, restore --all) decodes it
// once.
func (d *Store) readFrame(f Blob, path, entryID string, e packEntry, keep bool) ([]byte, error) {
	var key statKey
	if fi, err := f.Stat(); err == nil {
		key = keyOf(fi)
	}
	d.mu.Lock()
	c := d.frame
	d.mu.Unlock()
	var frame []byte
	if c.path == path && c.key == key && c.off == e.Offset && c.length == e.Length && c.data != nil {
		frame = c.data
	} else {
		buf := make([]byte, e.Length)
		if _, err := f.ReadAt(buf, e.Offset); err != nil {
			return nil, fmt.Errorf("pack %s: entry %s: read frame at %d: %v: %w", path, entryID, e.Offset, err, bs.ErrCorrupt)
		}
		dec := d.decoder()
		var err error
		frame, err = dec.DecodeAll(buf, make([]byte, 0, max(e.Start+e.Size, e.Length*2)))
		d.putDecoder(dec)
		if err != nil {
			return nil, fmt.Errorf("pack %s: entry %s: zstd frame at %d: %v: %w", path, entryID, e.Offset, err, bs.ErrCorrupt)
		}
		if keep {
			d.mu.Lock()
			d.frame = frameCache{path: path, key: key, off: e.Offset, length: e.Length, data: frame}
			d.mu.Unlock()
		}
	}
	if e.Start+e.Size > int64(len(frame)) {
		return nil, fmt.Errorf("pack %s: entry %s: record at %d+%d is past the frame's %d bytes: %w", path, entryID, e.Start, e.Size, len(frame), bs.ErrCorrupt)
	}
	data := bytes.Clone(frame[e.Start : e.Start+e.Size])
	if err := checkRecord(data, e); err != nil {
		return nil, fmt.Errorf("pack %s: entry %s: %v: %w", path, entryID, err, bs.ErrCorrupt)
	}
	return data, nil
}

// readFile reads the per-entry file name of dir, decompressing a ".zst"
// one.
func (d *Store) readFile(ctx context.Context, dir, name string) ([]byte, error) {
	m := d.medium()
	path := m.Describe(dir, name)
	data, err := readBlob(ctx, m, dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("side file %s: %w", path, bs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("side file %s: %w", path, err)
	}
	if strings.HasSuffix(name, ".zst") {
		dec := d.decoder()
		data, err = dec.DecodeAll(data, nil)
		d.putDecoder(dec)
		if err != nil {
			return nil, fmt.Errorf("side file %s: zstd: %v: %w", path, err, bs.ErrCorrupt)
		}
	}
	return data, nil
}

// readBlob reads a whole unit, as os.ReadFile reads a file: up to its end,
// into a buffer of the size it had when opened.
func readBlob(ctx context.Context, m Medium, dir, name string) ([]byte, error) {
	f, err := m.Open(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err = buf.ReadFrom(io.NewSectionReader(f, 0, math.MaxInt64))
	return buf.Bytes(), err
}

// List returns the newest record of each entry of a session: Location is
// its pack or per-entry file, Size its stored (compressed) size. Packs
// whose index cannot be read are left out (Get names them). A missing
// directory has none.
func (d *Store) List(ctx context.Context, ref bs.SessionRef) ([]bs.SideInfo, error) {
	dir, err := d.dir(ref)
	if err != nil {
		return nil, err
	}
	m := d.medium()
	stamp, err := m.Stamp(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", m.Describe(dir, ""), err)
	}
	ents, err := m.List(ctx, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("side dir %s: %w", m.Describe(dir, ""), err)
	}
	packs := d.listed(dir, stamp, ents)
	files := map[string]os.FileInfo{}
	ids := map[string]bool{}
	for _, e := range ents {
		if id, ok := sideFileID(e.Name()); ok {
			if info, err := e.Info(); err == nil {
				files[e.Name()] = info
				ids[id] = true
			}
		}
	}
	ixs := make(map[string]*packIndex, len(packs))
	for _, name := range packs {
		path := m.Describe(dir, name)
		if ix, err := d.index(ctx, dir, name, path); err == nil {
			ixs[path] = ix
			for id := range ix.Entries {
				ids[id] = true
			}
		}
	}
	d.mu.Lock()
	w := d.pending[dir]
	d.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		for id := range w.ix.Entries {
			ids[id] = true
		}
		for id := range w.unwritten {
			ids[id] = true
		}
		w.mu.Unlock()
	}
	out := make([]bs.SideInfo, 0, len(ids))
	for id := range ids {
		best, ok, _ := d.resolve(ctx, dir, id, packs, files, ixs)
		if !ok {
			continue
		}
		out = append(out, best.info(id))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EntryID < out[j].EntryID })
	return out, nil
}

// Locate returns where the newest record of one entry is, as List would
// describe it, or an error wrapping brainsurgeon.ErrNotFound.
func (d *Store) Locate(ctx context.Context, ref bs.SessionRef, entryID string) (bs.SideInfo, error) {
	if err := bs.CheckSideKey(entryID); err != nil {
		return bs.SideInfo{}, err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return bs.SideInfo{}, err
	}
	packs, err := d.packs(ctx, dir)
	if err != nil {
		return bs.SideInfo{}, err
	}
	best, ok, bad := d.resolve(ctx, dir, entryID, packs, nil, nil)
	if !ok {
		if len(bad) > 0 {
			return bs.SideInfo{}, errors.Join(bad...)
		}
		return bs.SideInfo{}, fmt.Errorf("side record of entry %s in %s: %w", entryID, dir, bs.ErrNotFound)
	}
	return best.info(entryID), nil
}

// info describes a found record.
func (f found) info(entryID string) bs.SideInfo {
	info := bs.SideInfo{EntryID: entryID, Size: f.size, ModTime: f.time, Location: f.file}
	switch {
	case f.pending != nil:
		info.Location, info.ModTime = f.pending.tmp, f.entry.Time
	case f.pack != "":
		info.Location = f.pack
	}
	return info
}

// Delete removes the record of one entry: its per-entry files, its record
// in the pending pack and, when a pack holds it, it is marked deleted in a
// new pack (packs are never edited), durable when Delete returns.
func (d *Store) Delete(ctx context.Context, ref bs.SessionRef, entryID string) error {
	if err := bs.CheckSideKey(entryID); err != nil {
		return err
	}
	dir, err := d.dir(ref)
	if err != nil {
		return err
	}
	m := d.medium()
	release, err := d.gate(ctx)
	if err != nil {
		return fmt.Errorf("delete side record of entry %s: %w", entryID, err)
	}
	for _, n := range []string{entryID + ".json", entryID + ".json.zst"} {
		if err := m.Remove(ctx, dir, n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			release()
			return fmt.Errorf("delete side file: %w", err)
		}
	}
	release()
	d.mu.Lock()
	if w := d.pending[dir]; w != nil {
		w.mu.Lock()
		delete(w.ix.Entries, entryID)
		delete(w.unwritten, entryID)
		w.seq++
		w.newest[entryID] = w.seq // a frame in flight does not index it
		w.mu.Unlock()
	}
	d.mu.Unlock()
	packs, err := d.packs(ctx, dir)
	if err != nil {
		return err
	}
	if best, ok, _ := d.resolve(ctx, dir, entryID, packs, nil, nil); !ok || best.pack == "" {
		return nil
	}
	f, _, err := m.Create(ctx, dir)
	if err != nil {
		return err
	}
	ix := &packIndex{Format: PackFormat, Entries: map[string]packEntry{}, Deleted: map[string]time.Time{entryID: time.Now().UTC()}}
	if _, _, err := d.finish(ctx, dir, f, 0, ix, time.Now()); err != nil {
		return fmt.Errorf("delete side record of entry %s: %w", entryID, err)
	}
	return m.Sync(ctx, dir, false)
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
	if !ok || bs.CheckSideKey(id) != nil {
		return "", false
	}
	return id, true
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Fixed is a Locator that places the side files of every session in
// one directory: for tools and tests that work on one session's side dir.
type Fixed string

// SideDir returns the directory.
func (d Fixed) SideDir(bs.SessionRef) (string, error) { return string(d), nil }
