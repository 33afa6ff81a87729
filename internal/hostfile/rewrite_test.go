package hostfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// upper is a transform that upper-cases every byte.
func upper(dst io.Writer, src io.Reader) error {
	b, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	_, err = dst.Write(bytes.ToUpper(b))
	return err
}

// appendTo appends b to path the way a lock-ignoring appender does:
// open(O_APPEND), one write, close.
func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Error(err)
	}
}

// recordLogger keeps log messages.
type recordLogger struct {
	mu   sync.Mutex
	msgs []string
}

func (l *recordLogger) add(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, level+" "+msg+" "+fmt.Sprint(args...))
}
func (l *recordLogger) Debug(m string, a ...any) { l.add("DEBUG", m, a...) }
func (l *recordLogger) Info(m string, a ...any)  { l.add("INFO", m, a...) }
func (l *recordLogger) Warn(m string, a ...any)  { l.add("WARN", m, a...) }
func (l *recordLogger) Error(m string, a ...any) { l.add("ERROR", m, a...) }
func (l *recordLogger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "\n")
}

func TestRewriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n{\"b\":2}\n"))
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	base := fingerprint(t, p)
	var seen []byte
	err := Rewrite(context.Background(), p, base, func(dst io.Writer, src io.Reader) error {
		var err error
		seen, err = io.ReadAll(src)
		if err != nil {
			return err
		}
		_, err = dst.Write(bytes.ToUpper(seen))
		return err
	}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(seen) != "{\"a\":1}\n{\"b\":2}\n" {
		t.Fatalf("transform read %q", seen)
	}
	if got := readFile(t, p); string(got) != "{\"A\":1}\n{\"B\":2}\n" {
		t.Fatalf("content %q", got)
	}
	after := fingerprint(t, p)
	if after.Inode == base.Inode {
		t.Fatal("file was not replaced by a new inode")
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != DirLockName+" s.jsonl" {
		t.Fatalf("directory holds %v, want only the transcript and %s", names, DirLockName)
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, p string) (Stamp, WriteOptions)
		want  error
		msg   string
	}{
		{"Changed", func(t *testing.T, p string) (Stamp, WriteOptions) {
			v := fingerprint(t, p)
			appendTo(t, p, []byte("{\"c\":3}\n"))
			return v, WriteOptions{}
		}, bs.ErrChanged, "fingerprint is"},
		{"ReplacedInode", func(t *testing.T, p string) (Stamp, WriteOptions) {
			v := fingerprint(t, p)
			b := readFile(t, p)
			os.Remove(p)
			writeFile(t, p, b)
			return v, WriteOptions{}
		}, bs.ErrChanged, "fingerprint is"},
		{"LiveLockHolder", func(t *testing.T, p string) (Stamp, WriteOptions) {
			writeFile(t, p+".lock", Payload(livePID(t), time.Now()))
			return fingerprint(t, p), WriteOptions{Lock: LockOptions{Timeout: 100 * time.Millisecond}}
		}, bs.ErrBusy, "held by pid"},
		{"OtherBrainSurgeonWriter", func(t *testing.T, p string) (Stamp, WriteOptions) {
			fl := flock.New(filepath.Join(filepath.Dir(p), DirLockName))
			if ok, err := fl.TryLock(); !ok || err != nil {
				t.Fatal(ok, err)
			}
			t.Cleanup(func() { fl.Unlock() })
			return fingerprint(t, p), WriteOptions{Lock: LockOptions{Timeout: 100 * time.Millisecond}}
		}, bs.ErrBusy, "another BrainSurgeon writer"},
		{"RecheckFails", func(t *testing.T, p string) (Stamp, WriteOptions) {
			return fingerprint(t, p), WriteOptions{Recheck: func() error {
				if info, _ := InspectLock(p); !info.Live || info.PID != os.Getpid() {
					t.Errorf("Recheck ran without the host lock held: %+v", info)
				}
				return fmt.Errorf("run started: %w", bs.ErrBusy)
			}}
		}, bs.ErrBusy, "run started"},
		{"Missing", func(t *testing.T, p string) (Stamp, WriteOptions) {
			v := fingerprint(t, p)
			os.Rename(p, p+".deleted")
			return v, WriteOptions{}
		}, bs.ErrNotFound, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte("{\"a\":1}\n{\"b\":2}\n"))
			base, opts := tc.setup(t, p)
			var before string
			if exists(p) {
				before = fileSHA(t, p)
			}
			called := false
			err := Rewrite(context.Background(), p, base, func(dst io.Writer, src io.Reader) error {
				called = true
				return upper(dst, src)
			}, opts)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "rewrite "+p+": ") {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
			if called {
				t.Fatal("transform ran")
			}
			if exists(p) && fileSHA(t, p) != before {
				t.Fatal("transcript changed")
			}
			if temps := tempFiles(t, dir); len(temps) != 0 {
				t.Fatalf("temp files left: %v", temps)
			}
		})
	}
}

func TestRewriteTransformError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transform func(dst io.Writer, src io.Reader) error
		want      error
		msg       string
	}{
		{"Invalid", func(dst io.Writer, src io.Reader) error {
			dst.Write([]byte("partial"))
			return fmt.Errorf("line 2: splice past end: %w", bs.ErrInvalid)
		}, bs.ErrInvalid, "splice past end"},
		{"Changed", func(dst io.Writer, src io.Reader) error {
			io.Copy(dst, src)
			return fmt.Errorf("line 9: %w", bs.ErrChanged)
		}, bs.ErrChanged, "line 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, bytes.Repeat([]byte("{\"a\":1}\n"), 100000))
			before := fileSHA(t, p)
			err := Rewrite(context.Background(), p, fingerprint(t, p), tc.transform, WriteOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v", err)
			}
			if fileSHA(t, p) != before || len(tempFiles(t, dir)) != 0 || exists(p+".lock") {
				t.Fatal("original changed, or temp file or lock left")
			}
		})
	}
}

// TestRewriteCarryOver appends to the original while the transform runs,
// the way an appender that ignores the lock would, and checks that those
// bytes reach the new file with the newline rule documented at Rewrite.
func TestRewriteCarryOver(t *testing.T) {
	for _, tc := range []struct {
		name      string
		original  string
		transform func(dst io.Writer, src io.Reader) error
		appended  []string
		want      string
	}{
		{"OneLine", "{\"a\":1}\n", upper, []string{"{\"x\":1}\n"}, "{\"A\":1}\n{\"x\":1}\n"},
		{"SeveralAppends", "{\"a\":1}\n", upper, []string{"{\"x\":1}\n", "{\"y\":2}\n", "{\"z\":3}\n"},
			"{\"A\":1}\n{\"x\":1}\n{\"y\":2}\n{\"z\":3}\n"},
		{"PartialLineCopiedAfterRename", "{\"a\":1}\n", upper, []string{"{\"x\":1}\n{\"y\""},
			"{\"A\":1}\n{\"x\":1}\n{\"y\""},
		{"OutputWithoutFinalNewline", "{\"a\":1}\n", func(dst io.Writer, src io.Reader) error {
			_, err := dst.Write([]byte("{\"A\":1}"))
			return err
		}, []string{"{\"x\":1}\n"}, "{\"A\":1}\n{\"x\":1}\n"},
		{"AppenderAddsNewlineItself", "{\"a\":1}", upper, []string{"\n{\"x\":1}\n"}, "{\"A\":1}\n{\"x\":1}\n"},
		{"AppenderContinuesUnterminatedLine", "{\"a\":1}", upper, []string{"{\"x\":1}\n"}, "{\"A\":1}{\"x\":1}\n"},
		{"EmptyOriginal", "", upper, []string{"{\"x\":1}\n"}, "{\"x\":1}\n"},
		{"EmptyOutput", "{\"a\":1}\n", func(io.Writer, io.Reader) error { return nil }, []string{"{\"x\":1}\n"}, "{\"x\":1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte(tc.original))
			log := &recordLogger{}
			err := Rewrite(context.Background(), p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
				for _, a := range tc.appended {
					appendTo(t, p, []byte(a))
				}
				return tc.transform(dst, src)
			}, WriteOptions{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, p); string(got) != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
			if !strings.Contains(log.String(), "carried over") {
				t.Fatalf("carry-over not logged:\n%s", log)
			}
		})
	}
}

// TestRewriteLateAppend writes to the old file after the rename through a
// descriptor opened before it, the worst case for an appender ignoring the
// lock.
func TestRewriteLateAppend(t *testing.T) {
	t.Run("Lease", testRewriteLateAppend)
	// Without the lease probe: the /proc scan and the settle wait.
	t.Run("Fallback", func(t *testing.T) {
		probeWriters = func(*os.File) (bool, bool) { return false, false }
		defer func() { probeWriters = writersGone }()
		testRewriteLateAppend(t)
	})
}

func testRewriteLateAppend(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration // the late writer closes its descriptor after delay
		late  []string
		want  string
	}{
		{"Immediate", 0, []string{"{\"x\":1}\n"}, "{\"A\":1}\n{\"x\":1}\n"},
		{"WriterStillOpen", 40 * time.Millisecond, []string{"{\"x\":1}\n", "{\"y\":2}\n"}, "{\"A\":1}\n{\"x\":1}\n{\"y\":2}\n"},
		{"SplitLine", 20 * time.Millisecond, []string{"{\"x\":", "1}\n"}, "{\"A\":1}\n{\"x\":1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, []byte("{\"a\":1}\n"))
			var old *os.File
			var wg sync.WaitGroup
			afterRename = func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer old.Close()
					for _, s := range tc.late {
						time.Sleep(tc.delay / time.Duration(len(tc.late)))
						if _, err := old.Write([]byte(s)); err != nil {
							t.Error(err)
						}
					}
				}()
				if tc.delay == 0 {
					wg.Wait()
				}
			}
			defer func() { afterRename = nil }()
			err := Rewrite(context.Background(), p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
				var err error
				old, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					return err
				}
				return upper(dst, src)
			}, WriteOptions{})
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, p); string(got) != tc.want {
				t.Fatalf("content %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRewriteFollowsSymlink(t *testing.T) {
	realDir := t.TempDir()
	real := filepath.Join(realDir, "s.jsonl")
	writeFile(t, real, []byte("{\"a\":1}\n"))
	link := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(context.Background(), link, fingerprint(t, link), upper, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink was replaced")
	}
	if got := readFile(t, real); string(got) != "{\"A\":1}\n" {
		t.Fatalf("content %q", got)
	}
}

func TestRewriteCleansOwnTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n"))
	dead, live := deadPID(t), livePID(t)
	leftovers := map[string]bool{ // name → must survive
		fmt.Sprintf(".s.jsonl.bs-tmp-%d-aaaa", dead):      false,
		fmt.Sprintf(".s.jsonl.bs-tmp-%d-bbbb", live):      true,
		fmt.Sprintf(".other.jsonl.bs-tmp-%d-cccc", dead):  true, // not this file's
		fmt.Sprintf(".s.jsonl.lock.bs-tmp-%d-dddd", dead): false,
		fmt.Sprintf(".s.jsonl.lock.bs-tmp-%d-eeee", live): true,
	}
	for n := range leftovers {
		writeFile(t, filepath.Join(dir, n), []byte("junk"))
	}
	if err := Rewrite(context.Background(), p, fingerprint(t, p), upper, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for n, keep := range leftovers {
		if exists(filepath.Join(dir, n)) != keep {
			t.Errorf("%s: exists=%v, want %v", n, !keep, keep)
		}
	}
}

func TestCleanTemps(t *testing.T) {
	dir := t.TempDir()
	dead, live := deadPID(t), livePID(t)
	old := time.Now().Add(-2 * time.Hour)
	for _, tc := range []struct {
		name   string
		file   string
		mtime  time.Time
		remove bool
	}{
		{"DeadWriter", fmt.Sprintf(".a.jsonl.bs-tmp-%d-0123", dead), time.Time{}, true},
		{"LiveWriter", fmt.Sprintf(".b.jsonl.bs-tmp-%d-0123", live), time.Time{}, false},
		{"LiveWriterTooOld", fmt.Sprintf(".c.jsonl.bs-tmp-%d-0123", live), old, true},
		{"NotATempFile", "d.jsonl", old, false},
		{"NoDotPrefix", fmt.Sprintf("e.jsonl.bs-tmp-%d-0123", dead), old, false},
		{"NoRandomPart", fmt.Sprintf(".f.jsonl.bs-tmp-%d", dead), old, false},
	} {
		p := filepath.Join(dir, tc.file)
		writeFile(t, p, []byte("x"))
		if !tc.mtime.IsZero() {
			os.Chtimes(p, tc.mtime, tc.mtime)
		}
		defer t.Run(tc.name, func(t *testing.T) {
			if exists(p) == tc.remove {
				t.Fatalf("exists=%v, want removed=%v", exists(p), tc.remove)
			}
		})
	}
	n, err := CleanTemps(dir, time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("CleanTemps = %d, %v; want 2", n, err)
	}
}

func TestFingerprint(t *testing.T) {
	p := newTranscript(t)
	v := fingerprint(t, p)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v2, err := FingerprintFile(f)
	if err != nil || v2 != v {
		t.Fatalf("FingerprintFile = %+v, %v; Fingerprint = %+v", v2, err, v)
	}
	fi, _ := os.Stat(p)
	if v.Size != fi.Size() || v.ModTime != fi.ModTime().UnixNano() || v.Inode == 0 {
		t.Fatalf("fingerprint %+v", v)
	}
	if _, err := Fingerprint(p + ".missing"); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestRewriteKeepsOwner: run as root (as in CI), the rewritten transcript
// keeps its owner and the lock file belongs to the directory's owner, so
// the host's user can read and judge it. Not as root, both stay ours.
func TestRewriteKeepsOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n"))
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = 4321, 4322
		for _, f := range []string{dir, p} {
			if err := os.Chown(f, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	lockUID := -1
	err := Rewrite(context.Background(), p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
		fi, err := os.Stat(p + ".lock")
		if err != nil {
			return err
		}
		lockUID = int(fi.Sys().(*syscall.Stat_t).Uid)
		return upper(dst, src)
	}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(p)
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || int(st.Gid) != gid || lockUID != uid {
		t.Fatalf("transcript owned by %d:%d, lock by %d; want %d:%d", st.Uid, st.Gid, lockUID, uid, gid)
	}
}

func TestRewriteCanceled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, bytes.Repeat([]byte("{\"a\":1}\n"), 1<<17))
	before := fileSHA(t, p)
	ctx, cancel := context.WithCancel(context.Background())
	err := Rewrite(ctx, p, fingerprint(t, p), func(dst io.Writer, src io.Reader) error {
		buf := make([]byte, 4096)
		for i := 0; ; i++ {
			if i == 3 {
				cancel()
			}
			n, err := src.Read(buf)
			if err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			dst.Write(buf[:n])
		}
	}, WriteOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if fileSHA(t, p) != before || len(tempFiles(t, dir)) != 0 || exists(p+".lock") {
		t.Fatal("original changed, or temp file or lock left")
	}
}

// TestRewriteGate checks WriteOptions.Gate: it runs once the new content
// is in a synced temp file, before the rename, with the locks held; its
// error leaves the original in place with no temp file or lock left.
func TestRewriteGate(t *testing.T) {
	t.Run("passes", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "s.jsonl")
		writeFile(t, p, []byte("{\"a\":1}\n"))
		calls := 0
		gate := func() error {
			calls++
			if got := readFile(t, p); string(got) != "{\"a\":1}\n" {
				t.Errorf("original already replaced at the gate: %q", got)
			}
			if n := len(tempFiles(t, dir)); n != 1 {
				t.Errorf("%d temp files at the gate, want the new content's", n)
			}
			if !exists(p + ".lock") {
				t.Error("host lock not held at the gate")
			}
			return nil
		}
		if err := Rewrite(context.Background(), p, fingerprint(t, p), upper, WriteOptions{Gate: gate}); err != nil {
			t.Fatal(err)
		}
		if calls != 1 || string(readFile(t, p)) != "{\"A\":1}\n" {
			t.Fatalf("gate called %d times, content %q", calls, readFile(t, p))
		}
	})
	t.Run("refuses", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "s.jsonl")
		writeFile(t, p, []byte("{\"a\":1}\n"))
		before := fileSHA(t, p)
		errSide := errors.New("side records not durable")
		err := Rewrite(context.Background(), p, fingerprint(t, p), upper, WriteOptions{Gate: func() error { return errSide }})
		if !errors.Is(err, errSide) || !strings.Contains(err.Error(), "not renamed") {
			t.Fatalf("err = %v, want the gate's error", err)
		}
		if fileSHA(t, p) != before || len(tempFiles(t, dir)) != 0 || exists(p+".lock") {
			t.Fatal("original changed, or temp file or lock left")
		}
	})
}
