package sides3

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// Options are what Open needs beside the setting.
type Options struct {
	// Roots are the local directories under which every side directory
	// the Locator gives lies; each has its own name in the keys.
	Roots []Root
	// Spool is a local directory for packs being written, before their
	// PUT (created 0700 when missing).
	Spool string
	// Transport, when not nil, carries every request.
	Transport http.RoundTripper
}

// Store is a side store in an S3-compatible object store: the pack store
// of package sidedir (the same pack format, checksums, newest-record rule
// and retention) with its packs kept as objects. A pass writes one object
// per session; a read lists the session's prefix and fetches the bytes of
// the record's frame; a pack's index is read from its last 128 KiB in one
// request and cached.
//
// A value is readable once Sync returns: the durability order of the
// local store holds unchanged. Errors of an unreachable or failing server
// wrap brainsurgeon.ErrUnavailable, never ErrNotFound.
type Store struct {
	*sidedir.Store
	m *medium
}

// Open returns the object store side store of setting (see
// config.ParseS3) for
// the side directories dirs locates, with the credentials Credentials
// finds. It sends no request: Check probes the store.
func Open(setting string, dirs sidedir.Locator, opts Options) (*Store, error) {
	loc, err := config.ParseS3(setting)
	if err != nil {
		return nil, err
	}
	return OpenLocation(loc, dirs, opts)
}

// OpenLocation is Open for a parsed setting.
func OpenLocation(loc config.S3Location, dirs sidedir.Locator, opts Options) (*Store, error) {
	if len(opts.Roots) == 0 {
		return nil, fmt.Errorf("side store %s: no root directories given: %w", loc.Where(), bs.ErrInvalid)
	}
	for _, r := range opts.Roots {
		if r.Name == "" || strings.ContainsAny(r.Name, "/\\") || !filepath.IsAbs(r.Dir) {
			return nil, fmt.Errorf("side store %s: root %q at %q: expected a name without '/' and an absolute directory: %w", loc.Where(), r.Name, r.Dir, bs.ErrInvalid)
		}
	}
	if opts.Spool == "" || !filepath.IsAbs(opts.Spool) {
		return nil, fmt.Errorf("side store %s: spool directory %q: expected an absolute path: %w", loc.Where(), opts.Spool, bs.ErrInvalid)
	}
	creds, source, err := Credentials(loc)
	if err != nil {
		return nil, err
	}
	c, err := newClient(loc, creds, opts.Transport)
	if err != nil {
		return nil, err
	}
	m := &medium{c: c, loc: loc, credSource: source, roots: opts.Roots, spool: opts.Spool}
	cleanSpool(opts.Spool)
	return &Store{Store: sidedir.NewWithMedium(dirs, m), m: m}, nil
}

// Location returns the store's parsed setting.
func (s *Store) Location() config.S3Location { return s.m.loc }

// String returns where the values are and which server holds them:
// s3://bucket/prefix/host (endpoint, region). It holds no credential.
func (s *Store) String() string {
	return fmt.Sprintf("%s (%s, %s)", s.m.loc.Where(), s.m.loc.Endpoint, s.m.loc.Region)
}

// Check probes the store as a pass would use it: the bucket exists, this
// host's prefix can be listed, and a small object can be written, read
// back and deleted. Its error says which step failed and why: a missing
// bucket, refused credentials or a denied step wrap brainsurgeon.ErrInvalid;
// an unreachable or failing server wraps brainsurgeon.ErrUnavailable.
func (s *Store) Check(ctx context.Context) error {
	m := s.m
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	// A LIST first: its answer has a body whose code tells a missing
	// bucket, refused credentials and a denial apart (a HEAD's has none).
	for o := range m.c.ListObjects(rctx, m.loc.Bucket, minio.ListObjectsOptions{Prefix: m.loc.Base(), MaxKeys: 1}) {
		if o.Err != nil {
			return m.classify(rctx, "list", m.loc.Base(), o.Err)
		}
		break
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	key := m.loc.Base() + ".probe-" + hex.EncodeToString(b[:])
	body := []byte("brainsurgeon side store probe\n")
	if _, err := m.c.PutObject(rctx, m.loc.Bucket, key, bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{DisableMultipart: true, SendContentMd5: true}); err != nil {
		return m.classify(rctx, "put", key, err)
	}
	defer m.c.RemoveObject(context.WithoutCancel(ctx), m.loc.Bucket, key, minio.RemoveObjectOptions{})
	o, err := m.c.GetObject(rctx, m.loc.Bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return m.classify(rctx, "get", key, err)
	}
	got, err := io.ReadAll(o)
	o.Close()
	if err != nil {
		return m.classify(rctx, "get", key, err)
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("side store %s: the probe object %s read back %d bytes, expected the %d written: %w", m.loc.Where(), m.describeKey(key), len(got), len(body), bs.ErrCorrupt)
	}
	if err := m.c.RemoveObject(rctx, m.loc.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
		return m.classify(rctx, "delete", key, err)
	}
	return nil
}

// cleanSpool removes the spool files of packs older than a minute: a
// process that crashed before its PUT left them.
func cleanSpool(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	old := time.Now().Add(-time.Minute)
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".pack-") || !strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(old) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// SideNames returns the names of the side locations directly under
// parent (a transcript dir's "extracted" dir): the key prefixes below
// its own, in one LIST request per 1,000. An unreachable server is an
// error wrapping brainsurgeon.ErrUnavailable, never an empty answer.
func (s *Store) SideNames(ctx context.Context, parent string) ([]string, error) {
	m := s.m
	p, err := m.prefixOf(parent)
	if err != nil {
		return nil, err
	}
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	var out []string
	for o := range m.c.ListObjects(rctx, m.loc.Bucket, minio.ListObjectsOptions{Prefix: p}) {
		if o.Err != nil {
			return nil, m.classify(rctx, "list", p, o.Err)
		}
		if name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, p), "/"); ok && name != "" && !strings.Contains(name, "/") {
			out = append(out, name)
		}
	}
	return out, nil
}

// Empty reports whether this host's prefix holds no value (a probe object
// left by a crash does not count). A missing bucket holds none.
func (s *Store) Empty(ctx context.Context) (bool, error) {
	m := s.m
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	for o := range m.c.ListObjects(rctx, m.loc.Bucket, minio.ListObjectsOptions{Prefix: m.loc.Base(), Recursive: true}) {
		if o.Err != nil {
			if minio.ToErrorResponse(o.Err).Code == "NoSuchBucket" {
				return true, nil
			}
			return false, m.classify(rctx, "list", m.loc.Base(), o.Err)
		}
		if !strings.HasPrefix(o.Key, m.loc.Base()+".probe-") {
			return false, nil
		}
	}
	return true, nil
}

// Locations returns every side location of this host that holds a unit,
// as the local paths that name them (the roots' directories joined with
// the keys' relative paths), sorted: one recursive LIST of the host's
// prefix, a request per 1,000 objects.
func (s *Store) Locations(ctx context.Context) ([]string, error) {
	m := s.m
	rctx, cancel := m.ctxFor(ctx, 0)
	defer cancel()
	seen := map[string]bool{}
	var out []string
	base := m.loc.Base()
	for o := range m.c.ListObjects(rctx, m.loc.Bucket, minio.ListObjectsOptions{Prefix: base, Recursive: true}) {
		if o.Err != nil {
			return nil, m.classify(rctx, "list", base, o.Err)
		}
		rel := strings.TrimPrefix(o.Key, base)
		root, rest, ok := strings.Cut(rel, "/")
		i := strings.LastIndex(rest, "/")
		if !ok || i <= 0 {
			continue // a probe object, or a key of no location
		}
		for _, r := range m.roots {
			if r.Name != root {
				continue
			}
			loc := filepath.Join(r.Dir, filepath.FromSlash(rest[:i]))
			if within, err := filepath.Rel(r.Dir, loc); err != nil || within == "." || strings.HasPrefix(within, "..") || filepath.ToSlash(within) != rest[:i] {
				continue // not a key this store writes ("..", "//"): never a place on disk
			}
			if !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
