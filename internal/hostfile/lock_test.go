package hostfile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// newTranscript creates a small transcript in a fresh directory.
func newTranscript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	writeFile(t, p, []byte("{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\"}\n"))
	return p
}

func TestLockPayloadShape(t *testing.T) {
	p := newTranscript(t)
	now := time.Date(2026, 3, 4, 15, 35, 52, 631_000_000, time.FixedZone("X", 3600))
	l, err := Acquire(context.Background(), p, LockOptions{Clock: fixedClock{now}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	got := readFile(t, p+".lock")
	want := fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": \"2026-03-04T14:35:52.631Z\"\n}\n", os.Getpid())
	if string(got) != want {
		t.Fatalf("payload\n%q\nwant\n%q", got, want)
	}
	// It is what JSON.stringify(x, null, 2) produces: json.MarshalIndent
	// with a two-space indent gives the same bytes.
	var v struct {
		PID       int    `json:"pid"`
		CreatedAt string `json:"createdAt"`
	}
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(v, "", "  ")
	if string(again)+"\n" != string(got) {
		t.Fatalf("not 2-space pretty JSON: %q", got)
	}
	fi, err := os.Stat(p + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock mode %v, want 0600", fi.Mode().Perm())
	}
	if !bytes.Equal(l.Payload(), got) {
		t.Fatal("Payload() differs from the file")
	}
}

// TestLockCorpusPayload reads the real lock file left by OpenClaw (no
// trailing newline, pid 2732) from the shared corpus.
func TestLockCorpusPayload(t *testing.T) {
	src := filepath.Join(sharedCorpus(t), "openclaw", "Musk-fanX__openclaw-backup", "agents", "main", "sessions",
		"b4c26dcb-b630-4911-8f01-5b463210db72.jsonl.lock")
	raw := readFile(t, src)
	if bytes.HasSuffix(raw, []byte("\n")) || len(raw) != 60 {
		t.Fatalf("unexpected corpus lock bytes %q", raw)
	}
	p := newTranscript(t)
	writeFile(t, p+".lock", raw)
	// Judge it with a clock one minute after its createdAt and a pretend
	// live pid, so only the payload parsing is under test.
	created := time.Date(2026, 3, 4, 15, 35, 52, 631_000_000, time.UTC)
	info, err := InspectLockWith(p, LockOptions{Clock: fixedClock{created.Add(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Exists || info.PID != 2732 || !info.CreatedAt.Equal(created) {
		t.Fatalf("parsed %+v", info)
	}
	if alive, _ := pidState(2732); alive {
		if !info.Live {
			t.Fatalf("pid 2732 runs here, lock should be live: %+v", info)
		}
	} else if info.Live || !strings.Contains(info.StaleReason, "2732") {
		t.Fatalf("pid 2732 is dead here, lock should be stale naming it: %+v", info)
	}
}

func TestLockStaleRules(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	payload := func(pid int, created time.Time) []byte { return Payload(pid, created) }
	for _, tc := range []struct {
		name string
		// content builds the lock file; mtime, when not zero, is set on it.
		content func(t *testing.T) []byte
		mtime   time.Time
		// stale: the lock is taken over; otherwise Acquire reports ErrBusy.
		stale  bool
		reason string
	}{
		{"LiveHolder", func(t *testing.T) []byte { return payload(livePID(t), time.Now()) }, time.Time{}, false, ""},
		{"LiveHolderNoTrailingNewline", func(t *testing.T) []byte {
			return bytes.TrimSuffix(payload(livePID(t), time.Now()), []byte("\n"))
		}, time.Time{}, false, ""},
		{"DeadPID", func(t *testing.T) []byte { return payload(deadPID(t), time.Now()) }, time.Time{}, true, "not running"},
		{"ZombiePID", func(t *testing.T) []byte { return payload(zombiePID(t), time.Now()) }, time.Time{}, true, "zombie"},
		{"TooOld", func(t *testing.T) []byte { return payload(livePID(t), time.Now().Add(-31*time.Minute)) }, time.Time{}, true, "stale after 30m"},
		{"AlmostTooOld", func(t *testing.T) []byte { return payload(livePID(t), time.Now().Add(-29*time.Minute)) }, time.Time{}, false, ""},
		{"GarbageOldMtime", func(t *testing.T) []byte { return []byte("\x00\x01garbage{") }, old, true, "unparsable payload"},
		{"GarbageFreshMtime", func(t *testing.T) []byte { return []byte("{\"pid\": 12") }, time.Time{}, false, ""},
		{"EmptyFresh", func(t *testing.T) []byte { return nil }, time.Time{}, false, ""},
		{"EmptyOld", func(t *testing.T) []byte { return nil }, time.Now().Add(-31 * time.Second), true, "empty payload"},
		{"MissingPID", func(t *testing.T) []byte { return []byte(`{"createdAt":"2026-01-01T00:00:00.000Z"}`) }, time.Time{}, true, "no numeric pid"},
		{"PIDNotANumber", func(t *testing.T) []byte {
			return fmt.Appendf(nil, `{"pid":"%d","createdAt":"%s"}`, livePID(t), bs.FormatTimestamp(time.Now()))
		}, time.Time{}, true, "no numeric pid"},
		{"PIDZero", func(t *testing.T) []byte { return payload(0, time.Now()) }, time.Time{}, true, "invalid pid"},
		{"OwnPIDNotHeld", func(t *testing.T) []byte { return payload(os.Getpid(), time.Now()) }, time.Time{}, true, "does not hold"},
		{"StartTimeMatches", func(t *testing.T) []byte {
			pid := livePID(t)
			st, _ := procStartTime(pid)
			return fmt.Appendf(nil, "{\n  \"pid\": %d,\n  \"createdAt\": %q,\n  \"maxHoldMs\": 300000,\n  \"starttime\": %d\n}\n", pid, bs.FormatTimestamp(time.Now()), st)
		}, time.Time{}, false, ""},
		{"StartTimeDiffers", func(t *testing.T) []byte {
			pid := livePID(t)
			st, _ := procStartTime(pid)
			return fmt.Appendf(nil, `{"pid":%d,"createdAt":%q,"starttime":%d}`, pid, bs.FormatTimestamp(time.Now()), st+7)
		}, time.Time{}, true, "recycled"},
		{"InvalidCreatedAtFreshMtime", func(t *testing.T) []byte {
			return fmt.Appendf(nil, `{"pid":%d,"createdAt":"yesterday"}`, livePID(t))
		}, time.Time{}, false, ""},
		{"InvalidCreatedAtOldMtime", func(t *testing.T) []byte {
			return fmt.Appendf(nil, `{"pid":%d,"createdAt":"yesterday"}`, livePID(t))
		}, old, true, "createdAt missing or invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTranscript(t)
			lp := p + ".lock"
			content := tc.content(t)
			writeFile(t, lp, content)
			if !tc.mtime.IsZero() {
				if err := os.Chtimes(lp, tc.mtime, tc.mtime); err != nil {
					t.Fatal(err)
				}
			}
			info, err := InspectLock(p)
			if err != nil {
				t.Fatal(err)
			}
			if info.Live == tc.stale || !strings.Contains(info.StaleReason, tc.reason) {
				t.Fatalf("InspectLock = %+v, want stale=%v reason containing %q", info, tc.stale, tc.reason)
			}
			start := time.Now()
			l, err := Acquire(context.Background(), p, LockOptions{Timeout: 150 * time.Millisecond})
			if tc.stale {
				if err != nil {
					t.Fatalf("stale lock not taken over: %v", err)
				}
				if got := readFile(t, lp); !bytes.Equal(got, l.Payload()) {
					t.Fatalf("lock holds %q, want our payload", got)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
				if exists(lp) {
					t.Fatal("released lock still exists")
				}
				return
			}
			if !errors.Is(err, bs.ErrBusy) {
				t.Fatalf("Acquire on a live lock = %v, want ErrBusy", err)
			}
			if info.PID != 0 && !strings.Contains(err.Error(), "pid "+strconv.Itoa(info.PID)) {
				t.Fatalf("error does not name the holder: %v", err)
			}
			if !regexp.MustCompile(`held [0-9][0-9hms.]*\)|[0-9][0-9hms.]* old`).MatchString(err.Error()) {
				t.Fatalf("error does not tell the age: %v", err)
			}
			if d := time.Since(start); d < 150*time.Millisecond || d > 2*time.Second {
				t.Fatalf("Acquire waited %s, want about the 150ms timeout", d)
			}
			if got := readFile(t, lp); !bytes.Equal(got, content) {
				t.Fatal("live lock was modified")
			}
		})
	}
}

func TestLockInspect(t *testing.T) {
	p := newTranscript(t)
	info, err := InspectLock(p)
	if err != nil || info.Exists || info.Live || info.Path != p+".lock" {
		t.Fatalf("no lock: %+v %v", info, err)
	}
	l, err := Acquire(context.Background(), p, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	info, err = InspectLock(p)
	if err != nil || !info.Exists || !info.Live || info.PID != os.Getpid() || info.CreatedAt.IsZero() {
		t.Fatalf("own held lock: %+v %v", info, err)
	}
	// Held by this process: another Acquire waits and fails.
	if _, err := Acquire(context.Background(), p, LockOptions{Timeout: -1}); !errors.Is(err, bs.ErrBusy) {
		t.Fatalf("second Acquire = %v, want ErrBusy", err)
	}
	l.Release()
	if _, err := InspectLock(filepath.Join(t.TempDir(), "missing", "x.jsonl")); !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("missing directory: %v", err)
	}
}

func TestLockPathUsesRealDirectory(t *testing.T) {
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	got, err := LockPath(filepath.Join(link, "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(real)
	if want := filepath.Join(realDir, "a.jsonl.lock"); got != want {
		t.Fatalf("LockPath = %s, want %s", got, want)
	}
}

func TestLockRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tamper  func(t *testing.T, lp string)
		removed bool
	}{
		{"Ours", func(*testing.T, string) {}, true},
		{"AlreadyGone", func(t *testing.T, lp string) { os.Remove(lp) }, true},
		{"ContentReplaced", func(t *testing.T, lp string) {
			writeFile(t, lp, Payload(os.Getpid()+1, time.Now()))
		}, false},
		{"FileReplaced", func(t *testing.T, lp string) {
			// Same bytes, new inode: somebody took it over and wrote the
			// same payload.
			b := readFile(t, lp)
			os.Remove(lp)
			writeFile(t, lp, b)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTranscript(t)
			l, err := Acquire(context.Background(), p, LockOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.tamper(t, l.Path())
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			if err := l.Release(); err != nil {
				t.Fatal("second Release:", err)
			}
			if exists(l.Path()) == tc.removed {
				t.Fatalf("lock exists=%v after Release, want removed=%v", exists(l.Path()), tc.removed)
			}
		})
	}
}

func TestLockWaitsForRelease(t *testing.T) {
	p := newTranscript(t)
	l, err := Acquire(context.Background(), p, LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(120 * time.Millisecond)
		l.Release()
	}()
	start := time.Now()
	l2, err := Acquire(context.Background(), p, LockOptions{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	// Back-off 50, 100, 200 ms: the lock is seen free at about 150 or
	// 350 ms.
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestLockContextCancel(t *testing.T) {
	p := newTranscript(t)
	writeFile(t, p+".lock", Payload(livePID(t), time.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Acquire(ctx, p, LockOptions{Timeout: time.Minute})
	if !errors.Is(err, bs.ErrBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrBusy and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("ctx not respected: waited %s", d)
	}
}

// TestLockCreateExclusive checks OpenClaw's own create-and-write, used
// where hard links are not supported: same payload, exclusive.
func TestLockCreateExclusive(t *testing.T) {
	p := newTranscript(t)
	lp := p + ".lock"
	payload := Payload(os.Getpid(), time.Now())
	l, err := createExclusive(lp, payload)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, lp); !bytes.Equal(got, payload) {
		t.Fatalf("payload %q", got)
	}
	if _, err := createExclusive(lp, payload); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create = %v, want ErrExist", err)
	}
	if err := l.Release(); err != nil || exists(lp) {
		t.Fatalf("Release = %v, exists %v", err, exists(lp))
	}
	if temps := tempFiles(t, filepath.Dir(p)); len(temps) != 0 {
		t.Fatalf("temp files left: %v", temps)
	}
}
