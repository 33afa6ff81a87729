package hostfile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The two versions of the crash-test transcript differ only in their
// first line, which has the same length in both.
var (
	crashHeaderA = []byte(`{"type":"session","version":3,"id":"crash","state":"A"}` + "\n")
	crashHeaderB = []byte(`{"type":"session","version":3,"id":"crash","state":"B"}` + "\n")
)

const crashSize = 20 << 20

// crashBody returns about 20 MB of transcript lines after the header.
func crashBody() []byte {
	var b bytes.Buffer
	b.Grow(crashSize + 4096)
	pad := strings.Repeat("x", 900)
	for i := 0; b.Len() < crashSize; i++ {
		fmt.Fprintf(&b, `{"type":"message","id":"m%07d","message":{"role":"user","content":"%s"}}`+"\n", i, pad)
	}
	return b.Bytes()
}

// swapHeader is a streaming transform that turns version A into B and B
// into A.
func swapHeader(dst io.Writer, src io.Reader) error {
	br := bufio.NewReaderSize(src, 1<<20)
	first, err := br.ReadSlice('\n')
	if err != nil {
		return fmt.Errorf("read header: %w", err)
	}
	switch {
	case bytes.Equal(first, crashHeaderA):
		first = crashHeaderB
	case bytes.Equal(first, crashHeaderB):
		first = crashHeaderA
	default:
		return fmt.Errorf("unknown header %q", first)
	}
	if _, err := dst.Write(first); err != nil {
		return err
	}
	_, err = io.Copy(dst, br)
	return err
}

// crashLoop is the helper process of TestRewriteCrash: it rewrites path
// from A to B and back until it is killed.
func crashLoop(path string) int {
	fmt.Println("ready")
	for {
		v, err := Fingerprint(path)
		if err == nil {
			err = Rewrite(context.Background(), path, v, swapHeader, WriteOptions{})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			return 3
		}
		fmt.Println("ok")
	}
}

// TestRewriteCrash SIGKILLs a process that loops rewrites of a 20 MB
// transcript at random moments, at least 200 times. After every kill the
// transcript must be exactly version A or version B; the temp file and the
// host lock a killed writer leaves behind must be cleaned up and taken
// over by the next writer.
func TestRewriteCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crash.jsonl")
	body := crashBody()
	shaOf := func(h []byte) string {
		s := sha256.New()
		s.Write(h)
		s.Write(body)
		return hex.EncodeToString(s.Sum(nil))
	}
	shaA, shaB := shaOf(crashHeaderA), shaOf(crashHeaderB)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(crashHeaderA)
	f.Write(body)
	f.Close()
	body = nil

	kills := 200
	if testing.Short() {
		kills = 20 // a smoke test; the full run is what finds rare windows
	}
	var leftTemps, leftLocks, flips int
	last := shaA
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	start := time.Now()
	for i := range kills {
		cmd := helper(t, "crashloop", "BS_FILE="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(out)
		line, _ := rd.ReadString('\n')
		if line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: helper did not start: %q %s", i, line, stderr.String())
		}
		if i%5 == 4 {
			// Every fifth writer completes a rewrite first, so that kills
			// also land on later rewrites however slow the machine is.
			if line, _ := rd.ReadString('\n'); line != "ok\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: helper failed: %q %s", i, line, stderr.String())
			}
		}
		go io.Copy(io.Discard, rd)
		time.Sleep(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: helper ended on its own: %v\n%s", i, err, stderr.String())
		}
		sum := fileSHA(t, path)
		if sum != shaA && sum != shaB {
			t.Fatalf("kill %d: transcript is neither version A nor B (sha256 %s)", i, sum)
		}
		if sum != last {
			flips++
			last = sum
		}
		// A writer removes the temp files of dead writers before it makes
		// its own transcript copy, so at most one copy is ever left. A lock
		// payload being prepared (".crash.jsonl.lock.bs-tmp-…") is made
		// before that clean-up, so one of those may be left as well.
		temps := tempFiles(t, dir)
		copies := 0
		for _, n := range temps {
			if !strings.HasPrefix(n, ".crash.jsonl.lock.") {
				copies++
			}
		}
		if copies > 1 || len(temps) > 3 {
			t.Fatalf("kill %d: temp files accumulate: a writer did not clean up those of dead writers: %v", i, temps)
		}
		leftTemps += copies
		info, err := InspectLock(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Exists {
			leftLocks++
			// Left by this writer or, if it was killed before taking the
			// lock over, by an earlier one.
			if info.Live || !strings.Contains(info.StaleReason, "not running") {
				t.Fatalf("kill %d: lock left by the dead writer is not judged stale: %+v", i, info)
			}
		}
	}
	t.Logf("%d kills in %s: %d rewrites completed (flips), %d temp files and %d locks left behind",
		kills, time.Since(start).Round(time.Millisecond), flips, leftTemps, leftLocks)
	if leftTemps == 0 || leftLocks == 0 || flips == 0 {
		t.Fatalf("the kills never hit a rewrite in progress (temps %d, locks %d, flips %d)", leftTemps, leftLocks, flips)
	}
	// Clean-up by CleanTemps, and take-over of a dead writer's lock by the
	// next Rewrite.
	before := len(tempFiles(t, dir))
	if n, err := CleanTemps(dir, 0); err != nil || n != before {
		t.Fatalf("CleanTemps = %d, %v; want %d removed", n, err, before)
	}
	if temps := tempFiles(t, dir); len(temps) != 0 {
		t.Fatalf("temp files remain after CleanTemps: %v", temps)
	}
	writeFile(t, path+".lock", Payload(deadPID(t), time.Now()))
	if err := Rewrite(context.Background(), path, fingerprint(t, path), swapHeader, WriteOptions{}); err != nil {
		t.Fatalf("rewrite after the crashes: %v", err)
	}
	if sum := fileSHA(t, path); sum != shaA && sum != shaB || sum == last {
		t.Fatal("final rewrite did not flip the version")
	}
	if exists(path+".lock") || len(tempFiles(t, dir)) != 0 {
		t.Fatal("final rewrite left its lock or a temp file")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
}
