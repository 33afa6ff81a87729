package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Stat returns the session's fences (rewrite generation, last row, row
// count and transcript update time) as its version, and the transcript
// update time as its modification time, in one short read transaction
// that reads no transcript row. The version's size is 0: compare it only
// with another Stat's. A session without rows gives an error wrapping
// ErrNotFound.
func (s *Store) Stat(ctx context.Context, ref bs.SessionRef) (bs.SessionStat, error) {
	if ref.Backend != "" && ref.Backend != bs.BackendSQLite {
		return bs.SessionStat{}, fmt.Errorf("stat session %s: a %s session, not one of the OpenClaw SQLite store: %w", ref, ref.Backend, bs.ErrUnsupported)
	}
	path, err := s.storeOf(ref)
	if err != nil {
		return bs.SessionStat{}, err
	}
	var f fences
	err = s.readTx(ctx, path, func(tx *sql.Tx) error {
		var err error
		f, err = readFences(ctx, tx, path, ref.ID)
		if err == nil && f.rows == 0 {
			err = missing(ctx, tx, path, ref)
		}
		return err
	})
	if err != nil {
		return bs.SessionStat{}, fmt.Errorf("stat session %s: %w", ref, err)
	}
	st := bs.SessionStat{Version: f.version(0)}
	if f.updatedAt.Valid {
		st.ModTime = time.UnixMilli(f.updatedAt.Int64)
	}
	return st, nil
}
