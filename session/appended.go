package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

var _ bs.AppendReader = (*Store)(nil)

// ReadAppended returns the lines appended to the session's transcript
// after base (see brainsurgeon.AppendReader), reading only the bytes after
// base's size: one open, one stat and one read, whatever the transcript's
// length.
//
// The file must be the one base was read from (same device and inode), no
// shorter, and base's last byte must be "\n" unless the file is still
// exactly base. Only whole lines are returned: a last line without its
// "\n" yet is left for a later call, and the returned version's size ends
// before it (its modification time is the file's); when no whole line was
// appended the version returned is base. With no line pending, the
// version is the one Open would record. Lines are split on
// "\n" only and counted as Open counts them: a blank, malformed or
// CRLF-terminated line is a line. Each entry is parsed as Transcript.Entry
// parses it, with Offset the line's byte offset in the file; the entries
// share one buffer, which is the caller's.
//
// Errors wrap ErrChanged when the file is not base's content followed by
// whole lines (replaced, renamed away, truncated, rewritten in place to
// the same size, or a line of base completed later), and ErrInvalid when
// base is not a version of the JSONL store or ref has no path.
func (s *Store) ReadAppended(ctx context.Context, ref bs.SessionRef, base bs.Version, lines int) ([]*bs.Entry, bs.Version, error) {
	if ref.Backend != "" && ref.Backend != bs.BackendJSONL {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: a %s session, not one of the JSONL store: %w", ref, ref.Backend, bs.ErrInvalid)
	}
	if ref.Path == "" {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: the ref has no transcript path: %w", ref, bs.ErrInvalid)
	}
	return ReadAppended(ctx, ref.Path, base, lines)
}

// ReadAppended is Store.ReadAppended for the transcript file at path.
func ReadAppended(ctx context.Context, path string, base bs.Version, lines int) ([]*bs.Entry, bs.Version, error) {
	was, err := hostfile.ParseStamp(base)
	if err != nil {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: %w", path, err)
	}
	if lines < 0 || (was.Size == 0) != (lines == 0) {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: base has %d bytes and %d lines, expected a count of lines ≥ 0 that is 0 exactly when the size is: %w", path, was.Size, lines, bs.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, bs.Version{}, err
	}
	f, err := openTranscriptFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, bs.ErrNotFound) {
			return nil, bs.Version{}, fmt.Errorf("read what was appended: %w: %w", err, bs.ErrChanged)
		}
		return nil, bs.Version{}, err
	}
	defer f.Close()
	st, err := hostfile.FingerprintFile(f)
	if err != nil {
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: %w", path, err)
	}
	changed := func(why string) error {
		return fmt.Errorf("read what was appended to %s: %s (read at %s, now %s): %w", path, why, was, st, bs.ErrChanged)
	}
	switch {
	case st == was:
		return nil, base, nil
	case st.Dev != was.Dev || st.Inode != was.Inode:
		return nil, bs.Version{}, changed("another file is at its path")
	case st.Size < was.Size:
		return nil, bs.Version{}, changed("the file is shorter")
	case st.Size == was.Size:
		// Written in place without growing, or only touched: which one
		// cannot be told without reading the whole file.
		return nil, bs.Version{}, changed("the file was written without growing")
	}
	// Read from base's last byte, which must end a line, to the end.
	from := max(was.Size-1, 0)
	buf := make([]byte, st.Size-from)
	if n, err := f.ReadAt(buf, from); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		if errors.Is(err, io.EOF) {
			return nil, bs.Version{}, changed(fmt.Sprintf("the file ended at %d bytes during the read", from+int64(n)))
		}
		return nil, bs.Version{}, fmt.Errorf("read what was appended to %s: %w", path, err)
	}
	if was.Size == 0 {
		// Nothing was checked yet: the head decides, as in Open.
		if err := checkHead(f, st.Size, path); err != nil {
			return nil, bs.Version{}, err
		}
	} else {
		if buf[0] != '\n' {
			return nil, bs.Version{}, changed("base's last line had no \"\\n\" and was written to since")
		}
		buf = buf[1:]
	}
	whole := bytes.LastIndexByte(buf, '\n') + 1
	if whole == 0 {
		return nil, base, nil // only the start of a line: nothing yet
	}
	now := st
	now.Size = was.Size + int64(whole)
	buf = buf[:whole:whole]
	out := make([]*bs.Entry, 0, bytes.Count(buf, []byte{'\n'}))
	off := was.Size
	for len(buf) > 0 {
		if len(out)%1024 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, bs.Version{}, err
			}
		}
		i := bytes.IndexByte(buf, '\n')
		raw := buf[:i:i]
		out = append(out, entry.Parse(raw, lines+len(out)+1, off))
		off += int64(i) + 1
		buf = buf[i+1:]
	}
	return out, now.Version(), nil
}
