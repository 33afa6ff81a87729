package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

var _ bs.AppendReader = (*Store)(nil)

// ReadAppended returns the rows appended to the session after base (see
// brainsurgeon.AppendReader), in one short read transaction that reads the
// fences and only the rows after base's last seq, whatever the session's
// length. Row i is line i as in Open, with Offset the row's seq; the
// entries are fully parsed and the caller's.
//
// The store must hold base's rows and the new ones only: the same rewrite
// generation, and base's last row still there. Unlike Open and the writes,
// ReadAppended does not count the session's rows, which costs a walk over
// all of them (about 10 ms at 64k rows): the version returned is the
// fences read in that transaction with base's row count plus the rows
// read, and base's size plus their bytes, which is what Open would record
// as long as no row at or below base's last seq was deleted without a new
// generation. OpenClaw never does that: it deletes rows only in a suffix
// or full replacement, which rotates the generation, or all of a session's
// rows at once (cold storage). Should another writer do it, Open and every
// write still see it: their fences count the rows, so a write at the
// version returned fails with ErrChanged.
//
// Errors wrap ErrChanged when the session was rewritten or lost base's
// last row since base, ErrInvalid when base is not a version of this
// session that Open or ReadAppended returned (or lines is not its row
// count), and what Open returns for a session that cannot be read.
func (s *Store) ReadAppended(ctx context.Context, ref bs.SessionRef, base bs.Version, lines int) ([]*bs.Entry, bs.Version, error) {
	path, err := s.storeOf(ref)
	if err != nil {
		return nil, bs.Version{}, err
	}
	was, err := parseFences(base)
	if err != nil {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to session %s: %w", ref, err)
	}
	switch {
	case was.session != ref.ID:
		return nil, bs.Version{}, fmt.Errorf("read what was appended to session %s: base is a version of session %q: %w", ref, was.session, bs.ErrInvalid)
	case was.rows == 0 || !was.maxSeq.Valid || base.Size() == 0:
		return nil, bs.Version{}, fmt.Errorf("read what was appended to session %s: base %s has no rows or no size (Stat's versions have none: pass one Open or ReadAppended returned): %w", ref, base, bs.ErrInvalid)
	case int64(lines) != was.rows:
		return nil, bs.Version{}, fmt.Errorf("read what was appended to session %s: base has %d rows, the caller counts %d lines: %w", ref, was.rows, lines, bs.ErrInvalid)
	}
	var out []*bs.Entry
	var now bs.Version
	err = s.readTx(ctx, path, func(tx *sql.Tx) error {
		out, now = nil, bs.Version{}
		f, lastThere, err := readAppendFences(ctx, tx, path, ref.ID, was.maxSeq.Int64)
		if err != nil {
			return err
		}
		f.rows = was.rows
		changed := func(why string) error {
			return fmt.Errorf("session %s in %s: %s since base (was %s, now %s, rows not counted): %w", ref, path, why, was.token(), f.token(), bs.ErrChanged)
		}
		switch {
		case !f.maxSeq.Valid:
			return fmt.Errorf("%w: %w", missing(ctx, tx, path, ref), bs.ErrChanged)
		case f.generation != was.generation:
			return changed("rewritten")
		case !lastThere:
			return changed(fmt.Sprintf("base's last row (seq %d) was deleted", was.maxSeq.Int64))
		case f.maxSeq == was.maxSeq:
			now = f.version(base.Size())
			return nil
		}
		rows, err := tx.QueryContext(ctx, rowsQuery, ref.ID, was.maxSeq.Int64)
		if err != nil {
			return storeError(path, "read rows of session "+ref.ID, err)
		}
		defer rows.Close()
		rr := rowReader{path: path, session: ref.ID}
		size := base.Size()
		last := was.maxSeq.Int64
		for rows.Next() {
			seq, raw, err := rr.next(rows)
			if err != nil {
				return err
			}
			last = seq
			size += int64(len(raw))
			out = append(out, entry.Parse(bytes.Clone(raw), lines+len(out)+1, seq))
		}
		if err := rows.Err(); err != nil {
			return storeError(path, "read rows of session "+ref.ID, err)
		}
		if last != f.maxSeq.Int64 {
			// One transaction reads both: only a broken store gets here.
			return fmt.Errorf("store %s: session %s: the rows after seq %d end at seq %d, the last seq is %d: %w", path, ref.ID, was.maxSeq.Int64, last, f.maxSeq.Int64, bs.ErrChanged)
		}
		f.rows += int64(len(out))
		now = f.version(size)
		return nil
	})
	if err != nil {
		return nil, bs.Version{}, fmt.Errorf("read what was appended: %w", err)
	}
	if now == base {
		return nil, base, nil
	}
	return out, now, nil
}

// appendFencesQuery reads the fences but the row count, and whether the
// row of seq ?2 is there: index lookups only, whatever the session's
// length.
const appendFencesQuery = `
SELECT (SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = ?1),
       (SELECT max(seq) FROM transcript_events WHERE session_id = ?1),
       EXISTS (SELECT 1 FROM transcript_events WHERE session_id = ?1 AND seq = ?2),
       (SELECT transcript_updated_at FROM session_windows WHERE session_id = ?1)`

// readAppendFences reads a session's fences without the row count (left
// zero), and whether its row of seq last is still there, in the current
// transaction.
func readAppendFences(ctx context.Context, q querier, path, id string, last int64) (fences, bool, error) {
	f := fences{session: id}
	var there bool
	err := q.QueryRowContext(ctx, appendFencesQuery, id, last).Scan(&f.generation, &f.maxSeq, &there, &f.updatedAt)
	if err != nil {
		return f, false, storeError(path, "read fences of session "+id, err)
	}
	return f, there, nil
}

// parseFences reads the fences back from a version that fences.version
// made; any other version is an error wrapping ErrInvalid.
func parseFences(v bs.Version) (fences, error) {
	var f fences
	bad := fmt.Errorf("version %s is not a version of the OpenClaw SQLite store (expected one that Open or ReadAppended returned): %w", v, bs.ErrInvalid)
	if v.IsZero() {
		return f, fmt.Errorf("the session's version is unknown (it was not read from a store): %w", bs.ErrInvalid)
	}
	rest := v.Token()
	field := func(name string) bool {
		var ok bool
		rest, ok = strings.CutPrefix(rest, name+"=")
		return ok
	}
	quoted := func() (sql.NullString, bool) {
		if r, ok := strings.CutPrefix(rest, "null"); ok {
			rest = r
			return sql.NullString{}, true
		}
		q, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return sql.NullString{}, false
		}
		rest = rest[len(q):]
		s, err := strconv.Unquote(q)
		return sql.NullString{String: s, Valid: err == nil}, err == nil
	}
	number := func() (sql.NullInt64, bool) {
		end := strings.IndexByte(rest, ';')
		if end < 0 {
			end = len(rest)
		}
		tok := rest[:end]
		rest = rest[end:]
		if tok == "null" {
			return sql.NullInt64{}, true
		}
		n, err := strconv.ParseInt(tok, 10, 64)
		return sql.NullInt64{Int64: n, Valid: err == nil}, err == nil
	}
	sess, ok := sql.NullString{}, field("session")
	if ok {
		sess, ok = quoted()
	}
	ok = ok && sess.Valid && field(";generation")
	if ok {
		f.generation, ok = quoted()
	}
	ok = ok && field(";maxseq")
	if ok {
		f.maxSeq, ok = number()
	}
	var rows sql.NullInt64
	ok = ok && field(";rows")
	if ok {
		rows, ok = number()
	}
	ok = ok && rows.Valid && field(";transcript_updated_at")
	if ok {
		f.updatedAt, ok = number()
	}
	f.session, f.rows = sess.String, rows.Int64
	if !ok || rest != "" || f.version(v.Size()) != v {
		return fences{}, bad
	}
	return f, nil
}
