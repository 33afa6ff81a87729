package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Rewrite applies edits to the session's rows, all of them or none, in one
// BEGIN IMMEDIATE transaction, compare-and-swap per row (see
// docs/ARCHITECTURE.md, "Host safety"):
//
//  1. the edits are checked (ErrInvalid) and the idle rules applied
//     (CheckIdle, ErrBusy) before anything is opened for writing;
//  2. BEGIN IMMEDIATE waits up to Options.BusyTimeout for another
//     connection's write transaction, then gives up with ErrBusy;
//  3. inside the transaction the idle rules are applied again and the
//     fences must equal base (else ErrChanged);
//  4. per edited row: the current row is read and decoded, Edit.Sum (when
//     set) and Edit.ID must match it (else ErrChanged), the splices are
//     applied, the projection guard must accept the change (else
//     ErrUnsupported naming the entry and the difference), and the row is
//     replaced as plain event_json by an UPDATE that must change exactly
//     that row as it was read (compare-and-swap, else ErrChanged);
//  5. the session's rewrite generation is rotated and its
//     transcript_updated_at advanced, as OpenClaw's own row rewrite does,
//     so that its readers and pending writes notice the change; COMMIT.
//
// Rows are never inserted or deleted, no other table is touched, and the
// database and its sidecar files are never replaced, deleted, vacuumed or
// switched to another journal mode. Edits that change nothing leave the
// store as it is. On any error the transaction is rolled back.
//
// The store cannot overlap gate with its transaction: a non-nil gate is
// called first, and the rewrite starts only after it succeeded; its error
// is returned wrapped and nothing is written.
func (s *Store) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	for _, e := range edits {
		if e.Structural() {
			return fmt.Errorf("rewrite %s: line %d: %s: %w", ref, e.Line, noStructural, bs.ErrUnsupported)
		}
	}
	if gate != nil {
		if err := gate(); err != nil {
			return fmt.Errorf("rewrite %s: not written: %w", ref, err)
		}
	}
	sorted, err := session.SortEdits(edits)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", ref, err)
	}
	if len(sorted) == 0 {
		return nil
	}
	path, err := s.storeOf(ref)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(base.String(), bs.BackendSQLite+":") {
		return fmt.Errorf("rewrite %s: base %s is not a version of a SQLite store transcript (expected one from Open): %w", ref, base, bs.ErrInvalid)
	}
	if err := s.CheckIdle(ctx, ref); err != nil {
		return err
	}
	start := time.Now()
	c, err := openWrite(ctx, path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	defer c.close()
	if _, err := checkSchema(ctx, c.c, path); err != nil {
		return err
	}
	if _, err := c.c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		err = storeError(path, "begin the write transaction", err)
		if errors.Is(err, bs.ErrBusy) {
			return fmt.Errorf("rewrite %s: waited %s (busy timeout %s) for another connection's write transaction: %w",
				ref, time.Since(start).Round(time.Millisecond), s.opts.BusyTimeout, err)
		}
		return err
	}
	done := false
	defer func() {
		if !done {
			// A failed statement may already have rolled back; the error
			// of a second ROLLBACK says nothing.
			_, _ = c.c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	changed, err := s.rewriteIn(ctx, c.c, path, ref, base, sorted)
	if err != nil {
		return err
	}
	if changed == 0 {
		return nil
	}
	if _, err := c.c.ExecContext(ctx, "COMMIT"); err != nil {
		return storeError(path, "commit", err)
	}
	done = true
	s.log.Debug("rewrote SQLite transcript rows", "session", ref.String(), "rows", changed, "took", time.Since(start))
	return nil
}

const (
	rowQuery = `SELECT event_json, event_zstd, event_utf8_bytes, event_json IS NULL
  FROM transcript_events WHERE session_id = ? AND seq = ?`
	updateRow = `UPDATE transcript_events
   SET event_json = ?, event_zstd = NULL, event_utf8_bytes = ?, navigation_json = NULL
 WHERE session_id = ? AND seq = ? AND event_json IS ? AND event_zstd IS ?`
	rotateGeneration = `INSERT INTO transcript_rewrite_watermarks(session_id, generation, updated_at) VALUES (?, ?, ?)
    ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation, updated_at = excluded.updated_at`
	touchWindow = `UPDATE session_windows
   SET transcript_updated_at = max(?1, coalesce(transcript_updated_at, -1) + 1, coalesce(transcript_observed_at, -1) + 1)
 WHERE session_id = ?2`
)

// rewriteIn does steps 3 to 5 of Rewrite inside the write transaction and
// returns how many rows it changed.
func (s *Store) rewriteIn(ctx context.Context, q querier, path string, ref bs.SessionRef, base bs.Version, edits []bs.Edit) (int, error) {
	if err := s.checkStateLock(ref); err != nil {
		return 0, err
	}
	if err := s.checkIdleIn(ctx, q, path, ref, ", seen in the write transaction"); err != nil {
		return 0, err
	}
	f, err := readFences(ctx, q, path, ref.ID)
	if err != nil {
		return 0, err
	}
	if !f.matches(base) {
		return 0, fmt.Errorf("rewrite %s: the transcript changed since it was read (read %s, now %s): %w", ref, base, f.version(0), bs.ErrChanged)
	}
	seqs, err := readSeqs(ctx, q, path, ref.ID)
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, e := range edits {
		ok, err := s.rewriteRow(ctx, q, path, ref, seqs, e)
		if err != nil {
			return 0, err
		}
		if ok {
			changed++
		}
	}
	if changed == 0 {
		return 0, nil
	}
	now := bs.Now(s.opts.Clock).UnixMilli()
	if _, err := q.ExecContext(ctx, rotateGeneration, ref.ID, newGeneration(), now); err != nil {
		return 0, storeError(path, "rotate the rewrite generation", err)
	}
	res, err := q.ExecContext(ctx, touchWindow, now, ref.ID)
	if err != nil {
		return 0, storeError(path, "advance transcript_updated_at", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, fmt.Errorf("rewrite %s: advancing session_windows.transcript_updated_at changed %d rows, expected 1 (%v): %w", ref, n, err, bs.ErrChanged)
	}
	return changed, nil
}

func readSeqs(ctx context.Context, q querier, path, id string) ([]int64, error) {
	rows, err := q.QueryContext(ctx, "SELECT seq FROM transcript_events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, storeError(path, "read row numbers", err)
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, storeError(path, "read row numbers", err)
		}
		seqs = append(seqs, seq)
	}
	return seqs, storeError(path, "read row numbers", rows.Err())
}

// rewriteRow applies one edit. It reports whether the row changed.
func (s *Store) rewriteRow(ctx context.Context, q querier, path string, ref bs.SessionRef, seqs []int64, e bs.Edit) (bool, error) {
	if e.Line > len(seqs) {
		return false, fmt.Errorf("rewrite %s: edit of line %d: the transcript has only %d lines: %w", ref, e.Line, len(seqs), bs.ErrInvalid)
	}
	seq := seqs[e.Line-1]
	var eventJSON, eventZstd []byte
	var n sql.NullInt64
	var jsonNull bool
	if err := q.QueryRowContext(ctx, rowQuery, ref.ID, seq).Scan(&eventJSON, &eventZstd, &n, &jsonNull); err != nil {
		return false, storeError(path, fmt.Sprintf("read row seq %d", seq), err)
	}
	cur, err := decodeRow(nil, eventJSON, eventZstd, jsonNull, n)
	if err != nil {
		return false, fmt.Errorf("rewrite %s: line %d (seq %d): %w", ref, e.Line, seq, err)
	}
	if e.Sum != nil {
		if sum := bs.LineSum(cur); !bytes.Equal(sum, e.Sum) {
			return false, fmt.Errorf("rewrite %s: line %d (seq %d) changed since it was read (line sum %x, expected %x): %w", ref, e.Line, seq, sum, e.Sum, bs.ErrChanged)
		}
	}
	held := entry.ParseLite(cur, e.Line, seq)
	if e.ID != "" && held.ID != e.ID {
		return false, fmt.Errorf("rewrite %s: line %d (seq %d) holds entry %q, expected %q: %w", ref, e.Line, seq, held.ID, e.ID, bs.ErrChanged)
	}
	next, err := splice(cur, e)
	if err != nil {
		return false, fmt.Errorf("rewrite %s: %w", ref, err)
	}
	if bytes.Equal(next, cur) {
		return false, nil
	}
	if err := checkProjection(cur, next); err != nil {
		name := held.ID
		if name == "" {
			name = "without id"
		}
		return false, fmt.Errorf("rewrite %s: entry %s (line %d, seq %d): %v; %s; nothing was written: %w",
			ref, name, e.Line, seq, err, editRule, bs.ErrUnsupported)
	}
	var oldJSON, oldZstd any
	if !jsonNull {
		oldJSON = string(eventJSON)
	}
	if eventZstd != nil {
		oldZstd = eventZstd
	}
	res, err := q.ExecContext(ctx, updateRow, string(next), len(next), ref.ID, seq, oldJSON, oldZstd)
	if err != nil {
		return false, storeError(path, fmt.Sprintf("update row seq %d", seq), err)
	}
	if k, err := res.RowsAffected(); err != nil || k != 1 {
		return false, fmt.Errorf("rewrite %s: line %d (seq %d): the compare-and-swap update changed %d rows, expected 1 (%v): %w", ref, e.Line, seq, k, err, bs.ErrChanged)
	}
	return true, nil
}

// newGeneration returns a fresh rewrite generation: 32 random hex digits,
// as OpenClaw's randomUUID without dashes.
func newGeneration() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// splice applies e's splices to raw.
func splice(raw []byte, e bs.Edit) ([]byte, error) {
	if n := len(e.Splices); n > 0 && e.Splices[n-1].End > len(raw) {
		sp := e.Splices[n-1]
		return nil, fmt.Errorf("edit of line %d: splice [%d,%d) is past the end of the line (%d bytes): %w",
			e.Line, sp.Start, sp.End, len(raw), bs.ErrInvalid)
	}
	size := len(raw)
	for _, sp := range e.Splices {
		size += len(sp.With) - (sp.End - sp.Start)
	}
	out := make([]byte, 0, size)
	at := 0
	for _, sp := range e.Splices {
		out = append(out, raw[at:sp.Start]...)
		out = append(out, sp.With...)
		at = sp.End
	}
	return append(out, raw[at:]...), nil
}

// AppendAt is not supported: BrainSurgeon never inserts rows into an
// OpenClaw SQLite store. A new row needs OpenClaw's identity, projection
// and idempotency rows written with it; compactions on this backend are
// OpenClaw's own (sessions.compact). The error wraps ErrUnsupported.
func (s *Store) AppendAt(ctx context.Context, ref bs.SessionRef, base bs.Version, entries [][]byte) error {
	return fmt.Errorf("append %d entries to %s: the OpenClaw SQLite store takes no new rows from outside OpenClaw (a row needs OpenClaw's identity, projection and idempotency rows, so BrainSurgeon never inserts rows); let OpenClaw compact the session (sessions.compact) instead: %w",
		len(entries), ref, bs.ErrUnsupported)
}

// Create is not supported: OpenClaw's SQLite store takes no new sessions
// from outside OpenClaw (BrainSurgeon never inserts rows). It returns an
// error wrapping brainsurgeon.ErrUnsupported that says so and what to do
// instead.
func (s *Store) Create(ctx context.Context, agent string, lines [][]byte) (bs.SessionRef, error) {
	return bs.SessionRef{}, fmt.Errorf("create a session of agent %q (%d lines): the OpenClaw SQLite store takes no new sessions from outside OpenClaw (a session needs OpenClaw's identity, projection and idempotency rows, so BrainSurgeon never inserts rows); write the branch or import into a JSONL agents dir instead: %w",
		agent, len(lines), bs.ErrUnsupported)
}
