package hostfile

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// past is an old modification time with a nanosecond part, so a kept time
// is seen to be kept exactly.
var past = time.Unix(1_780_000_000, 123_456_789)

func setMtime(t *testing.T, path string, mt time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mt.Add(-time.Hour), mt); err != nil {
		t.Fatal(err)
	}
}

func mtimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// fmtime returns the modification time of an open file (the old file after
// a rename).
func fmtime(t *testing.T, f *os.File) time.Time {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

// TestRewriteKeepsMtime: a plain rewrite gives the new file the original's
// modification time to the nanosecond, so the host and the idle gate do not
// take it for a newer file.
func TestRewriteKeepsMtime(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n{\"b\":2}\n"))
	setMtime(t, p, past)
	base := fingerprint(t, p)
	if err := Rewrite(context.Background(), p, base, upper, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, p)); got != "{\"A\":1}\n{\"B\":2}\n" {
		t.Fatalf("content %q", got)
	}
	if now := fingerprint(t, p); now.Inode == base.Inode {
		t.Fatalf("inode %d unchanged: not a temp+rename", now.Inode)
	}
	if got := mtimeOf(t, p); !got.Equal(past) {
		t.Fatalf("mtime %s, want the original's %s", got.Format(time.RFC3339Nano), past.Format(time.RFC3339Nano))
	}
	// What the idle gate sees: the session was left alone long ago.
	if age := time.Since(mtimeOf(t, p)); age < time.Hour {
		t.Fatalf("rewritten file looks modified %s ago", age)
	}
}

// TestRewriteKeepsMtimeCarryOver: bytes appended to the original while the
// rewrite runs are carried over, and the new file gets the original's
// mtime as it was at the rename (the append's), not the rewrite's.
func TestRewriteKeepsMtimeCarryOver(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n"))
	setMtime(t, p, past)
	appended := past.Add(90 * time.Minute)
	var old *os.File
	err := Rewrite(context.Background(), p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
		var err error
		if old, err = os.Open(p); err != nil {
			return err
		}
		appendTo(t, p, []byte("{\"x\":1}\n"))
		setMtime(t, p, appended) // the appender's write time, made recognisable
		return upper(dst, src)
	}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if got := string(readFile(t, p)); got != "{\"A\":1}\n{\"x\":1}\n" {
		t.Fatalf("content %q", got)
	}
	if got := mtimeOf(t, p); !got.Equal(appended) {
		t.Fatalf("mtime %s, want the original's at the rename %s", got.Format(time.RFC3339Nano), appended.Format(time.RFC3339Nano))
	}
	if got, want := mtimeOf(t, p), fmtime(t, old); !got.Equal(want) {
		t.Fatalf("mtime %s, old file's %s", got, want)
	}
}

// TestRewriteKeepsMtimeLateAppend: bytes that reach the old file after the
// rename are carried over (which writes to the new file), and then the new
// file gets the old file's last mtime: the late append's.
func TestRewriteKeepsMtimeLateAppend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"Immediate", 0}, {"WriterStillOpen", 30 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte("{\"a\":1}\n"))
			setMtime(t, p, past)
			lateTime := past.Add(2 * time.Hour)
			var w, r *os.File
			var wg sync.WaitGroup
			afterRename = func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer w.Close()
					time.Sleep(tc.delay)
					if _, err := w.Write([]byte("{\"late\":1}\n")); err != nil {
						t.Error(err)
					}
					// the late write's time, made recognisable (writes within
					// one clock tick would share an mtime anyway)
					ts := unix.NsecToTimespec(lateTime.UnixNano())
					if err := setTimes(w, fileTimes{atime: ts, mtime: ts}); err != nil {
						t.Error(err)
					}
				}()
				if tc.delay == 0 {
					wg.Wait()
				}
			}
			defer func() { afterRename = nil }()
			err := Rewrite(context.Background(), p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
				var err error
				if w, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err != nil {
					return err
				}
				if r, err = os.Open(p); err != nil {
					return err
				}
				return upper(dst, src)
			}, WriteOptions{})
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := string(readFile(t, p)); got != "{\"A\":1}\n{\"late\":1}\n" {
				t.Fatalf("content %q", got)
			}
			last := fmtime(t, r)
			if !last.Equal(lateTime) {
				t.Fatalf("old file's mtime %s, want %s", last, lateTime)
			}
			if got := mtimeOf(t, p); !got.Equal(last) {
				t.Fatalf("mtime %s, want the old file's last %s", got.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
			}
		})
	}
}

// TestRewriteMtimeNewFileAppended: a process that appends to the new file
// itself after the rename made a real change; its newer mtime stays.
func TestRewriteMtimeNewFileAppended(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n"))
	setMtime(t, p, past)
	afterRename = func() { appendTo(t, p, []byte("{\"new\":1}\n")) }
	defer func() { afterRename = nil }()
	start := time.Now().Add(-time.Second)
	if err := Rewrite(context.Background(), p, fingerprint(t, p), upper, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, p)); got != "{\"A\":1}\n{\"new\":1}\n" {
		t.Fatalf("content %q", got)
	}
	if got := mtimeOf(t, p); got.Before(start) {
		t.Fatalf("mtime %s was set back although the new file was appended to after the rename", got)
	}
}
