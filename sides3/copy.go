package sides3

import (
	"context"

	"github.com/minio/minio-go/v7"

	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

var _ sidedir.Copier = (*medium)(nil)

// Copy copies the object name of fromLoc's prefix to toLoc's prefix by a
// server-side copy (one CopyObject request: the bytes never leave the
// server; an object of up to 5 GiB, which a pack always is). The copy is
// durable when the request returns; one already there is replaced. A
// missing object is an error wrapping fs.ErrNotExist, other errors are
// classified as every request's.
func (m *medium) Copy(ctx context.Context, fromLoc, name, toLoc string) error {
	src, err := m.prefixOf(fromLoc)
	if err != nil {
		return err
	}
	dst, err := m.prefixOf(toLoc)
	if err != nil {
		return err
	}
	size, _ := m.known(fromLoc, name)
	rctx, cancel := m.ctxFor(ctx, max(size, 0))
	defer cancel()
	_, err = m.c.CopyObject(rctx,
		minio.CopyDestOptions{Bucket: m.loc.Bucket, Object: dst + name},
		minio.CopySrcOptions{Bucket: m.loc.Bucket, Object: src + name})
	if err != nil {
		return m.classify(rctx, "copy", src+name, err)
	}
	// The next Stat of toLoc lists it afresh (or asks the server).
	m.mu.Lock()
	delete(m.lists, toLoc)
	m.mu.Unlock()
	return nil
}
