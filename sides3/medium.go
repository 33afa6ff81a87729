package sides3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// Root is a local directory whose side directories the store keeps under
// one name in the bucket: a side directory <Dir>/<rel> has the keys
// <prefix>/<host>/<Name>/<rel>/<unit>.
type Root struct {
	// Name is the key part, such as "agents", "pi" or "state".
	Name string
	// Dir is the local directory.
	Dir string
}

// tailWindow is how much of a pack's end the first read near its end
// fetches at once: the trailer and, for up to some 800 entries, the
// whole index, in one request.
const tailWindow = 128 << 10

// maxLists bounds the listings kept for Stat; past it they are dropped.
const maxLists = 4096

// medium is the sidedir.Medium of an object store: a location is a key
// prefix, a unit an object under it, published by one PUT of the whole
// pack from a local spool file (an object is there whole or not at all,
// and durable once the PUT returns).
type medium struct {
	c          *minio.Client
	loc        config.S3Location
	credSource string
	roots      []Root
	spool      string

	mu        sync.Mutex
	lists     map[string]map[string]int64 // a location's units and sizes, as last listed or written
	committed map[string]int64            // the size of each unit this medium wrote, by key
}

var _ sidedir.Medium = (*medium)(nil)

// prefixOf returns the key prefix of a side directory, ending in '/'.
func (m *medium) prefixOf(loc string) (string, error) {
	clean := filepath.Clean(loc)
	for _, r := range m.roots {
		rel, err := filepath.Rel(r.Dir, clean)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		return m.loc.Base() + r.Name + "/" + filepath.ToSlash(rel) + "/", nil
	}
	names := make([]string, len(m.roots))
	for i, r := range m.roots {
		names[i] = r.Dir
	}
	return "", fmt.Errorf("side store %s: the side dir %s is under none of %s: %w", m.loc.Where(), loc, strings.Join(names, ", "), bs.ErrInvalid)
}

// ctxFor bounds one request: timeout, plus a second for each megabyte a
// PUT sends.
func (m *medium) ctxFor(ctx context.Context, size int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, m.loc.Timeout+time.Duration(size>>20)*time.Second)
}

// Stamp returns the zero time: a prefix has no modification time, so
// every read lists it afresh (one LIST request).
func (m *medium) Stamp(ctx context.Context, loc string) (time.Time, error) {
	_, err := m.prefixOf(loc)
	return time.Time{}, err
}

// List lists the objects directly under loc's prefix (one request per
// 1,000) and keeps their sizes for Stat.
func (m *medium) List(ctx context.Context, loc string) ([]fs.DirEntry, error) {
	p, err := m.prefixOf(loc)
	if err != nil {
		return nil, err
	}
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	units := map[string]int64{}
	for o := range m.c.ListObjects(rctx, m.loc.Bucket, minio.ListObjectsOptions{Prefix: p}) {
		if o.Err != nil {
			return nil, m.classify(rctx, "list", p, o.Err)
		}
		name := strings.TrimPrefix(o.Key, p)
		if name == "" || strings.Contains(name, "/") {
			continue // a deeper prefix: not a unit of loc
		}
		units[name] = o.Size
	}
	m.keep(loc, units)
	out := make([]fs.DirEntry, 0, len(units))
	for n, size := range units {
		out = append(out, unitInfo{name: n, size: size})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// keep records the listing of loc.
func (m *medium) keep(loc string, units map[string]int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lists == nil || len(m.lists) >= maxLists {
		m.lists = map[string]map[string]int64{}
	}
	m.lists[loc] = units
}

// wrote records a unit this medium just wrote.
func (m *medium) wrote(loc, key, name string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if units, ok := m.lists[loc]; ok {
		units[name] = size
	}
	if m.committed == nil || len(m.committed) >= maxLists {
		m.committed = map[string]int64{}
	}
	m.committed[key] = size
}

// known returns the size of a unit of loc from the last listing: ok is
// false when loc was not listed; size < 0 when the listing lacks name.
func (m *medium) known(loc, name string) (size int64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	units, ok := m.lists[loc]
	if !ok {
		return 0, false
	}
	if s, in := units[name]; in {
		return s, true
	}
	return -1, true
}

// Stat answers from the last listing of loc, without a request; a
// location not listed yet costs one HEAD request. Objects are never
// published twice under a name with other bytes, so the modification
// time of every unit is the zero time and the index cache keys on the
// size.
func (m *medium) Stat(ctx context.Context, loc, name string) (fs.FileInfo, error) {
	p, err := m.prefixOf(loc)
	if err != nil {
		return nil, err
	}
	if size, ok := m.known(loc, name); ok {
		if size < 0 {
			return nil, fmt.Errorf("stat %s: %w", m.describeKey(p+name), fs.ErrNotExist)
		}
		return unitInfo{name: name, size: size}, nil
	}
	m.mu.Lock()
	size, ok := m.committed[p+name]
	m.mu.Unlock()
	if ok {
		return unitInfo{name: name, size: size}, nil
	}
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	oi, err := m.c.StatObject(rctx, m.loc.Bucket, p+name, minio.StatObjectOptions{})
	if err != nil {
		return nil, m.classify(rctx, "stat", p+name, err)
	}
	return unitInfo{name: name, size: oi.Size}, nil
}

// Open returns the object for ranged reads, which run under ctx until
// Close: its first read near the end fetches the last 128 KiB at once;
// every other read is one ranged GET of exactly the bytes asked for.
func (m *medium) Open(ctx context.Context, loc, name string) (sidedir.Blob, error) {
	fi, err := m.Stat(ctx, loc, name)
	if err != nil {
		return nil, err
	}
	p, _ := m.prefixOf(loc)
	return &blob{m: m, ctx: ctx, key: p + name, info: fi.(unitInfo)}, nil
}

// Create creates a spool file for a new pack (loc is never created: a
// prefix exists while it holds an object). Spool files older than a
// minute are left by a crash and removed.
func (m *medium) Create(_ context.Context, loc string) (*os.File, bool, error) {
	if _, err := m.prefixOf(loc); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(m.spool, 0o700); err != nil {
		return nil, false, fmt.Errorf("side store spool: %w", err)
	}
	f, err := os.CreateTemp(m.spool, ".pack-*.tmp")
	if err != nil {
		return nil, false, fmt.Errorf("side store spool: %w", err)
	}
	return f, false, nil
}

// Commit sends the pack in tmp as one PUT (no multipart upload: the
// object appears whole or not at all; Content-MD5 makes the server check
// the bytes), then closes and removes tmp.
func (m *medium) Commit(ctx context.Context, loc string, tmp *os.File, name string) error {
	p, err := m.prefixOf(loc)
	if err != nil {
		tmp.Close()
		return err
	}
	key := p + name
	fi, err := tmp.Stat()
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("side store spool %s: %w", tmp.Name(), err)
	}
	rctx, cancel := m.ctxFor(ctx, fi.Size())
	defer cancel()
	_, err = m.c.PutObject(rctx, m.loc.Bucket, key, tmp, fi.Size(), minio.PutObjectOptions{
		DisableMultipart: true,
		SendContentMd5:   true,
		ContentType:      "application/zstd",
	})
	tmp.Close()
	if err != nil {
		return m.classify(rctx, "put", key, err)
	}
	os.Remove(tmp.Name())
	m.wrote(loc, key, name, fi.Size())
	return nil
}

// Remove deletes one object (one request; a missing one is no error).
func (m *medium) Remove(ctx context.Context, loc, name string) error {
	p, err := m.prefixOf(loc)
	if err != nil {
		return err
	}
	if !isUnitName(name) {
		return nil // the per-entry files of the local store never exist here
	}
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	if err := m.c.RemoveObject(rctx, m.loc.Bucket, p+name, minio.RemoveObjectOptions{}); err != nil {
		return m.classify(rctx, "delete", p+name, err)
	}
	m.mu.Lock()
	if units, ok := m.lists[loc]; ok {
		delete(units, name)
	}
	delete(m.committed, p+name)
	m.mu.Unlock()
	return nil
}

// isUnitName reports whether name may be a unit this store writes: a
// pack. The per-entry files of the local store are never written here.
func isUnitName(name string) bool {
	return strings.HasPrefix(name, "pack-") && !strings.HasSuffix(name, ".json") && !strings.HasSuffix(name, ".json.zst")
}

// Sync does nothing: an object is durable when its PUT returns.
func (m *medium) Sync(context.Context, string, bool) error { return nil }

// RemoveLoc removes nothing: a prefix is gone with its last object.
func (m *medium) RemoveLoc(_ context.Context, loc string) (bool, error) {
	m.mu.Lock()
	delete(m.lists, loc)
	m.mu.Unlock()
	return false, nil
}

// Describe returns the unit's s3:// URL.
func (m *medium) Describe(loc, name string) string {
	p, err := m.prefixOf(loc)
	if err != nil {
		return filepath.Join(loc, name)
	}
	return m.describeKey(path.Join(p, name))
}

// unitInfo describes an object: a regular file of its size, modified at
// the zero time.
type unitInfo struct {
	name string
	size int64
}

func (u unitInfo) Name() string               { return u.name }
func (u unitInfo) Size() int64                { return u.size }
func (u unitInfo) Mode() fs.FileMode          { return 0o600 }
func (u unitInfo) ModTime() time.Time         { return time.Time{} }
func (u unitInfo) IsDir() bool                { return false }
func (u unitInfo) Sys() any                   { return nil }
func (u unitInfo) Type() fs.FileMode          { return 0 }
func (u unitInfo) Info() (fs.FileInfo, error) { return u, nil }

// blob is an open object: ranged reads under the ctx of its Open.
type blob struct {
	m    *medium
	ctx  context.Context
	key  string
	info unitInfo

	mu      sync.Mutex
	tail    []byte // the object's last bytes, once fetched
	tailOff int64
}

// Stat describes the object as it was listed.
func (b *blob) Stat() (fs.FileInfo, error) { return b.info, nil }

// Close releases nothing: every read was a request of its own.
func (b *blob) Close() error { return nil }

// ReadAt reads len(p) bytes at off: from the fetched tail when they are
// in it, else by one ranged GET (a read within the last 128 KiB fetches
// that whole tail first).
func (b *blob) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s at %d: negative offset", b.key, off)
	}
	if off >= b.info.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), b.info.size)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tail == nil && off >= b.info.size-tailWindow {
		n := min(b.info.size, tailWindow)
		data, err := b.get(b.info.size-n, n)
		if err != nil {
			return 0, err
		}
		b.tail, b.tailOff = data, b.info.size-int64(len(data))
	}
	if b.tail != nil && off >= b.tailOff && end <= b.tailOff+int64(len(b.tail)) {
		n := copy(p, b.tail[off-b.tailOff:end-b.tailOff])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	data, err := b.get(off, end-off)
	n := copy(p, data)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

// get fetches n bytes at off with one request.
func (b *blob) get(off, n int64) ([]byte, error) {
	rctx, cancel := b.m.ctxFor(b.ctx, n)
	defer cancel()
	var opts minio.GetObjectOptions
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, err
	}
	core := minio.Core{Client: b.m.c}
	r, _, _, err := core.GetObject(rctx, b.m.loc.Bucket, b.key, opts)
	if err != nil {
		return nil, b.m.classify(rctx, "get", b.key, err)
	}
	defer r.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(r, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return buf[:k], b.m.classify(rctx, "get", b.key, err)
	}
	return buf[:k], nil
}
