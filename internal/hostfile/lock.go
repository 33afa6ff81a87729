package hostfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// Defaults of [LockOptions].
const (
	// DefaultLockTimeout is how long Acquire waits for a live holder.
	DefaultLockTimeout = 10 * time.Second
	// DefaultStaleAfter is the lock age after which OpenClaw (≤ 2026.4)
	// treats a lock as stale whatever its holder.
	DefaultStaleAfter = 30 * time.Minute
	// PayloadGrace is how long a lock file without a readable payload is
	// respected, counted from the lock file's modification time: its holder
	// may be between the exclusive create and the write of the payload.
	PayloadGrace = 30 * time.Second
)

const (
	lockRetryMin = 50 * time.Millisecond
	lockRetryMax = time.Second
	maxLockBytes = 64 << 10
)

// LockOptions configures how the host lock is taken and judged. The zero
// value means the defaults.
type LockOptions struct {
	// Timeout bounds how long Acquire waits while a live holder has the
	// lock. Zero means DefaultLockTimeout; a negative value means a single
	// attempt.
	Timeout time.Duration
	// StaleAfter is the age (from the payload's createdAt) after which a
	// lock is stale even if its holder runs. Zero means DefaultStaleAfter.
	StaleAfter time.Duration
	// Clock tells the time written into createdAt and used to judge ages.
	// Nil means the system clock. Waiting always uses real time.
	Clock bs.Clock
	// Logger receives a record when a stale lock is taken over. Nil means
	// discard.
	Logger bs.Logger
}

func (o LockOptions) timeout() time.Duration {
	if o.Timeout == 0 {
		return DefaultLockTimeout
	}
	return o.Timeout
}

func (o LockOptions) staleAfter() time.Duration {
	if o.StaleAfter <= 0 {
		return DefaultStaleAfter
	}
	return o.StaleAfter
}

// LockInfo describes the host lock of a transcript as judged by OpenClaw's
// rules.
type LockInfo struct {
	// Path is the lock file's path.
	Path string
	// Exists is true when the lock file exists.
	Exists bool
	// PID is the holder's process id from the payload, or 0 when the
	// payload has none.
	PID int
	// CreatedAt is the payload's createdAt, or the zero time when missing
	// or invalid.
	CreatedAt time.Time
	// ModTime is the lock file's modification time.
	ModTime time.Time
	// Live is true when the lock is held by a live holder: it exists and
	// is not stale. A lock without a readable payload that is younger than
	// PayloadGrace counts as live.
	Live bool
	// StaleReason says why an existing lock is stale; it is empty when the
	// lock is live or absent.
	StaleReason string

	raw      []byte
	dev, ino uint64
}

// Age returns how long the lock has been held at now: since CreatedAt, or
// since ModTime when CreatedAt is unknown.
func (i LockInfo) Age(now time.Time) time.Duration {
	if !i.CreatedAt.IsZero() {
		return now.Sub(i.CreatedAt)
	}
	return now.Sub(i.ModTime)
}

// Holder describes the holder for messages: "pid 123 (held 2.5s)".
func (i LockInfo) holder(now time.Time) string {
	age := roundAge(i.Age(now))
	if i.PID == 0 {
		return fmt.Sprintf("a holder that has not written its payload yet (lock file %s old)", age)
	}
	return fmt.Sprintf("pid %d (held %s)", i.PID, age)
}

// roundAge rounds d for messages: milliseconds below a minute, seconds
// above.
func roundAge(d time.Duration) time.Duration {
	if d < time.Minute && d > -time.Minute {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// LockPath returns the host lock path of a transcript:
// "<realpath(dir)>/<base>.lock", as OpenClaw computes it.
func LockPath(transcriptPath string) (string, error) {
	abs, err := filepath.Abs(transcriptPath)
	if err != nil {
		return "", fmt.Errorf("lock path: %w", err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("lock path: %w", notFound(err))
	}
	return filepath.Join(dir, filepath.Base(abs)+".lock"), nil
}

// InspectLock judges the host lock of a transcript with the default
// options. It never changes anything.
func InspectLock(transcriptPath string) (LockInfo, error) {
	return InspectLockWith(transcriptPath, LockOptions{})
}

// InspectLockWith judges the host lock of a transcript with opts (only
// StaleAfter and Clock matter). It never changes anything.
func InspectLockWith(transcriptPath string, opts LockOptions) (LockInfo, error) {
	lp, err := LockPath(transcriptPath)
	if err != nil {
		return LockInfo{}, err
	}
	return inspect(lp, opts)
}

// inspect reads and judges the lock file at lp.
func inspect(lp string, opts LockOptions) (LockInfo, error) {
	info := LockInfo{Path: lp}
	f, err := os.Open(lp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return info, nil
		}
		// Unreadable: judge it by its modification time like a lock
		// without payload.
		fi, serr := os.Lstat(lp)
		if serr != nil {
			if errors.Is(serr, fs.ErrNotExist) {
				return info, nil
			}
			return info, fmt.Errorf("inspect lock %s: %w", lp, err)
		}
		info.Exists, info.ModTime = true, fi.ModTime()
		info.dev, info.ino, _ = devIno(fi)
		judgeNoPayload(&info, "unreadable payload ("+err.Error()+")", opts)
		return info, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return info, fmt.Errorf("inspect lock %s: %w", lp, err)
	}
	info.Exists, info.ModTime = true, fi.ModTime()
	info.dev, info.ino, _ = devIno(fi)
	raw, err := io.ReadAll(io.LimitReader(f, maxLockBytes))
	if err != nil {
		judgeNoPayload(&info, "unreadable payload ("+err.Error()+")", opts)
		return info, nil
	}
	info.raw = raw
	judge(&info, raw, opts)
	return info, nil
}

// judgeNoPayload judges a lock whose payload is missing or unusable: it is
// live during PayloadGrace after the lock file's modification time, stale
// afterwards.
func judgeNoPayload(info *LockInfo, what string, opts LockOptions) {
	age := bs.Now(opts.Clock).Sub(info.ModTime)
	if age < PayloadGrace {
		info.Live = true
		return
	}
	info.StaleReason = fmt.Sprintf("%s and lock file %s old", what, age.Round(time.Second))
}

// judge applies OpenClaw's stale rules to a parsed payload.
func judge(info *LockInfo, raw []byte, opts LockOptions) {
	if len(bytes.TrimSpace(raw)) == 0 {
		judgeNoPayload(info, "empty payload", opts)
		return
	}
	var p struct {
		PID       json.RawMessage `json:"pid"`
		CreatedAt json.RawMessage `json:"createdAt"`
		StartTime json.RawMessage `json:"starttime"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		judgeNoPayload(info, "unparsable payload", opts)
		return
	}
	var pid float64
	if len(p.PID) == 0 || json.Unmarshal(p.PID, &pid) != nil || pid != math.Trunc(pid) || pid > math.MaxInt32 {
		info.StaleReason = "payload has no numeric pid"
		return
	}
	info.PID = int(pid)
	var created string
	if len(p.CreatedAt) > 0 && json.Unmarshal(p.CreatedAt, &created) == nil {
		if t, err := time.Parse(time.RFC3339Nano, created); err == nil {
			info.CreatedAt = t
		}
	}
	if info.PID == os.Getpid() {
		if !heldHere(info.Path, info.dev, info.ino) {
			info.StaleReason = fmt.Sprintf("pid %d is this process, which does not hold the lock", info.PID)
			return
		}
	} else if alive, why := pidState(info.PID); !alive {
		info.StaleReason = why
		return
	} else if recorded, ok := startTime(p.StartTime); ok {
		// OpenClaw records the holder's start time on Linux; a different
		// one means the pid now belongs to another process.
		if actual, ok := procStartTime(info.PID); ok && actual != recorded {
			info.StaleReason = fmt.Sprintf("pid %d was recycled (starttime %d, lock says %d)", info.PID, actual, recorded)
			return
		}
	}
	now := bs.Now(opts.Clock)
	stale := opts.staleAfter()
	if info.CreatedAt.IsZero() {
		// OpenClaw: an invalid createdAt lets the lock file's mtime decide.
		if age := now.Sub(info.ModTime); age > stale {
			info.StaleReason = fmt.Sprintf("createdAt missing or invalid and lock file %s old (stale after %s)", age.Round(time.Second), stale)
			return
		}
	} else if age := now.Sub(info.CreatedAt); age > stale {
		info.StaleReason = fmt.Sprintf("created %s ago (stale after %s)", age.Round(time.Second), stale)
		return
	}
	info.Live = true
}

// startTime parses a payload's "starttime" member.
func startTime(raw json.RawMessage) (uint64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	var v float64
	if json.Unmarshal(raw, &v) != nil || v < 0 || v != math.Trunc(v) {
		return 0, false
	}
	return uint64(v), true
}

// held records the host locks this process holds, by lock path.
var held = struct {
	sync.Mutex
	m map[string]*Lock
}{m: map[string]*Lock{}}

func heldHere(lp string, dev, ino uint64) bool {
	held.Lock()
	defer held.Unlock()
	l := held.m[lp]
	return l != nil && l.dev == dev && l.ino == ino
}

// Lock is a held host lock. Release it with [Lock.Release].
type Lock struct {
	path     string
	f        *os.File
	dev, ino uint64
	payload  []byte
	log      bs.Logger

	mu       sync.Mutex
	released bool
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Payload returns the bytes written into the lock file.
func (l *Lock) Payload() []byte { return bytes.Clone(l.payload) }

// Acquire takes the OpenClaw-compatible host lock of a transcript: it
// creates "<realpath(dir)>/<base>.lock" exclusively (mode 0600) holding
// {"pid": N, "createdAt": "…Z"} pretty-printed with a two-space indent and
// a trailing newline, as JSON.stringify(payload, null, 2) does. The payload
// is in the file from the moment it appears (it is prepared in a temp file
// and hard-linked into place, which fails like O_EXCL when the lock
// exists), so a crash never leaves an empty lock that others must respect
// for PayloadGrace. A stale lock (see [LockInfo] and OpenClaw's rules: dead or
// zombie pid, EPERM, no numeric pid, unparsable or empty payload older
// than PayloadGrace, a "starttime" that no longer matches the pid,
// createdAt older than StaleAfter) is removed, only if
// it is still the very file that was judged, and acquisition is retried.
// While a live holder has the lock Acquire polls with a back-off from 50 ms
// doubling to 1 s, for at most opts.Timeout; then it returns an error
// wrapping brainsurgeon.ErrBusy that names the holder's pid and how long it
// has held the lock. ctx cancels the wait.
func Acquire(ctx context.Context, transcriptPath string, opts LockOptions) (*Lock, error) {
	lp, err := LockPath(transcriptPath)
	if err != nil {
		return nil, err
	}
	log := bs.LoggerOrDiscard(opts.Logger)
	timeout := opts.timeout()
	deadline := time.Now().Add(max(timeout, 0))
	delay := lockRetryMin
	for takeovers := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("acquire lock %s: %w", lp, err)
		}
		l, err := create(lp, opts)
		if err == nil {
			l.log = log
			return l, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("acquire lock %s: %w", lp, err)
		}
		info, err := inspect(lp, opts)
		if err != nil {
			return nil, fmt.Errorf("acquire lock: %w", err)
		}
		if !info.Exists {
			continue // released meanwhile
		}
		if !info.Live && takeovers < 100 {
			takeovers++
			removed, err := removeIfSame(info)
			if err != nil {
				return nil, fmt.Errorf("acquire lock %s: remove stale lock: %w", lp, err)
			}
			if removed {
				log.Info("took over stale host lock", "lock", lp, "pid", info.PID, "reason", info.StaleReason)
			}
			continue
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return nil, fmt.Errorf("lock %s is held by %s: %w", lp, info.holder(bs.Now(opts.Clock)), bs.ErrBusy)
		}
		t := time.NewTimer(min(delay, remaining))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s is held by %s: %w (%w)", lp, info.holder(bs.Now(opts.Clock)), bs.ErrBusy, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, lockRetryMax)
	}
}

// create makes the lock file exclusively with its payload already in it.
// The payload is written to a temp file ".<base>.lock.bs-tmp-<pid>-<random>"
// that is then hard-linked to the lock path (link(2) fails with EEXIST
// like O_EXCL) and unlinked, so nobody ever sees the lock file without
// its payload, even if this process dies in between. Where hard links are
// not supported it falls back to OpenClaw's own O_CREAT|O_EXCL create and
// write.
func create(lp string, opts LockOptions) (*Lock, error) {
	payload := Payload(os.Getpid(), bs.Now(opts.Clock))
	dir, name := filepath.Split(lp)
	f, tmp, err := createTemp(dir, name)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Lock, error) {
		f.Close()
		return nil, err
	}
	chownToDirOwner(f, dir)
	if _, err := f.Write(payload); err != nil {
		os.Remove(tmp)
		return fail(fmt.Errorf("write payload: %w", err))
	}
	lerr := os.Link(tmp, lp)
	os.Remove(tmp)
	if lerr != nil {
		f.Close()
		if !atomicfile.LinkUnsupported(lerr) {
			return nil, lerr
		}
		return createExclusive(lp, payload)
	}
	return newLock(lp, f, payload)
}

// chownToDirOwner gives a lock file made by root to the owner of its
// directory (the host's user), so that the host can read its payload and
// judge it. Errors are ignored: the lock works either way.
func chownToDirOwner(f *os.File, dir string) {
	if os.Geteuid() != 0 {
		return
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}

// createExclusive is OpenClaw's way: open(lockPath, "wx") and write.
func createExclusive(lp string, payload []byte) (*Lock, error) {
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(payload); err != nil {
		f.Close()
		os.Remove(lp) // just created by us
		return nil, fmt.Errorf("write payload: %w", err)
	}
	return newLock(lp, f, payload)
}

func newLock(lp string, f *os.File, payload []byte) (*Lock, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		os.Remove(lp)
		return nil, err
	}
	l := &Lock{path: lp, f: f, payload: payload}
	l.dev, l.ino, _ = devIno(fi)
	held.Lock()
	held.m[lp] = l
	held.Unlock()
	return l, nil
}

// Payload returns the lock payload OpenClaw writes for pid at time t:
// JSON.stringify({pid, createdAt: t.toISOString()}, null, 2) + "\n".
func Payload(pid int, t time.Time) []byte {
	return fmt.Appendf(nil, "{\n  \"pid\": %d,\n  \"createdAt\": \"%s\"\n}\n", pid, bs.FormatTimestamp(t))
}

// removeIfSame removes the lock file judged in info if it still is the same
// file (device and inode) with the same content. It reports whether it
// removed it. A gap between the check and the removal remains; OpenClaw
// has the same one.
func removeIfSame(info LockInfo) (bool, error) {
	f, err := os.Open(info.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		if info.raw != nil {
			return false, err
		}
		// An unreadable lock was judged by mtime; compare the inode only.
		fi, serr := os.Lstat(info.Path)
		if serr != nil {
			return false, nil
		}
		if d, i, _ := devIno(fi); d != info.dev || i != info.ino || !fi.ModTime().Equal(info.ModTime) {
			return false, nil
		}
		return true, removeQuiet(info.Path)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if d, i, _ := devIno(fi); d != info.dev || i != info.ino {
		return false, nil
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxLockBytes))
	if err != nil || !bytes.Equal(raw, info.raw) {
		return false, nil
	}
	return true, removeQuiet(info.Path)
}

func removeQuiet(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Release removes the lock file if it still is ours (same device, inode
// and content) and closes it. A lock that somebody replaced is left alone
// and logged as a warning. Release is safe to call more than once.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	held.Lock()
	if held.m[l.path] == l {
		delete(held.m, l.path)
	}
	held.Unlock()
	defer l.f.Close()
	mine, err := removeIfSame(LockInfo{Path: l.path, dev: l.dev, ino: l.ino, raw: l.payload})
	if err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	if !mine {
		bs.LoggerOrDiscard(l.log).Warn("host lock was taken over or removed by another process; leaving it", "lock", l.path)
	}
	return nil
}
