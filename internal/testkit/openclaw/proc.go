package openclaw

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MarkerEnv is set in the environment of every process this package starts, to the value of the [Env] that
// started it, so [Leftovers] can find them.
const MarkerEnv = "BRAINSURGEON_E2E_RUN"

const (
	// stopGrace is how long a process group gets between SIGTERM and SIGKILL.
	stopGrace = 10 * time.Second
	// waitDelay bounds the wait for a killed command's output pipes.
	waitDelay = 5 * time.Second
)

// Env is the environment of the processes of one test: the marker and the variables every child gets.
type Env struct {
	Marker string
	Node   string // node binary; its directory goes first on PATH
}

// NewEnv returns an Env with a fresh random marker.
func NewEnv(node string) Env {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return Env{Marker: "bs-e2e-" + hex.EncodeToString(r[:]), Node: node}
}

// Vars returns the child environment: the parent's without HOME, any OPENCLAW_* and proxy variables, plus PATH
// with Node first, NO_PROXY for loopback, the marker, and extra ("K=V").
func (e Env) Vars(extra ...string) []string {
	var out []string
	path := os.Getenv("PATH")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch lk := strings.ToLower(k); {
		case k == "HOME", k == "PATH", k == MarkerEnv, strings.HasPrefix(k, "OPENCLAW_"),
			lk == "http_proxy", lk == "https_proxy", lk == "all_proxy", lk == "no_proxy", k == "NODE_OPTIONS":
			continue
		}
		out = append(out, kv)
	}
	if e.Node != "" {
		path = filepath.Dir(e.Node) + string(os.PathListSeparator) + path
	}
	out = append(out, "PATH="+path, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		MarkerEnv+"="+e.Marker)
	return append(out, extra...)
}

// command returns a command in its own process group, killed (the whole group) when ctx is done.
func (e Env) command(ctx context.Context, dir string, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return killGroup(cmd, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	return cmd
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Result is a finished command.
type Result struct {
	Args     []string
	Stdout   []byte
	Stderr   []byte
	ExitCode int // -1 when it did not exit normally
	Duration time.Duration
}

func (r *Result) Error() string {
	return fmt.Sprintf("%s: exit %d after %s\nstderr: %s", strings.Join(r.Args, " "), r.ExitCode,
		r.Duration.Round(time.Millisecond), tail(r.Stderr, 2000))
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

// run runs a command to completion within ctx; a non-zero exit is returned as the *Result error too.
func (e Env) run(ctx context.Context, dir string, env []string, name string, args ...string) (*Result, error) {
	cmd := e.command(ctx, dir, env, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	// the group may hold children of the command; none outlive it
	_ = killGroup(cmd, syscall.SIGKILL)
	r := &Result{Args: append([]string{name}, args...), Stdout: stdout.Bytes(), Stderr: stderr.Bytes(),
		ExitCode: cmd.ProcessState.ExitCode(), Duration: time.Since(start)}
	if err != nil {
		if ctx.Err() != nil {
			return r, fmt.Errorf("%w (%w)", r, ctx.Err())
		}
		return r, r
	}
	return r, nil
}

// Proc is a long-running process (the mock, a gateway) in its own process group.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  *os.File
}

// start starts a long-running process with its output in logPath. It is not tied to a context: call Stop.
func (e Env) start(name, dir, logPath string, env []string, bin string, args ...string) (*Proc, error) {
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = groupAttr()
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, done: make(chan struct{}), log: lf}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// PID returns the process id (= its process group id).
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited, and how.
func (p *Proc) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, waits up to 10 s for the leader, then SIGKILLs the group (which also
// ends members that outlived the leader). It is safe to call twice.
func (p *Proc) Stop() error {
	if p == nil || p.cmd.Process == nil {
		return nil
	}
	_ = killGroup(p.cmd, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		_ = killGroup(p.cmd, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(waitDelay):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.Name, p.PID())
		}
	}
	_ = killGroup(p.cmd, syscall.SIGKILL)
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitTCP waits until 127.0.0.1:port accepts connections, p exits, or ctx is done.
func waitTCP(ctx context.Context, p *Proc, port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if done, werr := p.Exited(); done {
			return fmt.Errorf("%s exited before listening on %s: %v", p.Name, addr, werr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not listening on %s: %w", p.Name, addr, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Leftovers returns the pids of live processes whose environment carries marker (processes started through an
// Env with that marker). It reads /proc; processes it may not read are not listed.
func Leftovers(marker string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte(MarkerEnv + "=" + marker + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(b, 0), needle) {
			continue
		}
		// zombies are gone already, only not reaped
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && len(st) > i+2 && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// KillLeftovers SIGKILLs the processes Leftovers(marker) lists (each by its pid) and returns them.
func KillLeftovers(marker string) []int {
	pids := Leftovers(marker)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return pids
}

// copyFile copies a regular file, keeping its mode.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// CopyTree copies the directory src to dst (which must not exist): directories, regular files and symlinks.
// Sockets, lock files of live processes and the like are copied as plain files or skipped (non-regular).
func CopyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(target, fi.Mode().Perm()|0o700)
		case fi.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case fi.Mode().IsRegular():
			return copyFile(p, target)
		}
		return nil
	})
}
