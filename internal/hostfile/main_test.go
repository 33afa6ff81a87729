package hostfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// helperEnv selects a helper-process mode when the test binary is re-run
// as a child process.
const helperEnv = "BS_HOSTFILE_HELPER"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		os.Exit(oracle.Run(m))
	case "hold":
		// A live process whose pid can hold a lock.
		fmt.Println("ready")
		time.Sleep(60 * time.Second)
		os.Exit(0)
	case "exit":
		os.Exit(0)
	case "crashloop":
		os.Exit(crashLoop(os.Getenv("BS_FILE")))
	default:
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		os.Exit(2)
	}
}

// TestSetup says, as a skip, when the shared corpus is missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared) }

// helper starts the test binary in a helper mode.
func helper(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{helperEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// livePID starts a helper process that stays alive until the test ends
// and returns its pid.
func livePID(t *testing.T) int {
	t.Helper()
	cmd := helper(t, "hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("helper did not start: %q %v", line, err)
	}
	return cmd.Process.Pid
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := helper(t, "exit")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// zombiePID returns the pid of a child that has exited but is not reaped
// until the test ends.
func zombiePID(t *testing.T) int {
	t.Helper()
	cmd := helper(t, "exit")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Wait() })
	pid := cmd.Process.Pid
	for range 500 {
		if isZombie(pid) {
			return pid
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("child %d did not become a zombie", pid)
	return 0
}

// sharedCorpus returns the corpus directory of the shared directory; t is
// skipped when the shared directory is missing (failed when CI is set or
// BRAINSURGEON_REQUIRE_ORACLE=1).
func sharedCorpus(t *testing.T) string {
	t.Helper()
	return filepath.Join(oracle.Shared(t), "corpus")
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// tempFiles lists the BrainSurgeon temp files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.Contains(e.Name(), tempMarker) {
			out = append(out, e.Name())
		}
	}
	return out
}

func fingerprint(t *testing.T, path string) Stamp {
	t.Helper()
	v, err := Fingerprint(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// fixedClock is a Clock stuck at a time.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
