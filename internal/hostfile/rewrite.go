package hostfile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"golang.org/x/sys/unix"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// DirLockName is the name of the per-directory file that BrainSurgeon
// writers flock(2) exclusively around every rewrite and append, so that two
// BrainSurgeon processes (or goroutines) never race each other. It is a dot
// file that matches no host pattern ("*.jsonl*"), so hosts ignore it. It is
// created on first use (mode 0600) and never removed.
const DirLockName = ".brainsurgeon.flock"

// tempMarker is the part of a temp file name after ".<base>".
const tempMarker = ".bs-tmp-"

const (
	copyBufferSize = 1 << 20
	// lateWriterWait bounds how long Rewrite waits, after the rename, for
	// processes that still have the old file open for writing.
	lateWriterWait = 2 * time.Second
	latePoll       = 5 * time.Millisecond
	lateStableRuns = 3
	// leasePollMin and leasePollMax bound the exponential polls while
	// a lease probe shows a writer that still has the old file open.
	leasePollMin = 50 * time.Microsecond
	leasePollMax = 5 * time.Millisecond
)

// WriteOptions configures Rewrite and Append. The zero value means the
// defaults.
type WriteOptions struct {
	// Lock configures the host lock. Its Clock and Logger default to the
	// ones below. Lock.Timeout also bounds the wait for the directory
	// flock.
	Lock LockOptions
	// Logger receives the write's log records. Nil means discard.
	Logger bs.Logger
	// Clock tells the time. Nil means the system clock.
	Clock bs.Clock
	// Recheck, when not nil, is called once both locks are held (and, for
	// Rewrite, the fingerprint matched), before anything is written. An
	// error aborts the write and is returned wrapped. Use it to re-check
	// the host's idle state under the lock.
	Recheck func() error
	// Gate, when not nil, is called by Rewrite once the new content is
	// durable (the temp file fsynced), right before it replaces the
	// original; an error aborts the rewrite, the original untouched, and
	// is returned wrapped.
	Gate func() error
}

func (o WriteOptions) lockOptions() LockOptions {
	lo := o.Lock
	if lo.Clock == nil {
		lo.Clock = o.Clock
	}
	if lo.Logger == nil {
		lo.Logger = o.Logger
	}
	return lo
}

// locked holds both locks of a write.
type locked struct {
	dir  *flock.Flock
	host *Lock
	log  bs.Logger
}

func (l *locked) release() {
	if l.host != nil {
		if err := l.host.Release(); err != nil {
			l.log.Warn("release host lock", "err", err)
		}
	}
	if l.dir != nil {
		if err := l.dir.Unlock(); err != nil {
			l.log.Warn("release directory flock", "err", err)
		}
	}
}

// lockBoth takes the directory flock of dir, then the host lock of
// transcriptPath.
func lockBoth(ctx context.Context, dir, transcriptPath string, opts WriteOptions) (*locked, error) {
	lo := opts.lockOptions()
	l := &locked{log: bs.LoggerOrDiscard(opts.Logger)}
	fl, err := lockDir(ctx, dir, lo.timeout())
	if err != nil {
		return nil, err
	}
	l.dir = fl
	h, err := Acquire(ctx, transcriptPath, lo)
	if err != nil {
		l.release()
		return nil, err
	}
	l.host = h
	return l, nil
}

// lockDir takes the exclusive flock on dir/DirLockName, waiting at most
// timeout (a single try when timeout < 0).
func lockDir(ctx context.Context, dir string, timeout time.Duration) (*flock.Flock, error) {
	p := filepath.Join(dir, DirLockName)
	fl := flock.New(p, flock.SetPermissions(0o600))
	var ok bool
	var err error
	if timeout < 0 {
		ok, err = fl.TryLock()
	} else {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		ok, err = fl.TryLockContext(tctx, 10*time.Millisecond)
		cancel()
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = nil // our own timeout: busy, not an error
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lock directory %s: %w", p, err)
	}
	if !ok {
		return nil, fmt.Errorf("another BrainSurgeon writer holds %s: %w", p, bs.ErrBusy)
	}
	return fl, nil
}

// Rewrite replaces the transcript at path by what transform writes to dst
// when it reads the transcript's first base.Size bytes from src, following
// the host-safety protocol (docs/ARCHITECTURE.md, "Host safety"):
//
//  1. take the directory flock ([DirLockName]) and the host lock
//     ([Acquire]); remove this file's temp files left by dead writers;
//  2. open the transcript, keep it open, and check that its fingerprint is
//     still base, else return an error wrapping brainsurgeon.ErrChanged;
//     then call opts.Recheck;
//  3. stream transform(temp, original) through buffered I/O into
//     ".<base>.bs-tmp-<pid>-<random>" in the same directory, give it the
//     original's mode (and owner when running as root), fsync it;
//  4. carry over foreign appends: bytes that an appender ignoring the lock
//     added to the original after base are copied to the end of the temp
//     file (complete lines only at this point);
//  5. check that the path still names the file that was opened, rename the
//     temp file over it and fsync the directory;
//  6. carry over late appends: bytes that still reach the old file (an
//     appender that opened it before the rename) are appended to the new
//     file with O_APPEND and fsynced. Rewrite waits (up to 2 s) until no
//     process has the old file open for writing. On Linux it asks the
//     kernel through a read lease probe (two fcntl calls, microseconds,
//     whatever the number of processes; see writersGone), polling with
//     exponential backoff (50 µs to 5 ms) only while a writer is still
//     open. Where the probe cannot answer (leases disabled, a file we
//     neither own nor hold CAP_LEASE for, a file system without leases)
//     it scans /proc for writers and then waits until the old file's size
//     has been stable for 5 ms; without /proc (macOS) only the latter.
//
// The new file keeps the original's modification time (see mtime.go): just
// before the rename the temp file gets the original's current mtime
// (carried-over bytes included) and the access time the original had before
// it was read; after step 6 the new file gets the old file's last mtime
// again, unless another process appended to the new file itself (then its
// own, newer, mtime stays).
//
// Newlines on carry-over: the carried bytes "start a fresh line" when the
// original's byte before them is "\n" (or the original was empty). Then,
// if the content they follow does not end in "\n", a "\n" is written first
// so the carried line is not glued to ours. When they do not start a fresh
// line, the appender continued the original's unterminated last line; the
// bytes are copied as they are, which keeps that continuation exactly as
// the appender wrote it. This rule applies before the rename only; late
// bytes (step 6) are copied as they are, because the new file is then
// being appended to by others and its last byte cannot be read reliably.
//
// Any error before the rename removes the temp file and leaves the
// original untouched; the error says what failed, for example
// "rewrite /x/y.jsonl: write temp file: write …: no space left on device".
// An error after the rename (syncing the directory, carrying over late
// appends) says the new content is in place. Canceling ctx stops the
// transform at its next read. transform's own errors are returned wrapped as they are, so a
// transform may return brainsurgeon.ErrInvalid or ErrChanged.
func Rewrite(ctx context.Context, path string, base Stamp, transform func(dst io.Writer, src io.Reader) error, opts WriteOptions) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("rewrite %s: %w", path, err)
		}
	}()
	log := bs.LoggerOrDiscard(opts.Logger)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return notFound(err)
	}
	dir, name := filepath.Split(real)
	dir = filepath.Clean(dir)
	l, err := lockBoth(ctx, dir, path, opts)
	if err != nil {
		return err
	}
	var orig *os.File
	defer func() {
		l.release()
		// The original is closed after the locks are released: once
		// renamed over, its last close frees its blocks, 17–29 ms for a
		// 100 MB transcript here (strace), which the host need not wait
		// for.
		if orig != nil {
			orig.Close()
		}
	}()
	if n, err := cleanTemps(dir, name, 0, log); err != nil {
		log.Warn("remove leftover temp files", "dir", dir, "err", err)
	} else if n > 0 {
		log.Info("removed leftover temp files of dead writers", "file", real, "count", n)
	}

	orig, err = os.Open(real)
	if err != nil {
		return fmt.Errorf("open original: %w", notFound(err))
	}
	cur, err := FingerprintFile(orig)
	if err != nil {
		return err
	}
	if cur != base {
		return fmt.Errorf("fingerprint is %s, read was %s: %w", describe(cur), describe(base), bs.ErrChanged)
	}
	fi, err := orig.Stat()
	if err != nil {
		return fmt.Errorf("stat original: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: %w", real, bs.ErrInvalid)
	}
	atime0, err := timesOfInfo(fi)
	if err != nil {
		return err
	}
	if opts.Recheck != nil {
		if err := opts.Recheck(); err != nil {
			return err
		}
	}

	tmp, tmpPath, err := createTemp(dir, name)
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			if rerr := os.Remove(tmpPath); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				log.Warn("remove temp file", "path", tmpPath, "err", rerr)
			}
		}
	}()

	tw := &trackWriter{w: tmp}
	bw := bufio.NewWriterSize(tw, copyBufferSize)
	src := &trackReader{ctx: ctx, r: io.NewSectionReader(orig, 0, base.Size)}
	if err := transform(bw, src); err != nil {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case tw.err != nil:
			return fmt.Errorf("write temp file: %w", tw.err)
		case src.err != nil:
			return fmt.Errorf("read original: %w", src.err)
		}
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write temp file: %w", err)
	}

	// Carry-over before the rename: complete lines only, so that a line
	// still being written is never split between two copies.
	co := &carry{orig: orig, next: base.Size, log: log}
	if err := co.copy(tw, tw.last, true); err != nil {
		return err
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		return fmt.Errorf("chmod temp file: %w", err)
	}
	if os.Geteuid() == 0 {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, syscall.EPERM) {
				return fmt.Errorf("chown temp file: %w", err)
			}
		}
	}
	// Keep the modification time (a rewrite must not look newer to the
	// host): the new file gets the original's current mtime, carried-over
	// appends included, and the access time the original had before we read
	// it.
	mtime, err := timesOf(orig)
	if err != nil {
		return fmt.Errorf("original: %w", err)
	}
	if err := setTimes(tmp, fileTimes{atime: atime0.atime, mtime: mtime.mtime}); err != nil {
		return fmt.Errorf("temp file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temp file: %w", err)
	}
	if opts.Gate != nil {
		if err := opts.Gate(); err != nil {
			return fmt.Errorf("not renamed: %w", err)
		}
	}
	// The transcript must still be the file we opened: a writer that
	// ignores the lock may have replaced it.
	if now, err := os.Lstat(real); err != nil {
		return fmt.Errorf("stat original before rename: %w (%w)", err, bs.ErrChanged)
	} else if d, i, _ := devIno(now); d != cur.Dev || i != cur.Inode {
		return fmt.Errorf("%s was replaced by another writer: %w", real, bs.ErrChanged)
	}
	if err := os.Rename(tmpPath, real); err != nil {
		return fmt.Errorf("rename temp file: %w", err)
	}
	renamed = true
	defer tmp.Close()
	if co.next > base.Size {
		log.Info("carried over bytes appended by a writer ignoring the lock", "file", real, "bytes", co.next-base.Size)
	}
	syncErr := atomicfile.SyncDir(dir)

	// Late appends go to the new file with O_APPEND, so they never
	// overwrite what other appenders add to it meanwhile.
	before := co.next
	if afterRename != nil {
		afterRename()
	}
	lateErr := co.late(ctx, tmp, cur)
	if co.next > before {
		log.Info("carried over bytes appended to the old file after the rename", "file", real, "bytes", co.next-before)
	}
	retimed := false
	if lateErr == nil {
		retimed, lateErr = keepLastMtime(orig, tmp, tw.n+co.next-before, log)
	}
	if co.next > before || retimed {
		if err := tmp.Sync(); err != nil && lateErr == nil {
			lateErr = fmt.Errorf("sync: %w", err)
		}
	}
	if syncErr != nil {
		return fmt.Errorf("renamed, but sync directory failed (the new content is in place): %w", syncErr)
	}
	if lateErr != nil {
		return fmt.Errorf("renamed, but carrying over late appends failed (the new content is in place): %w", lateErr)
	}
	return nil
}

func describe(v Stamp) string {
	return fmt.Sprintf("(dev %d, inode %d, size %d, mtime %d)", v.Dev, v.Inode, v.Size, v.ModTime)
}

// afterRename is a test hook called right after the rename.
var afterRename func()

// probeWriters is writersGone; tests replace it to force the fallback.
var probeWriters = writersGone

// carry copies bytes appended to the original after base.
type carry struct {
	orig *os.File
	next int64 // first byte of the original not yet carried over
	log  bs.Logger
}

// copy copies the original's bytes from c.next to its current end (or only
// to its last "\n" when wholeLines) to dst. last tells dst's last byte and
// whether dst is empty, for the newline rule documented at Rewrite. copy
// fails with ErrChanged when the original shrank.
func (c *carry) copy(dst io.Writer, last func() (b byte, empty bool, err error), wholeLines bool) error {
	fi, err := c.orig.Stat()
	if err != nil {
		return fmt.Errorf("stat original: %w", err)
	}
	size := fi.Size()
	if size < c.next {
		return fmt.Errorf("original shrank from %d to %d bytes while locked: %w", c.next, size, bs.ErrChanged)
	}
	if size == c.next {
		return nil
	}
	chunk := make([]byte, size-c.next)
	if _, err := c.orig.ReadAt(chunk, c.next); err != nil {
		return fmt.Errorf("read appended bytes: %w", err)
	}
	if wholeLines {
		i := bytes.LastIndexByte(chunk, '\n')
		if i < 0 {
			return nil
		}
		chunk = chunk[:i+1]
	}
	n := int64(len(chunk))
	fresh := c.next == 0
	if !fresh {
		var b [1]byte
		if _, err := c.orig.ReadAt(b[:], c.next-1); err != nil {
			return fmt.Errorf("read original: %w", err)
		}
		fresh = b[0] == '\n'
	}
	if fresh && chunk[0] != '\n' {
		lb, empty, err := last()
		if err != nil {
			return err
		}
		if !empty && lb != '\n' {
			chunk = append([]byte{'\n'}, chunk...)
		}
	}
	if _, err := dst.Write(chunk); err != nil {
		return fmt.Errorf("write temp file: %w", err)
	}
	c.next += n
	return nil
}

// late carries over bytes that reach the old file after the rename to the
// new file f (the renamed temp file, switched to O_APPEND so the bytes
// never overwrite what other appenders add to it meanwhile). old is the
// old file's version. When ctx is done it stops waiting for late writers
// and carries over what has arrived (the rename is done; giving up the
// copy would lose bytes).
//
// What is guaranteed, and the window that remains: when the lease probe
// says no descriptor is open for writing on the old inode, nothing can
// add bytes to it any more, because the rename took its only name, so
// the final copy is complete; a writer that opened it before the rename
// and writes late keeps the probe failing, and its bytes are carried over
// as long as it closes its descriptor within lateWriterWait (2 s). Bytes
// are lost only (1) when a writer keeps the old file open longer than
// that and writes after we stop (logged as a warning, as before), or (2)
// when the old inode is reachable by another name (a hard link) or is
// reopened for writing through /proc/<pid>/fd after the probe: no
// appender of a transcript does either. The /proc fallback has the same
// window (1) and, like any scan, can miss a writer that opens and writes
// between two scans only through such a second name.
func (c *carry) late(ctx context.Context, f *os.File, old Stamp) error {
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("fcntl: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFL, flags|unix.O_APPEND); err != nil {
		return fmt.Errorf("set O_APPEND: %w", err)
	}
	// No newline is ever added in front of late bytes. The new file ended
	// with the same byte as the original's carried-over part at the
	// rename, and what other writers append to it since is theirs. Reading
	// its last byte here would race with those appends: the kernel grows
	// the size page by page while a write is in flight, so a half-visible
	// line would look unterminated and an empty line would be added.
	last := func() (byte, bool, error) { return '\n', false, nil }
	deadline := time.Now().Add(lateWriterWait)
	prev := int64(-1)
	wait := leasePollMin
	useLease := true
	for {
		if err := c.copy(f, last, true); err != nil {
			return err
		}
		if useLease {
			// The fast path: one kernel question, independent of the
			// number of processes (see writersGone).
			gone, ok := probeWriters(c.orig)
			switch {
			case ok && gone:
				// Nobody can write to the old inode any more: it has
				// no name left and no writer. Copy what is there.
				return c.copy(f, last, false)
			case ok:
				// A writer still has the old file open (it may write
				// late). Poll with exponential backoff.
				if !time.Now().Before(deadline) {
					c.log.Warn("a process still has the replaced transcript open for writing; later bytes it writes there are not carried over",
						"file", f.Name())
					return c.copy(f, last, false)
				}
				if !sleepCtx(ctx, wait) {
					return c.copy(f, last, false)
				}
				wait = min(2*wait, leasePollMax)
				continue
			}
			useLease = false // unknown here: fall back to /proc
		}
		if writers, ok := foreignWriters(old.Dev, old.Inode); ok && writers > 0 {
			if !time.Now().Before(deadline) {
				c.log.Warn("a process still has the replaced transcript open for writing; later bytes it writes there are not carried over",
					"file", f.Name(), "writers", writers)
				break
			}
			prev = -1
			if !sleepCtx(ctx, latePoll/2) {
				break
			}
			continue
		}
		fi, err := c.orig.Stat()
		if err != nil {
			return fmt.Errorf("stat original: %w", err)
		}
		if fi.Size() == prev || !time.Now().Before(deadline) {
			break // stable for one poll interval
		}
		prev = fi.Size()
		if !sleepCtx(ctx, latePoll) {
			break
		}
	}
	// Whatever is left, including an unterminated last line.
	return c.copy(f, last, false)
}

// sleepCtx sleeps for d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lastByte returns the last byte of f and whether f is empty.
func lastByte(f *os.File) (byte, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false, fmt.Errorf("stat: %w", err)
	}
	if fi.Size() == 0 {
		return 0, true, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil {
		return 0, false, fmt.Errorf("read last byte: %w", err)
	}
	return b[0], false, nil
}

// trackWriter remembers the first write error, the byte count and the last
// byte written.
type trackWriter struct {
	w   io.Writer
	n   int64
	lb  byte
	err error
}

func (t *trackWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	if n > 0 {
		t.lb = p[n-1]
	}
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

func (t *trackWriter) last() (byte, bool, error) { return t.lb, t.n == 0, nil }

// trackReader remembers the first read error other than io.EOF, and
// stops reading when ctx is done.
type trackReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (t *trackReader) Read(p []byte) (int, error) {
	if err := t.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// createTemp creates ".<name>.bs-tmp-<pid>-<random>" in dir, mode 0600.
func createTemp(dir, name string) (*os.File, string, error) {
	for range 10 {
		var r [6]byte
		if _, err := rand.Read(r[:]); err != nil {
			return nil, "", err
		}
		p := filepath.Join(dir, "."+name+tempMarker+strconv.Itoa(os.Getpid())+"-"+hex.EncodeToString(r[:]))
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, p, err
	}
	return nil, "", errors.New("could not find a free temp file name")
}

// CleanTemps removes the temp files ".<name>.bs-tmp-<pid>-<random>" in dir
// (transcript copies and lock payloads being prepared) that writers left
// behind: those whose pid no longer runs (by the same
// rules as the host lock), and, when olderThan > 0, those older than
// olderThan whatever their pid (it may have been recycled). Removing the
// temp file of a writer that still runs is harmless: its rename fails and
// its original stays untouched. CleanTemps returns how many files it
// removed.
func CleanTemps(dir string, olderThan time.Duration) (int, error) {
	return cleanTemps(dir, "", olderThan, nil)
}

// cleanTemps is CleanTemps limited to the temp files of one transcript
// name when name is not empty.
func cleanTemps(dir, name string, olderThan time.Duration, log bs.Logger) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("clean temp files: %w", notFound(err))
	}
	removed := 0
	var errs []error
	for _, e := range ents {
		pid, ok := tempPID(e.Name(), name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		alive, _ := pidState(pid)
		if alive && olderThan > 0 {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > olderThan {
				alive = false
			}
		}
		if alive {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		removed++
		if log != nil {
			log.Debug("removed leftover temp file", "path", filepath.Join(dir, e.Name()), "pid", pid)
		}
	}
	if len(errs) > 0 {
		return removed, fmt.Errorf("clean temp files: %w", errors.Join(errs...))
	}
	return removed, nil
}

// tempPID parses a temp file name ".<name>.bs-tmp-<pid>-<random>" and
// returns its pid. When name is not empty the file must belong to it or to
// its lock (".<name>.lock.bs-tmp-…", see create).
func tempPID(file, name string) (int, bool) {
	if !strings.HasPrefix(file, ".") {
		return 0, false
	}
	i := strings.LastIndex(file, tempMarker)
	if i < 2 {
		return 0, false
	}
	if name != "" && file[1:i] != name && file[1:i] != name+".lock" {
		return 0, false
	}
	rest := file[i+len(tempMarker):]
	j := strings.IndexByte(rest, '-')
	if j <= 0 || j == len(rest)-1 {
		return 0, false
	}
	pid, err := strconv.Atoi(rest[:j])
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// Append adds lines at the end of the transcript at path under the same
// locks as Rewrite. It never creates a missing file (the error wraps
// brainsurgeon.ErrNotFound). If the file's last byte is not "\n", a "\n"
// is written first; then every line followed by "\n", all in a single
// write(2) on an O_APPEND descriptor, which is then fsynced. A line that is
// empty or holds "\n" is refused before anything is locked or written (the
// error wraps brainsurgeon.ErrInvalid). opts.Recheck runs once both locks
// are held.
func Append(ctx context.Context, path string, lines [][]byte, opts WriteOptions) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("append %s: %w", path, err)
		}
	}()
	size := 0
	for i, ln := range lines {
		switch {
		case len(ln) == 0:
			return fmt.Errorf("line %d of %d is empty: %w", i+1, len(lines), bs.ErrInvalid)
		case bytes.IndexByte(ln, '\n') >= 0:
			return fmt.Errorf("line %d of %d contains a newline: %w", i+1, len(lines), bs.ErrInvalid)
		}
		size += len(ln) + 1
	}
	if len(lines) == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return notFound(err)
	}
	l, err := lockBoth(ctx, filepath.Dir(real), path, opts)
	if err != nil {
		return err
	}
	defer l.release()
	if opts.Recheck != nil {
		if err := opts.Recheck(); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(real); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: %w", real, bs.ErrInvalid)
	}
	f, err := os.OpenFile(real, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open: %w", notFound(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file: %w", real, bs.ErrInvalid)
	}
	buf := make([]byte, 0, size+1)
	if lb, empty, err := lastByte(f); err != nil {
		return err
	} else if !empty && lb != '\n' {
		buf = append(buf, '\n')
	}
	for _, ln := range lines {
		buf = append(buf, ln...)
		buf = append(buf, '\n')
	}
	if n, err := f.Write(buf); err != nil {
		undoAppend(f, fi.Size(), int64(n), l.log)
		return fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// undoAppend cuts off the n bytes of a failed append (a short write on a
// full disk) so no partial line stays behind, but only when nobody else
// appended meanwhile: the file must be exactly size+n bytes long.
func undoAppend(f *os.File, size, n int64, log bs.Logger) {
	if n == 0 {
		return
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != size+n {
		log.Warn("a failed append left a partial line", "file", f.Name(), "bytes", n)
		return
	}
	if err := f.Truncate(size); err != nil {
		log.Warn("a failed append left a partial line", "file", f.Name(), "bytes", n, "err", err)
	}
}
