package session

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// readBufferSize is the size of the read buffer. Lines up to this size are
// returned without copying; longer lines are assembled in a growing buffer.
const readBufferSize = 256 << 10

// Reader reads a transcript line by line and keeps every line's raw bytes.
//
// Lines are separated by "\n" only. A "\r" before the "\n" stays part of the
// line's raw bytes, and so does anything else: invalid UTF-8, NUL bytes, two
// glued JSON values. A final line without "\n" is still a line. Blank lines
// are lines too, so line numbers match the file's.
//
// A Reader streams: it holds at most one line (plus its read buffer) in
// memory, whatever the file size.
type Reader struct {
	br *bufio.Reader
	// ra and base, when the source is an io.ReaderAt and io.Seeker, let a
	// long line be measured before it is read, so it is assembled in one
	// allocation of its exact size instead of a doubling buffer.
	ra       io.ReaderAt
	base     int64
	scratch  []byte
	long     []byte
	raw      []byte
	line     int
	offset   int64
	next     int64
	newline  bool
	err      error
	entry    *bs.Entry
	parsed   bool
	lastByte byte
}

// NewReader returns a Reader that reads lines from r.
//
// When r is also an io.ReaderAt and an io.Seeker (an *os.File, an
// *io.SectionReader), a line longer than the read buffer is measured first
// and then read into one buffer of its exact size, so the memory held is
// about one copy of the longest line.
func NewReader(r io.Reader) *Reader {
	rd := &Reader{br: bufio.NewReaderSize(r, readBufferSize)}
	if ra, ok := r.(io.ReaderAt); ok {
		if sk, ok := r.(io.Seeker); ok {
			if pos, err := sk.Seek(0, io.SeekCurrent); err == nil {
				rd.ra, rd.base = ra, pos
			}
		}
	}
	return rd
}

// lineLength measures the line starting at input offset start by reading
// ahead with ReadAt: it returns the line's length including its "\n" (or
// up to the end of input), or -1 when it cannot tell.
func (r *Reader) lineLength(start int64) int64 {
	if r.ra == nil {
		return -1
	}
	if r.scratch == nil {
		r.scratch = make([]byte, readBufferSize)
	}
	pos := start
	for {
		n, err := r.ra.ReadAt(r.scratch, r.base+pos)
		if i := bytes.IndexByte(r.scratch[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1 - start
		}
		pos += int64(n)
		if err == io.EOF {
			return pos - start
		}
		if err != nil || n == 0 {
			return -1
		}
	}
}

// Next advances to the next line. It returns false at the end of the input
// or on a read error; Err tells which.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	r.entry, r.parsed = nil, false
	r.long = r.long[:0]
	var raw []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(r.long) == 0 {
				if n := r.lineLength(r.next); n > int64(cap(r.long)) {
					r.long = make([]byte, 0, n)
				}
			}
			r.long = append(r.long, chunk...)
			continue
		}
		if len(r.long) > 0 {
			r.long = append(r.long, chunk...)
			raw = r.long
		} else {
			raw = chunk
		}
		if err != nil {
			if err == io.EOF {
				r.err = io.EOF
				if len(raw) == 0 {
					return false
				}
			} else {
				r.err = err
				return false
			}
		}
		break
	}
	r.line++
	r.offset = r.next
	r.next += int64(len(raw))
	r.newline = len(raw) > 0 && raw[len(raw)-1] == '\n'
	if len(raw) > 0 {
		r.lastByte = raw[len(raw)-1]
	}
	if r.newline {
		raw = raw[:len(raw)-1]
	}
	r.raw = raw
	return true
}

// Err returns the first read error, or nil at a clean end of input.
func (r *Reader) Err() error {
	if r.err == io.EOF {
		return nil
	}
	return r.err
}

// Raw returns the current line without its "\n". The slice is only valid
// until the next call to Next; copy it to keep it.
func (r *Reader) Raw() []byte { return r.raw }

// Line returns the 1-based number of the current line.
func (r *Reader) Line() int { return r.line }

// Offset returns the byte offset of the current line in the input.
func (r *Reader) Offset() int64 { return r.offset }

// Terminated reports whether the current line ended with "\n".
func (r *Reader) Terminated() bool { return r.newline }

// BytesRead returns the number of bytes consumed so far.
func (r *Reader) BytesRead() int64 { return r.next }

// Entry returns the parsed view of the current line, parsing it on the first
// call. The entry refers to the line's bytes and, like Raw, is only valid
// until the next call to Next.
func (r *Reader) Entry() *bs.Entry {
	if !r.parsed {
		r.entry = entry.Parse(r.raw, r.line, r.offset)
		r.parsed = true
	}
	return r.entry
}

// LiteEntry returns the current line's parsed view without its Strings
// (cheaper when only the envelope is needed, as for an index). It is not
// cached; like Raw it is valid until the next call to Next.
func (r *Reader) LiteEntry() *bs.Entry {
	if r.parsed {
		return r.entry
	}
	return entry.ParseLite(r.raw, r.line, r.offset)
}

// lineError wraps a malformed entry's error with the path and line number.
func lineError(path string, e *bs.Entry) *bs.LineError {
	return &bs.LineError{Path: path, Line: e.Line, Err: e.Err}
}
