package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strconv"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// fences are what OpenClaw itself checks before trusting an earlier read
// of a transcript: the rewrite generation (rotated by every rewrite), the
// last row's seq and the row count (moved by every append or deletion),
// and session_windows.transcript_updated_at (advanced by every mutation).
type fences struct {
	session    string
	generation sql.NullString
	maxSeq     sql.NullInt64
	rows       int64
	updatedAt  sql.NullInt64
}

// token encodes the fences for a bs.Version.
func (f fences) token() string {
	n := func(v sql.NullInt64) string {
		if !v.Valid {
			return "null"
		}
		return strconv.FormatInt(v.Int64, 10)
	}
	g := "null"
	if f.generation.Valid {
		g = strconv.Quote(f.generation.String)
	}
	return "session=" + strconv.Quote(f.session) + ";generation=" + g + ";maxseq=" + n(f.maxSeq) +
		";rows=" + strconv.FormatInt(f.rows, 10) + ";transcript_updated_at=" + n(f.updatedAt)
}

// version returns the fences as a bs.Version of a transcript of size bytes.
func (f fences) version(size int64) bs.Version {
	return bs.NewVersion(bs.BackendSQLite, f.token(), size)
}

// matches reports whether v was made from fences equal to f.
func (f fences) matches(v bs.Version) bool {
	return v.String() == bs.BackendSQLite+":"+f.token()
}

const fencesQuery = `
SELECT (SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = ?1),
       (SELECT max(seq) FROM transcript_events WHERE session_id = ?1),
       (SELECT count(*) FROM transcript_events WHERE session_id = ?1),
       (SELECT transcript_updated_at FROM session_windows WHERE session_id = ?1)`

// readFences reads a session's fences in the current transaction.
func readFences(ctx context.Context, q querier, path, id string) (fences, error) {
	f := fences{session: id}
	err := q.QueryRowContext(ctx, fencesQuery, id).Scan(&f.generation, &f.maxSeq, &f.rows, &f.updatedAt)
	if err != nil {
		return f, storeError(path, "read fences of session "+id, err)
	}
	return f, nil
}

// missing explains why a session has no transcript rows.
func missing(ctx context.Context, q querier, path string, ref bs.SessionRef) error {
	var win, cold int64
	_ = q.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM session_windows WHERE session_id = ?1),
	  (SELECT count(*) FROM session_transcript_cold_archives WHERE session_id = ?1)`, ref.ID).Scan(&win, &cold)
	switch {
	case cold > 0:
		return fmt.Errorf("session %s in %s is in cold storage (its rows were moved to an archive file; OpenClaw restores it when the session is opened): %w", ref, path, bs.ErrNotFound)
	case win > 0:
		return fmt.Errorf("session %s in %s has no transcript rows: %w", ref, path, bs.ErrNotFound)
	}
	return fmt.Errorf("session %s: no session id %q in %s: %w", ref, ref.ID, path, bs.ErrNotFound)
}

const rowsQuery = `SELECT seq, event_json, event_zstd, event_utf8_bytes, event_json IS NULL
  FROM transcript_events WHERE session_id = ? AND seq > ? ORDER BY seq`

// rowReader scans transcript rows and decodes them into a reused buffer.
type rowReader struct {
	path, session string
	buf           []byte
	json, zstd    sql.RawBytes
}

// next scans one row; the returned bytes are valid until the next call.
func (r *rowReader) next(rows *sql.Rows) (seq int64, raw []byte, err error) {
	var n sql.NullInt64
	var jsonNull bool
	if err := rows.Scan(&seq, &r.json, &r.zstd, &n, &jsonNull); err != nil {
		return 0, nil, storeError(r.path, "read rows of session "+r.session, err)
	}
	raw, err = decodeRow(r.buf[:0], r.json, r.zstd, jsonNull, n)
	if err != nil {
		return 0, nil, fmt.Errorf("store %s: session %s row seq %d: %w", r.path, r.session, seq, err)
	}
	r.buf = raw
	return seq, raw, nil
}

// Transcript is a session read from a SQLite store and indexed. It holds
// the index of every row (the tree rules are session.Index's, shared with
// the JSONL backend), not the rows' bytes: Entries and Entry read them
// again and fail with ErrChanged when the store's fences moved. Line i of
// the transcript is the i-th row in seq order (1-based); Node.Offset holds
// the row's seq.
//
// A Transcript is immutable after Open and safe for concurrent use.
type Transcript struct {
	*session.Index
	store   *Store
	path    string
	ref     bs.SessionRef
	version bs.Version
	fences  fences
	size    int64
}

var _ bs.Transcript = (*Transcript)(nil)

// Ref returns the session the transcript belongs to.
func (t *Transcript) Ref() bs.SessionRef { return t.ref }

// Version returns the fences of the state that was read.
func (t *Transcript) Version() bs.Version { return t.version }

// Size returns the total size of the decoded rows in bytes.
func (t *Transcript) Size() int64 { return t.size }

// Open reads the session's rows in seq order, in one short read
// transaction on a connection that creates no file and changes no byte of
// the store (see the package documentation), and indexes them. Row i is
// line i+1; compressed rows are decoded. When v is not nil its Visit sees
// every row during that read, fully parsed when v.Want accepts it (or is
// nil) and with the envelope only otherwise.
//
// Errors wrap ErrNotFound for a session without rows (or in cold
// storage), ErrUnsupported for a store of another schema version,
// ErrInvalid for a corrupt store or a bad ref, and ErrChanged when the
// host opened and wrote the store during a read that a Visitor saw.
func (s *Store) Open(ctx context.Context, ref bs.SessionRef, v *bs.Visitor) (bs.Transcript, error) {
	t, err := s.OpenTranscript(ctx, ref, v)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// OpenTranscript is Open returning the concrete type.
func (s *Store) OpenTranscript(ctx context.Context, ref bs.SessionRef, v *bs.Visitor) (*Transcript, error) {
	path, err := s.storeOf(ref)
	if err != nil {
		return nil, err
	}
	ref.Backend, ref.Path = bs.BackendSQLite, path
	name := path + "#" + ref.ID
	var t *Transcript
	read := func(tx *sql.Tx) error {
		f, err := readFences(ctx, tx, path, ref.ID)
		if err != nil {
			return err
		}
		if f.rows == 0 {
			return missing(ctx, tx, path, ref)
		}
		rows, err := tx.QueryContext(ctx, rowsQuery, ref.ID, -1<<62)
		if err != nil {
			return storeError(path, "read rows of session "+ref.ID, err)
		}
		defer rows.Close()
		ix := session.NewIndexer(name)
		rr := rowReader{path: path, session: ref.ID}
		var size int64
		line := 0
		for rows.Next() {
			line++
			if line%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			seq, raw, err := rr.next(rows)
			if err != nil {
				return err
			}
			size += int64(len(raw))
			var e *bs.Entry
			if v != nil && v.Visit != nil && (v.Want == nil || v.Want(raw)) {
				e = entry.Parse(raw, line, seq)
			} else {
				e = entry.ParseLite(raw, line, seq)
			}
			ix.Add(e, true)
			if v != nil && v.Visit != nil {
				if err := v.Visit(e); err != nil {
					return err
				}
			}
		}
		if err := rows.Err(); err != nil {
			return storeError(path, "read rows of session "+ref.ID, err)
		}
		if int64(line) != f.rows {
			return fmt.Errorf("store %s: session %s: read %d rows, expected %d: %w", path, ref.ID, line, f.rows, bs.ErrChanged)
		}
		t = &Transcript{Index: ix.Index(), store: s, path: path, ref: ref, version: f.version(size), fences: f, size: size}
		return nil
	}
	if v != nil && v.Visit != nil {
		// The visitor must see every line once: no retry.
		err = s.readTxOnce(ctx, path, read)
		if errors.Is(err, errRetry) {
			err = fmt.Errorf("%w: %w", err, bs.ErrChanged)
		}
	} else {
		err = s.readTx(ctx, path, read)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// checkFences compares the store's fences with the version read.
func (t *Transcript) checkFences(ctx context.Context, q querier) error {
	f, err := readFences(ctx, q, t.path, t.ref.ID)
	if err != nil {
		return err
	}
	if f != t.fences {
		return fmt.Errorf("session %s in %s changed since it was read (was %s, now %s): %w", t.ref, t.path, t.fences.token(), f.token(), bs.ErrChanged)
	}
	return nil
}

// entriesChunk bounds how many rows, and how many bytes, Entries reads in
// one read transaction, so that transactions stay short (a long one holds
// back the host's WAL checkpoints) whatever the consumer does.
const (
	entriesChunkRows  = 512
	entriesChunkBytes = 16 << 20
)

// Entries streams every row in order with its parsed view, reading in
// short transactions of a few hundred rows, each of which first checks the
// fences. It yields an error wrapping ErrChanged when the store no longer
// holds the version that was read. The entry is valid until the next
// iteration.
func (t *Transcript) Entries(ctx context.Context) iter.Seq2[*bs.Entry, error] {
	return func(yield func(*bs.Entry, error) bool) {
		nodes := t.Nodes()
		type row struct {
			seq int64
			raw []byte
		}
		var batch []row
		var arena []byte
		line := 0
		for line < len(nodes) {
			batch, arena = batch[:0], arena[:0]
			after := int64(-1 << 62)
			if line > 0 {
				after = nodes[line-1].Offset
			}
			err := t.store.readTx(ctx, t.path, func(tx *sql.Tx) error {
				batch, arena = batch[:0], arena[:0]
				if err := t.checkFences(ctx, tx); err != nil {
					return err
				}
				rows, err := tx.QueryContext(ctx, rowsQuery+" LIMIT ?", t.ref.ID, after, entriesChunkRows)
				if err != nil {
					return storeError(t.path, "read rows of session "+t.ref.ID, err)
				}
				defer rows.Close()
				rr := rowReader{path: t.path, session: t.ref.ID}
				for rows.Next() {
					seq, raw, err := rr.next(rows)
					if err != nil {
						return err
					}
					start := len(arena)
					arena = append(arena, raw...)
					batch = append(batch, row{seq: seq, raw: arena[start:len(arena):len(arena)]})
					if len(arena) >= entriesChunkBytes {
						break
					}
				}
				return storeError(t.path, "read rows of session "+t.ref.ID, rows.Err())
			})
			if err == nil && len(batch) == 0 {
				err = fmt.Errorf("session %s in %s: no row after seq %d, expected %d more: %w", t.ref, t.path, after, len(nodes)-line, bs.ErrChanged)
			}
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range batch {
				if line >= len(nodes) || nodes[line].Offset != r.seq {
					yield(nil, fmt.Errorf("session %s in %s: row seq %d where line %d was seq %d: %w", t.ref, t.path, r.seq, line+1, nodes[min(line, len(nodes)-1)].Offset, bs.ErrChanged))
					return
				}
				line++
				if !yield(entry.Parse(r.raw, line, r.seq), nil) {
					return
				}
			}
		}
	}
}

// Entry reads one line (1-based) again with its parsed view. The entry is
// the caller's to keep. It returns an error wrapping ErrChanged when the
// store no longer holds the version that was read, and one wrapping
// ErrNotFound for a line out of range.
func (t *Transcript) Entry(ctx context.Context, line int) (*bs.Entry, error) {
	nodes := t.Nodes()
	if line < 1 || line > len(nodes) {
		return nil, fmt.Errorf("session %s in %s: line %d of %d: %w", t.ref, t.path, line, len(nodes), bs.ErrNotFound)
	}
	seq := nodes[line-1].Offset
	var raw []byte
	err := t.store.readTx(ctx, t.path, func(tx *sql.Tx) error {
		if err := t.checkFences(ctx, tx); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, rowsQuery+" LIMIT 1", t.ref.ID, seq-1)
		if err != nil {
			return storeError(t.path, "read row", err)
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return storeError(t.path, "read row", err)
			}
			return fmt.Errorf("session %s in %s: row seq %d is gone: %w", t.ref, t.path, seq, bs.ErrChanged)
		}
		rr := rowReader{path: t.path, session: t.ref.ID}
		got, b, err := rr.next(rows)
		if err != nil {
			return err
		}
		if got != seq {
			return fmt.Errorf("session %s in %s: row seq %d is gone: %w", t.ref, t.path, seq, bs.ErrChanged)
		}
		raw = b
		return nil
	})
	if err != nil {
		return nil, err
	}
	return entry.Parse(raw, line, seq), nil
}

// Lines reads the given lines (1-based, ascending) again, in short read
// transactions (of at most a few hundred rows, or a few MiB of dense
// rows), each of which first checks the fences. The entries carry Line, Offset (the seq) and Raw only; Raw
// is the caller's to keep.
func (t *Transcript) Lines(ctx context.Context, lines []int) iter.Seq2[*bs.Entry, error] {
	r, err := t.planLines(lines)
	if err != nil {
		return func(yield func(*bs.Entry, error) bool) { yield(nil, err) }
	}
	return r.Lines(ctx)
}

// planLines returns a reader of the given lines (1-based, ascending) that
// holds their row numbers, not the transcript's index.
func (t *Transcript) planLines(lines []int) (*lineReader, error) {
	locs, err := t.Locate(lines) // a row's Offset is its seq
	if err != nil {
		return nil, fmt.Errorf("session %s in %s: %w", t.ref, t.path, err)
	}
	return &lineReader{t: &Transcript{store: t.store, path: t.path, ref: t.ref, version: t.version, fences: t.fences, size: t.size},
		locs: locs}, nil
}

// lineReader reads rows chosen in advance (see planLines); t has no index,
// only what the reads and the fence checks need.
type lineReader struct {
	t    *Transcript
	locs []session.LineLoc
}

// Lines reads the planned rows in short read transactions, each of which
// first checks the fences: dense rows with one range query of at most a
// few MiB, others with a query a row, a few hundred rows at a time.
func (r *lineReader) Lines(ctx context.Context) iter.Seq2[*bs.Entry, error] {
	t := r.t
	return func(yield func(*bs.Entry, error) bool) {
		for start, end := 0, 0; start < len(r.locs); start = end {
			end = denseChunk(r.locs, start)
			out := make([]*bs.Entry, 0, end-start)
			err := t.store.readTx(ctx, t.path, func(tx *sql.Tx) error {
				out = out[:0]
				if err := t.checkFences(ctx, tx); err != nil {
					return err
				}
				if end-start > 1 && dense(r.locs[start:end]) {
					return t.rangeRows(ctx, tx, r.locs[start:end], &out)
				}
				stmt, err := tx.PrepareContext(ctx, rowsQuery+" LIMIT 1")
				if err != nil {
					return storeError(t.path, "read rows", err)
				}
				defer stmt.Close()
				for k := start; k < end; k++ {
					l, seq := r.locs[k].Line, r.locs[k].Offset
					rows, err := stmt.QueryContext(ctx, t.ref.ID, seq-1)
					if err != nil {
						return storeError(t.path, "read row", err)
					}
					rr := rowReader{path: t.path, session: t.ref.ID}
					var got int64 = -1
					var raw []byte
					if rows.Next() {
						got, raw, err = rr.next(rows)
					}
					rows.Close()
					if err != nil {
						return err
					}
					if got != seq {
						return fmt.Errorf("session %s in %s: row seq %d is gone: %w", t.ref, t.path, seq, bs.ErrChanged)
					}
					out = append(out, &bs.Entry{Line: l, Offset: seq, Raw: bytes.Clone(raw)})
				}
				return nil
			})
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range out {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// rangeQuery reads the rows of a session whose seq lies in a range, in
// seq order.
const rangeQuery = `SELECT seq, event_json, event_zstd, event_utf8_bytes, event_json IS NULL
  FROM transcript_events WHERE session_id = ? AND seq >= ? AND seq <= ? ORDER BY seq`

// dense reports whether locs (a chunk of planned rows) have strictly
// ascending seqs that fill at least half of the range from the first to
// the last: then one range query reads them faster than a query a row.
func dense(locs []session.LineLoc) bool {
	for k := 1; k < len(locs); k++ {
		if locs[k].Offset <= locs[k-1].Offset {
			return false
		}
	}
	return len(locs) > 1 && locs[len(locs)-1].Offset-locs[0].Offset < 2*int64(len(locs))
}

// Dense planned rows are read in chunks of at most linesChunkRows rows and
// linesChunkBytes bytes: each read transaction opens a connection and
// checks the schema and the fences, which costs more than a few hundred
// rows of one range query.
const (
	linesChunkRows  = 8192
	linesChunkBytes = 4 << 20
)

// denseChunk returns the end of the chunk of locs that starts at start: a
// dense one (see dense) of at most linesChunkRows rows and
// linesChunkBytes bytes, else one of at most entriesChunkRows rows.
func denseChunk(locs []session.LineLoc, start int) int {
	end, n := start, 0
	for end < len(locs) && end-start < linesChunkRows && (end == start || n+locs[end].Len <= linesChunkBytes) {
		n += locs[end].Len
		end++
	}
	if end-start > 1 && dense(locs[start:end]) {
		return end
	}
	return min(start+entriesChunkRows, len(locs))
}

// rangeRows appends to out the rows of locs (see dense) read with one
// range query in tx; the rows between them are skipped. A planned row
// that is gone is an error wrapping ErrChanged.
func (t *Transcript) rangeRows(ctx context.Context, tx *sql.Tx, locs []session.LineLoc, out *[]*bs.Entry) error {
	rows, err := tx.QueryContext(ctx, rangeQuery, t.ref.ID, locs[0].Offset, locs[len(locs)-1].Offset)
	if err != nil {
		return storeError(t.path, "read rows", err)
	}
	defer rows.Close()
	rr := rowReader{path: t.path, session: t.ref.ID}
	k := 0
	for k < len(locs) && rows.Next() {
		got, raw, err := rr.next(rows)
		if err != nil {
			return err
		}
		if got < locs[k].Offset {
			continue // a row not asked for
		}
		if got != locs[k].Offset {
			break
		}
		*out = append(*out, &bs.Entry{Line: locs[k].Line, Offset: got, Raw: bytes.Clone(raw)})
		k++
	}
	if err := rows.Err(); err != nil {
		return storeError(t.path, "read rows", err)
	}
	if k < len(locs) {
		return fmt.Errorf("session %s in %s: row seq %d is gone: %w", t.ref, t.path, locs[k].Offset, bs.ErrChanged)
	}
	return nil
}

// Location returns the agent's SQLite database that keeps the session,
// for people.
func (t *Transcript) Location() string { return t.ref.Path }
