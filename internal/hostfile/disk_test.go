package hostfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// nsEnv marks a test binary re-run inside a private mount namespace.
const nsEnv = "BS_HOSTFILE_MOUNTNS"

// inMountNamespace re-runs the calling test in a child process that has
// its own mount namespace (CLONE_NEWNS; Go makes "/" private there), so
// the test can mount a small tmpfs (a real ENOSPC) or remount read-only (a
// real EROFS) even as root, which ignores permission bits. It returns true
// in the child, which then does the work; the parent only checks that the
// child passed. It fails, never skips, when namespaces are not permitted.
func inMountNamespace(t *testing.T) bool {
	t.Helper()
	if os.Getenv(nsEnv) == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), nsEnv+"="+t.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("test in a private mount namespace failed (needs CAP_SYS_ADMIN, as root in CI): %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("child did not run the test:\n%s", out)
	}
	t.Logf("child in a private mount namespace:\n%s", out)
	return false
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// returns it.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

func copyTransform(dst io.Writer, src io.Reader) error {
	_, err := io.Copy(dst, src)
	return err
}

// TestRewriteDiskFull fills a 256 KB tmpfs: a rewrite that needs a second
// copy of a 150 KB transcript fails with ENOSPC, says so, and leaves the
// original, the directory and the lock as they were; an append that does
// not fit fails the same way and leaves no partial line.
func TestRewriteDiskFull(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	line := `{"type":"message","id":"m","message":{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}}` + "\n"
	for _, tc := range []struct {
		name string
		op   func(p string) error
		msg  string
	}{
		{"Rewrite", func(p string) error {
			v, err := Fingerprint(p)
			if err != nil {
				return err
			}
			return Rewrite(context.Background(), p, v, copyTransform, WriteOptions{})
		}, ": write temp file: write "},
		{"RewriteGrowing", func(p string) error {
			v, err := Fingerprint(p)
			if err != nil {
				return err
			}
			return Rewrite(context.Background(), p, v, func(dst io.Writer, src io.Reader) error {
				if err := copyTransform(dst, src); err != nil {
					return err
				}
				_, err := dst.Write(bytes.Repeat([]byte(line), 200))
				return err
			}, WriteOptions{})
		}, ": write temp file: write "},
		{"Append", func(p string) error {
			big := bytes.Repeat([]byte("y"), 200<<10)
			return Append(context.Background(), p, [][]byte{[]byte(`{"ok":1}`), big}, WriteOptions{})
		}, ": write: write "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mountTmpfs(t, "256k")
			p := filepath.Join(dir, "s.jsonl")
			writeFile(t, p, bytes.Repeat([]byte(line), 150))
			before := fileSHA(t, p)
			err := tc.op(p)
			if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), tc.msg) ||
				!strings.HasSuffix(err.Error(), "no space left on device") {
				t.Fatalf("err = %v, want ENOSPC with %q", err, tc.msg)
			}
			t.Logf("error: %v", err)
			if fileSHA(t, p) != before {
				t.Fatal("original changed")
			}
			if temps := tempFiles(t, dir); len(temps) != 0 || exists(p+".lock") {
				t.Fatalf("left temp files %v or the lock", temps)
			}
			// Once space is available again, the same write succeeds.
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, []byte(line))
			if err := tc.op(p); err != nil {
				t.Fatalf("after freeing space: %v", err)
			}
		})
	}
}

// TestRewriteReadOnly makes the transcript's directory read-only in ways
// root cannot ignore: a read-only bind mount of the directory and a
// read-only tmpfs. Every write fails with EROFS and a message that says
// which step failed; the transcript stays untouched.
func TestRewriteReadOnly(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	for _, tc := range []struct {
		name string
		// dir returns a directory holding transcript s.jsonl with content,
		// and a func that makes it read-only.
		setup func(t *testing.T, content []byte) (dir string, readOnly func())
		// warm: write once before going read-only, so the flock file and
		// the directory already exist.
		warm bool
	}{
		{"BindMount", bindDir, false},
		{"BindMountAfterWrites", bindDir, true},
		{"Tmpfs", roTmpfs, false},
		{"TmpfsAfterWrites", roTmpfs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, readOnly := tc.setup(t, []byte("{\"a\":1}\n"))
			p := filepath.Join(dir, "s.jsonl")
			if tc.warm {
				if err := Append(context.Background(), p, [][]byte{[]byte(`{"b":2}`)}, WriteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			readOnly()
			if _, err := os.Create(filepath.Join(dir, "probe")); !errors.Is(err, syscall.EROFS) {
				t.Fatalf("directory is not read-only: %v", err)
			}
			before := fileSHA(t, p)
			v := fingerprint(t, p)
			for what, err := range map[string]error{
				"rewrite": Rewrite(context.Background(), p, v, copyTransform, WriteOptions{}),
				"append":  Append(context.Background(), p, [][]byte{[]byte(`{"c":3}`)}, WriteOptions{}),
			} {
				if !errors.Is(err, syscall.EROFS) || !strings.HasPrefix(err.Error(), what+" "+p+": ") ||
					!strings.Contains(err.Error(), "read-only file system") {
					t.Fatalf("%s: err = %v, want EROFS naming the step", what, err)
				}
				t.Logf("%s error: %v", what, err)
			}
			if fileSHA(t, p) != before {
				t.Fatal("transcript changed")
			}
		})
	}
}

// bindDir makes a directory on the test's file system, to be bind-mounted
// read-only onto itself.
func bindDir(t *testing.T, content []byte) (string, func()) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "s.jsonl"), content)
	return dir, func() {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind mount: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		if err := unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
	}
}

// roTmpfs makes a tmpfs, to be remounted read-only.
func roTmpfs(t *testing.T, content []byte) (string, func()) {
	dir := mountTmpfs(t, "1m")
	writeFile(t, filepath.Join(dir, "s.jsonl"), content)
	return dir, func() {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_REMOUNT|unix.MS_RDONLY, "size=1m"); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
	}
}

// TestRewriteImmutableDirectory uses the immutable attribute (chattr +i),
// which stops root too, on the test's own file system: no file can be
// created in the directory, so the write fails before anything changes.
func TestRewriteImmutableDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "s.jsonl")
	writeFile(t, p, []byte("{\"a\":1}\n"))
	// Warm up so that the flock file exists: the lock file is then what
	// cannot be created.
	if err := Append(context.Background(), p, [][]byte{[]byte(`{"b":2}`)}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	setImmutable(t, dir, true)
	t.Cleanup(func() { setImmutable(t, dir, false) })
	before := fileSHA(t, p)
	v := fingerprint(t, p)
	for what, err := range map[string]error{
		"rewrite": Rewrite(context.Background(), p, v, copyTransform, WriteOptions{}),
		"append":  Append(context.Background(), p, [][]byte{[]byte(`{"c":3}`)}, WriteOptions{}),
	} {
		if !errors.Is(err, syscall.EPERM) || !strings.Contains(err.Error(), "acquire lock") {
			t.Fatalf("%s: err = %v, want EPERM creating the lock", what, err)
		}
	}
	if fileSHA(t, p) != before || fingerprint(t, p) != v {
		t.Fatal("transcript changed")
	}
}

// fsImmutableFL is FS_IMMUTABLE_FL from linux/fs.h.
const fsImmutableFL = 0x10

func setImmutable(t *testing.T, dir string, on bool) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Fatalf("FS_IOC_GETFLAGS on %s (file system without attributes?): %v", dir, err)
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags); err != nil {
		t.Fatalf("chattr %v on %s (needs CAP_LINUX_IMMUTABLE, as root in CI): %v", on, dir, err)
	}
}
