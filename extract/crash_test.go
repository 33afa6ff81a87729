package extract_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestCrashHelper is the child process of TestExtractCrash: it loops an
// extraction pass and a pristine restore of BS_CRASH_ROOT's session s1
// until it is killed.
func TestCrashHelper(t *testing.T) {
	root := os.Getenv("BS_CRASH_ROOT")
	if root == "" {
		t.Skip("helper process")
	}
	ctx := context.Background()
	// Small hold-back and batches: records go to the pack while the pass
	// still reads, and the kills land in that too.
	extract.SetHoldBack(4 << 10)
	extract.SetBatchTarget(4 << 10)
	st := sidetest.Store(root)
	path := filepath.Join(root, "main", "sessions", "s1.jsonl")
	x := sidetest.Extractor(st, allTypes(64, 0))
	r := sidetest.Restorer(st, root)
	fmt.Println("ready")
	for {
		ref, err := st.Resolve(ctx, path)
		if err == nil {
			_, err = x.Run(ctx, ref)
		}
		if err == nil {
			fmt.Println("extracted")
			_, err = r.RestoreAll(ctx, ref, true)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "crash helper:", err)
			os.Exit(3)
		}
		fmt.Println("ok")
	}
}

// TestExtractCrash SIGKILLs a process that loops extraction passes and
// pristine restores at random moments, 200 times. After every kill the
// transcript is the original or the extracted version, every placeholder
// in it has its value, and the next process carries on; at the end a pass
// cleans up the temp files the kills left.
func TestExtractCrash(t *testing.T) {
	var src string
	for _, f := range v23(t) {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 100<<10 && fi.Size() < 400<<10 {
			src = f
			break
		}
	}
	if src == "" {
		t.Fatal("no v2/v3 corpus transcript of 100–400 KB")
	}
	// The extracted version, from a pass over another copy.
	ref0, st0 := setup(t, src)
	orig, err := os.ReadFile(ref0.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sidetest.Extractor(st0, allTypes(64, 0)).Run(context.Background(), ref0); err != nil {
		t.Fatal(err)
	}
	extracted, _ := os.ReadFile(ref0.Path)
	if bytes.Equal(orig, extracted) {
		t.Fatal("fixture: the pass extracts nothing")
	}

	root, path := testcorpus.Copy(t, src, "s1")
	sideDir := sidetest.Dir(path, "s1")
	kills := 200
	if testing.Short() {
		kills = 20
	}
	// How long one pass and restore take here, to spread the kills over.
	iter := time.Second
	{
		root, path := testcorpus.Copy(t, src, "s1")
		st := sidetest.Store(root)
		ref, err := st.Resolve(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if _, err := sidetest.Extractor(st, allTypes(64, 0)).Run(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		if _, err := sidetest.Restorer(st, root).RestoreAll(context.Background(), ref, true); err != nil {
			t.Fatal(err)
		}
		iter = time.Since(t0)
	}
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	states := map[string]int{}
	start := time.Now()
	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$")
		cmd.Env = append(os.Environ(), "BS_CRASH_ROOT="+root)
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
		if line, _ := rd.ReadString('\n'); line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("kill %d: helper did not start: %q %s", i, line, stderr.String())
		}
		if i%2 == 1 {
			// Every other kill lands after a pass, in a later pass or in
			// the restore, however slow the machine is.
			if line, _ := rd.ReadString('\n'); line != "extracted\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("kill %d: helper failed: %q %s", i, line, stderr.String())
			}
		}
		go io.Copy(io.Discard, rd)
		time.Sleep(time.Duration(rng.Int64N(int64(iter))))
		cmd.Process.Signal(syscall.SIGKILL)
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("kill %d: helper exited before the kill: %v %s", i, err, stderr.String())
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case bytes.Equal(got, orig):
			states["original"]++
		case bytes.Equal(got, extracted):
			states["extracted"]++
		default:
			t.Fatalf("kill %d: the transcript is neither the original nor the extracted version", i)
		}
		st := sidetest.Store(root)
		ref, err := st.Resolve(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := restore.Verify(context.Background(), st, sidedir.New(st), ref)
		if err != nil || !rep.OK() {
			t.Fatalf("kill %d: verify: %v %+v", i, err, rep)
		}
	}
	temps := 0
	ents, _ := os.ReadDir(sideDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			temps++
		}
	}
	t.Logf("%d kills in %v (one pass and restore: %v): %v; %d temp files left, %d files in the side dir", kills, time.Since(start).Round(time.Millisecond), iter.Round(time.Millisecond), states, temps, len(ents))

	// The next pass succeeds and removes the temp files.
	// The temp files left by the kills are old enough to be removed.
	old := time.Now().Add(-time.Hour)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			os.Chtimes(filepath.Join(sideDir, e.Name()), old, old)
		}
	}
	st := sidetest.Store(root)
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sidetest.Restorer(st, root).RestoreAll(context.Background(), ref, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Fatal("pristine restore after the kills is not the original")
	}
	if _, err := sidetest.Extractor(st, allTypes(64, 0)).Run(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, extracted) {
		t.Fatal("the pass after the kills differs from the first pass")
	}
	ents, _ = os.ReadDir(sideDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temp file %s left after the next pass", e.Name())
		}
	}
}
