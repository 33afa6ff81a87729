package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// appendJSONL is a JSONL store that reads what was appended to a session
// file: the store's own ReadAppended when it has one, else a reader of
// the file's tail written here (the store seam of issue 33 is another
// branch's; this one is enough for the tests and the benchmarks).
type appendJSONL struct{ *session.Store }

func (s appendJSONL) ReadAppended(ctx context.Context, ref bs.SessionRef, base bs.Version, lines int) ([]*bs.Entry, bs.Version, error) {
	if ar, ok := any(s.Store).(bs.AppendReader); ok {
		return ar.ReadAppended(ctx, ref, base, lines)
	}
	old, err := hostfile.ParseStamp(base)
	if err != nil {
		return nil, bs.Version{}, err
	}
	f, err := os.Open(ref.Path)
	if err != nil {
		return nil, bs.Version{}, err
	}
	defer f.Close()
	now, err := hostfile.FingerprintFile(f)
	if err != nil {
		return nil, bs.Version{}, err
	}
	if now == old {
		return nil, base, nil
	}
	if now.Dev != old.Dev || now.Inode != old.Inode || now.Size < old.Size {
		return nil, bs.Version{}, fmt.Errorf("%s was replaced or truncated: %w", ref.Path, bs.ErrChanged)
	}
	from := old.Size
	if from > 0 {
		from-- // the base's last byte, which must end its last line
	}
	buf := make([]byte, now.Size-from)
	if _, err := f.ReadAt(buf, from); err != nil && !errors.Is(err, io.EOF) {
		return nil, bs.Version{}, err
	}
	if old.Size > 0 {
		if buf[0] != '\n' {
			return nil, bs.Version{}, fmt.Errorf("%s: the base ended within a line: %w", ref.Path, bs.ErrChanged)
		}
		buf = buf[1:]
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return nil, base, nil
	}
	var out []*bs.Entry
	off := old.Size
	for _, raw := range bytes.Split(buf[:end], []byte("\n")) {
		out = append(out, entry.Parse(bytes.Clone(raw), lines+1+len(out), off))
		off += int64(len(raw)) + 1
	}
	v := now
	v.Size = old.Size + int64(end) + 1
	return out, v.Version(), nil
}
