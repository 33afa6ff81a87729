package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// Parallel reads split the input into blocks of whole lines, parse the
// blocks on several goroutines and index them in order on the caller's.
var (
	// blockSize is the size of a block read at once; a line longer than a
	// block makes its block longer. Tests make it small.
	blockSize = 256 << 10
)

// parallelMin is the input size from which a read is parallel: below it
// the goroutines cost more than they save.
const parallelMin = 4 << 20

// block is a run of whole lines of the input and, once parsed, their
// entries.
type block struct {
	data    []byte
	line0   int   // lines before the block
	offset0 int64 // input offset of the block
	final   bool  // the last block: its last line may lack "\n"
	entries []*bs.Entry
	// terminated tells whether the block's last line ended with "\n".
	terminated bool
	parsed     chan struct{}
}

// parse splits b into lines and parses each, fully when want says so (or
// when want is nil and full is set).
func (b *block) parse(want func([]byte) bool, full bool, prepare func(*bs.Entry) any) {
	defer close(b.parsed)
	data := b.data
	line, off := b.line0, b.offset0
	b.terminated = true
	for len(data) > 0 {
		raw := data
		i := bytes.IndexByte(data, '\n')
		if i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
			b.terminated = false
		}
		line++
		var e *bs.Entry
		if full || (want != nil && want(raw)) {
			e = entry.Parse(raw, line, off)
			if prepare != nil {
				e.Prepared = prepare(e)
			}
		} else {
			e = entry.ParseLite(raw, line, off)
		}
		b.entries = append(b.entries, e)
		off += int64(len(raw))
		if i >= 0 {
			off++
		}
	}
}

// readParallel indexes r as read does, with the lines parsed on up to
// GOMAXPROCS goroutines. v, when not nil, must be Concurrent.
func readParallel(ctx context.Context, r io.Reader, path string, v *bs.Visitor, size int64) (*Index, error) {
	workers := runtime.GOMAXPROCS(0)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		want    func([]byte) bool
		full    bool
		visit   func(*bs.Entry) error
		prepare func(*bs.Entry) any
	)
	if v != nil && v.Visit != nil {
		visit, want, full, prepare = v.Visit, v.Want, v.Want == nil, v.Prepare
	}
	work := make(chan *block, workers)
	ordered := make(chan *block, workers+1)
	free := make(chan []byte, 2*workers+2)
	var readErr error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range work {
				b.parse(want, full, prepare)
			}
		}()
	}
	// The producer reads blocks of whole lines, in order. carry holds
	// the start of a line that the previous block cut (it has no "\n").
	go func() {
		defer close(ordered)
		defer close(work)
		var carry, buf []byte
		line, off := 0, int64(0)
		for {
			if buf == nil {
				select {
				case buf = <-free:
					buf = buf[:0]
				default:
					buf = make([]byte, 0, max(blockSize, 2*len(carry)))
				}
				buf = append(buf, carry...)
			}
			if cap(buf)-len(buf) < max(blockSize/2, 1) {
				// A line longer than a block: grow by doubling.
				nb := make([]byte, len(buf), 2*cap(buf))
				copy(nb, buf)
				buf = nb
			}
			n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			final := false
			switch {
			case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
				final = true
			case err != nil:
				readErr = err
				return
			}
			data := buf
			carry = carry[:0]
			if !final {
				// Only the bytes just read can hold a "\n".
				i := bytes.LastIndexByte(buf[len(buf)-n:], '\n')
				if i < 0 {
					continue // the block is one unfinished line: read on
				}
				i += len(buf) - n
				data = buf[:i+1]
				carry = append(carry, buf[i+1:]...)
			}
			buf = nil
			if len(data) == 0 {
				return // final, nothing left
			}
			b := &block{data: data, line0: line, offset0: off, final: final, parsed: make(chan struct{})}
			line += bytes.Count(data, []byte{'\n'})
			off += int64(len(data))
			select {
			case ordered <- b:
			case <-ctx.Done():
				return
			}
			select {
			case work <- b:
			case <-ctx.Done():
				return
			}
			if final {
				return
			}
		}
	}()
	ix := NewIndexer(path)
	ix.SizeHint(size)
	var err error
	for b := range ordered {
		if err != nil {
			continue // drain
		}
		select {
		case <-b.parsed:
		case <-ctx.Done():
			err = ctx.Err()
			cancel()
			continue
		}
		for k, e := range b.entries {
			ix.Add(e, k < len(b.entries)-1 || b.terminated)
			if visit != nil {
				if verr := visit(e); verr != nil {
					err = verr
					cancel()
					break
				}
			}
		}
		if cerr := ctx.Err(); err == nil && cerr != nil {
			err = cerr
		}
		b.entries = nil
		if cap(b.data) <= 4*blockSize { // a block grown for a huge line is dropped
			select {
			case free <- b.data:
			default:
			}
		}
	}
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if readErr != nil {
		if path != "" {
			return nil, fmt.Errorf("read transcript %s: %w", path, readErr)
		}
		return nil, fmt.Errorf("read transcript: %w", readErr)
	}
	return ix.Index(), nil
}
