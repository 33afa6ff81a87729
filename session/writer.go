package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// DefaultQuiet is the quiet period NewWriter and NewStore set: a transcript
// modified less than this long ago is not rewritten (idle_seconds 300:
// longer than the usual prompt-cache lifetime, so an edit does not make the
// next turn re-bill a cached prefix, and long enough that a run starting is
// not taken for an idle session).
const DefaultQuiet = 300 * time.Second

// editBufferSize is the size of ApplyEdits' read and write buffers. Lines
// longer than it are streamed in pieces unless they are edited.
const editBufferSize = 256 << 10

// Writer rewrites and appends to JSONL transcripts next to a live host,
// under the host-safety protocol (docs/ARCHITECTURE.md, "Host safety"): it
// only touches an idle session, takes the OpenClaw-compatible lock
// ("<file>.lock") and a flock that keeps BrainSurgeon writers apart,
// re-checks under the lock that the transcript is still the version that was
// read, writes a temp file in the same directory, fsyncs, renames and fsyncs
// the directory. Bytes that a host appends without honouring the lock while
// this happens are carried over, never lost.
//
// The zero value is ready to use, with no quiet period (Quiet 0: only the
// run status and the host lock make a session busy); NewWriter sets the
// DefaultQuiet of 300 s a writer next to a live host wants. A Writer is
// safe for concurrent use; writes to one directory are serialised.
type Writer struct {
	// Quiet is how long the transcript must have been left unmodified
	// before it is written. Zero (or negative) means no quiet period, as
	// idle_seconds 0 does in the config; NewWriter sets DefaultQuiet.
	Quiet time.Duration
	// LockTimeout bounds how long a write waits for the host lock and for
	// another BrainSurgeon writer. Zero means 10 s; a negative value means
	// a single attempt.
	LockTimeout time.Duration
	// StaleAfter is the age after which a host lock is stale whatever its
	// holder, as in OpenClaw. Zero means 30 min.
	StaleAfter time.Duration
	// Logger receives the writer's log records. Nil means discard.
	Logger bs.Logger
	// Clock tells the time for the idle gate and the lock payload. Nil
	// means the system clock.
	Clock bs.Clock
	// Refresh, when not nil, re-reads a session's entry (its sessions.json
	// status) once the host lock is held, so that a run that started after
	// CheckIdle is still noticed before anything is written. Nil means
	// ref.Status is trusted.
	Refresh func(ctx context.Context, ref bs.SessionRef) (bs.SessionRef, error)
}

// NewWriter returns a Writer with the defaults for a live host: a quiet
// period of DefaultQuiet.
func NewWriter() *Writer { return &Writer{Quiet: DefaultQuiet} }

func (w *Writer) lockOptions() hostfile.LockOptions {
	return hostfile.LockOptions{Timeout: w.LockTimeout, StaleAfter: w.StaleAfter, Clock: w.Clock, Logger: w.Logger}
}

func refName(ref bs.SessionRef) string {
	if ref.ID == "" {
		return ref.Path
	}
	return ref.String()
}

// CheckIdle is the idle gate. It returns an error wrapping
// brainsurgeon.ErrBusy when the session is in use: its sessions.json
// status is "running" (a run is in flight), a live process holds its host
// lock by OpenClaw's rules, or the transcript was modified less than Quiet
// ago (the error says how long ago and how long to wait; a context made by
// brainsurgeon.ExplicitWrite skips this last check). It returns an
// error wrapping ErrNotFound when the transcript does not exist.
func (w *Writer) CheckIdle(ctx context.Context, ref bs.SessionRef) error {
	if ref.Path == "" {
		return fmt.Errorf("session %s: no transcript path: %w", refName(ref), bs.ErrInvalid)
	}
	if err := checkStatus(ref, ""); err != nil {
		return err
	}
	info, err := hostfile.InspectLockWith(ref.Path, w.lockOptions())
	if err != nil {
		return fmt.Errorf("session %s: %w", refName(ref), err)
	}
	if info.Live {
		now := bs.Now(w.Clock)
		if info.PID == 0 {
			return fmt.Errorf("session %s: lock %s is being taken (no payload yet, %s old): %w",
				refName(ref), info.Path, info.Age(now).Round(time.Millisecond), bs.ErrBusy)
		}
		return fmt.Errorf("session %s: lock %s is held by live pid %d for %s: %w",
			refName(ref), info.Path, info.PID, info.Age(now).Round(time.Millisecond), bs.ErrBusy)
	}
	if bs.IsExplicitWrite(ctx) {
		return nil // the user asked for this write now: no quiet period
	}
	return w.checkQuiet(ref)
}

// checkStatus refuses a session whose run is in flight.
func checkStatus(ref bs.SessionRef, when string) error {
	if ref.Status == "running" {
		return fmt.Errorf("session %s: run in flight (sessions.json status running%s): %w", refName(ref), when, bs.ErrBusy)
	}
	return nil
}

// checkQuiet refuses a transcript modified less than Quiet ago.
func (w *Writer) checkQuiet(ref bs.SessionRef) error {
	fi, err := os.Stat(ref.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("session %s: %w: %w", refName(ref), bs.ErrNotFound, err)
		}
		return fmt.Errorf("session %s: %w", refName(ref), err)
	}
	idle := w.Quiet
	if idle <= 0 {
		return nil
	}
	now := bs.Now(w.Clock)
	age := now.Sub(fi.ModTime())
	if age < 0 {
		return fmt.Errorf("session %s: transcript modified %s in the future (clock skew?); wait until it has been idle for %s: %w",
			refName(ref), (-age).Round(time.Second), idle, bs.ErrBusy)
	}
	if age < idle {
		return &bs.QuietError{Msg: fmt.Sprintf("session %s: transcript modified %s ago; it must be idle for %s, try again in %s",
			refName(ref), age.Round(time.Second), idle, (idle - age).Round(time.Second)), Age: age, Quiet: idle, At: now}
	}
	return nil
}

// recheck is the idle gate again, once the host lock is held: the status
// (re-read through Refresh when set) and the quiet period. The lock is not
// checked, since this process holds it.
func (w *Writer) recheck(ctx context.Context, ref bs.SessionRef) error {
	if w.Refresh != nil {
		fresh, err := w.Refresh(ctx, ref)
		if err != nil {
			return fmt.Errorf("session %s: refresh status under the lock: %w", refName(ref), err)
		}
		ref.Status = fresh.Status
	}
	if err := checkStatus(ref, ", seen under the lock"); err != nil {
		return err
	}
	if bs.IsExplicitWrite(ctx) {
		return nil
	}
	return w.checkQuiet(ref)
}

func (w *Writer) writeOptions(ctx context.Context, ref bs.SessionRef) hostfile.WriteOptions {
	return hostfile.WriteOptions{
		Lock:    w.lockOptions(),
		Logger:  w.Logger,
		Clock:   w.Clock,
		Recheck: func() error { return w.recheck(ctx, ref) },
	}
}

// Rewrite applies edits to the transcript of ref, which must still be the
// version base. Bad edits (see [ApplyEdits]) are refused with an error
// wrapping brainsurgeon.ErrInvalid before anything is locked or written.
// Then the idle gate ([Writer.CheckIdle]) runs, and the file is rewritten
// by streaming it line by line through ApplyEdits, under the protocol
// described at [Writer]; the idle gate is checked once more under the lock.
// It returns an error wrapping ErrBusy when the session is in use and one
// wrapping ErrChanged when the transcript is no longer base (or an edited
// line no longer holds its entry id); in both cases nothing was written.
// With no edits it does nothing.
func (w *Writer) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit) error {
	return w.RewriteGated(ctx, ref, base, edits, nil)
}

// RewriteGated is Rewrite calling gate, when not nil, once the new
// content is fsynced and right before the rename that puts it in place
// (the gate of brainsurgeon.Store.Rewrite). The locks are held meanwhile.
func (w *Writer) RewriteGated(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	if _, err := SortEdits(edits); err != nil {
		return fmt.Errorf("rewrite %s: %w", ref.Path, err)
	}
	if len(edits) == 0 {
		return nil
	}
	stamp, err := hostfile.ParseStamp(base)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", refName(ref), err)
	}
	if err := w.CheckIdle(ctx, ref); err != nil {
		return err
	}
	start := time.Now()
	opts := w.writeOptions(ctx, ref)
	opts.Gate = gate
	err = hostfile.Rewrite(ctx, ref.Path, stamp, func(dst io.Writer, src io.Reader) error {
		return ApplyEdits(dst, src, edits)
	}, opts)
	if err != nil {
		return err
	}
	bs.LoggerOrDiscard(w.Logger).Debug("rewrote transcript", "session", refName(ref), "edits", len(edits),
		"took", time.Since(start))
	return nil
}

// Append adds entries (raw JSON objects, each without a newline) at the
// end of the transcript of ref, after the idle gate and under the same
// locks as Rewrite. A missing trailing newline is added first; entries
// holding "\n" or empty are refused (ErrInvalid); a missing transcript is
// never created (ErrNotFound).
func (w *Writer) Append(ctx context.Context, ref bs.SessionRef, entries [][]byte) error {
	if err := w.CheckIdle(ctx, ref); err != nil {
		return err
	}
	return hostfile.Append(ctx, ref.Path, entries, w.writeOptions(ctx, ref))
}

// AppendAt is Append when the transcript is still the version base: the
// file's fingerprint is compared once both locks are held, after the idle
// gate's re-check, so nothing the host writes can come between the check
// and the append. A transcript that is no longer base gives an error
// wrapping ErrChanged and nothing is written.
func (w *Writer) AppendAt(ctx context.Context, ref bs.SessionRef, base bs.Version, entries [][]byte) error {
	stamp, err := hostfile.ParseStamp(base)
	if err != nil {
		return fmt.Errorf("append to %s: %w", refName(ref), err)
	}
	if err := w.CheckIdle(ctx, ref); err != nil {
		return err
	}
	opts := w.writeOptions(ctx, ref)
	idle := opts.Recheck
	opts.Recheck = func() error {
		if err := idle(); err != nil {
			return err
		}
		now, err := hostfile.Fingerprint(ref.Path)
		if err != nil {
			return err
		}
		if now != stamp {
			return fmt.Errorf("session %s: the transcript is no longer the version that was read (%s, now %s): %w",
				refName(ref), stamp, now, bs.ErrChanged)
		}
		return nil
	}
	return hostfile.Append(ctx, ref.Path, entries, opts)
}

// ApplyEdits copies the JSONL transcript read from src to dst, applying
// edits. Lines are split on "\n" only; a "\r" before it belongs to the
// line, and a last line without "\n" stays without it. Every line that is
// not edited is copied byte for byte and streamed, so lines of any length
// are fine; an edited line is held in memory while it is spliced.
//
// Edit.Line is 1-based and always names a line of the input, whatever the
// other edits insert or remove. The splices of an edit index the line's
// bytes without its "\n"; they must be sorted, must not overlap and must
// lie within the line. Two edits of one line, a line number below 1, bad
// splices or a Remove with splices or inserts give an error wrapping
// brainsurgeon.ErrInvalid; edits are checked before anything is read,
// splice bounds when the line is. An edit whose ID is set requires the line
// to contain that id as a JSON string (quoted), and one whose Sum is set
// requires brainsurgeon.LineSum of the line's bytes (without its "\n") to
// equal it; else the error wraps ErrChanged. So does an edit naming a line
// past the end of the input. Edits may be given in any order.
//
// Structural edits: the lines of Edit.Insert are written right after the
// (spliced) line, in order, each followed by "\n". When the line is the
// input's last and has no "\n", the output keeps that shape: a "\n" ends
// the line, and the last inserted line goes without one. Edit.Remove drops
// the line and its "\n"; removing a last line without "\n" drops the "\n"
// before it instead, so that the output again ends without one. Inserting
// after a line and removing the inserted lines thus gives back the input
// byte for byte.
//
// On error dst may hold part of the output; the caller discards it.
func ApplyEdits(dst io.Writer, src io.Reader, edits []bs.Edit) error {
	sorted, err := SortEdits(edits)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(src, editBufferSize)
	bw := bufio.NewWriterSize(dst, editBufferSize)
	w := &holdWriter{w: bw}
	line := 0
	var buf []byte
	for _, e := range sorted {
		for line+1 < e.Line {
			ok, err := copyLine(w, br)
			if err != nil {
				return err
			}
			if !ok {
				return pastEOF(e, line)
			}
			line++
		}
		raw, nl, ok, err := readLine(br, buf[:0])
		if err != nil {
			return err
		}
		if !ok {
			return pastEOF(e, line)
		}
		line++
		buf = raw
		if e.ID != "" && !bytes.Contains(raw, quoteJSONString(e.ID)) {
			return fmt.Errorf("line %d does not hold entry id %q: %w", e.Line, e.ID, bs.ErrChanged)
		}
		if e.Sum != nil && !bytes.Equal(bs.LineSum(raw), e.Sum) {
			return fmt.Errorf("line %d is not the line that was read (its checksum differs): %w", e.Line, bs.ErrChanged)
		}
		if e.Remove {
			if !nl {
				w.drop() // the output ends without "\n", as the input did
			}
			continue
		}
		if err := writeSpliced(w, raw, e); err != nil {
			return err
		}
		if err := writeInserts(w, e, nl); err != nil {
			return err
		}
	}
	if _, err := io.Copy(w, br); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// writeInserts ends the edited line (with "\n" when nl, the input line
// having one) and writes e's inserted lines after it.
func writeInserts(w *holdWriter, e bs.Edit, nl bool) error {
	if !nl {
		// The last line of the input, without "\n": the inserted lines
		// follow it and the last of them goes without "\n".
		for _, ins := range e.Insert {
			if _, err := w.Write([]byte{'\n'}); err != nil {
				return err
			}
			if _, err := w.Write(ins); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := w.Write([]byte{'\n'}); err != nil {
		return err
	}
	for _, ins := range e.Insert {
		if _, err := w.Write(ins); err != nil {
			return err
		}
		if _, err := w.Write([]byte{'\n'}); err != nil {
			return err
		}
	}
	return nil
}

// holdWriter writes to w, holding back a final "\n" until more bytes
// follow, so that removing an unterminated last line can take back the
// "\n" before it.
type holdWriter struct {
	w    *bufio.Writer
	held bool
}

func (h *holdWriter) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if h.held {
		if err := h.w.WriteByte('\n'); err != nil {
			return 0, err
		}
		h.held = false
	}
	n := len(p)
	if p[n-1] == '\n' {
		p = p[:n-1]
		h.held = true
	}
	if _, err := h.w.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// drop forgets a held "\n".
func (h *holdWriter) drop() { h.held = false }

// flush writes a held "\n".
func (h *holdWriter) flush() error {
	if h.held {
		h.held = false
		return h.w.WriteByte('\n')
	}
	return nil
}

func pastEOF(e bs.Edit, lines int) error {
	return fmt.Errorf("edit of line %d: the transcript has only %d lines: %w", e.Line, lines, bs.ErrChanged)
}

// SortEdits checks edits (line numbers from 1, splices sorted, in range
// order and not overlapping, one edit per line, a Remove without splices
// or inserts, inserted lines not empty and without "\n") and returns them sorted by line; bad edits give an error
// wrapping brainsurgeon.ErrInvalid. Every backend checks its edits with
// it.
func SortEdits(edits []bs.Edit) ([]bs.Edit, error) {
	for _, e := range edits {
		if e.Line < 1 {
			return nil, fmt.Errorf("edit of line %d: line numbers start at 1: %w", e.Line, bs.ErrInvalid)
		}
		if e.Remove && (len(e.Splices) > 0 || len(e.Insert) > 0) {
			return nil, fmt.Errorf("edit of line %d: removes the line and also splices or inserts (want one or the other): %w", e.Line, bs.ErrInvalid)
		}
		for i, ins := range e.Insert {
			if len(ins) == 0 || bytes.IndexByte(ins, '\n') >= 0 {
				return nil, fmt.Errorf("edit of line %d: inserted line %d is empty or holds a newline (want one JSON object): %w",
					e.Line, i+1, bs.ErrInvalid)
			}
		}
		end := 0
		for i, s := range e.Splices {
			switch {
			case s.Start < 0 || s.End < s.Start:
				return nil, fmt.Errorf("edit of line %d: splice %d has bad range [%d,%d): %w", e.Line, i, s.Start, s.End, bs.ErrInvalid)
			case s.Start < end:
				return nil, fmt.Errorf("edit of line %d: splice %d [%d,%d) overlaps or precedes the one before (ending at %d): %w",
					e.Line, i, s.Start, s.End, end, bs.ErrInvalid)
			}
			end = s.End
		}
	}
	sorted := slices.Clone(edits)
	slices.SortStableFunc(sorted, func(a, b bs.Edit) int { return a.Line - b.Line })
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Line == sorted[i-1].Line {
			return nil, fmt.Errorf("two edits of line %d: %w", sorted[i].Line, bs.ErrInvalid)
		}
	}
	return sorted, nil
}

// copyLine streams one line, "\n" included, from br to bw. It reports
// false when br had no more bytes.
func copyLine(bw io.Writer, br *bufio.Reader) (bool, error) {
	any := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			any = true
			if _, werr := bw.Write(chunk); werr != nil {
				return false, werr
			}
		}
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return any, nil
		default:
			return false, err
		}
	}
}

// readLine reads one line into buf, without its "\n". nl tells whether it
// ended with "\n"; ok is false when br had no more bytes.
func readLine(br *bufio.Reader, buf []byte) (raw []byte, nl, ok bool, err error) {
	any := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			any = true
			buf = append(buf, chunk...)
		}
		switch {
		case err == nil:
			return buf[:len(buf)-1], true, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return buf, false, any, nil
		default:
			return nil, false, false, err
		}
	}
}

// writeSpliced writes raw with e's splices applied.
func writeSpliced(bw io.Writer, raw []byte, e bs.Edit) error {
	if n := len(e.Splices); n > 0 && e.Splices[n-1].End > len(raw) {
		s := e.Splices[n-1]
		return fmt.Errorf("edit of line %d: splice [%d,%d) is past the end of the line (%d bytes): %w",
			e.Line, s.Start, s.End, len(raw), bs.ErrInvalid)
	}
	at := 0
	for _, s := range e.Splices {
		if _, err := bw.Write(raw[at:s.Start]); err != nil {
			return err
		}
		if _, err := bw.Write(s.With); err != nil {
			return err
		}
		at = s.End
	}
	_, err := bw.Write(raw[at:])
	return err
}

// quoteJSONString returns s as JavaScript's JSON.stringify writes it: only
// '"', '\\' and control characters are escaped.
func quoteJSONString(s string) []byte {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}
