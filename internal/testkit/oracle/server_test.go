package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestSetup says, as a skip, when the shared corpus or the oracle is missing (see Setup).
func TestSetup(t *testing.T) { Setup(t, NeedShared|NeedOracle) }

// runScript runs the reference script ../shared/oracle/pi-session-oracle.mjs once, the way this package did before
// it kept one server process, and decodes its output into v.
func runScript(t *testing.T, v any, mode string, files ...string) {
	t.Helper()
	Shared(t)
	script, err := ScriptPath()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("reference script missing (the shared dir must sit beside the repo): %v", err)
	}
	e, err := resolve()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.node, append([]string{script, mode}, files...)...)
	cmd.Env = append(os.Environ(), "PI_ORACLE_MODULES="+e.modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, mode, err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatal(err)
	}
}

// TestServerMatchesScript proves that the server answers exactly like the reference script, on a v3 file and on
// the v1 file pi migrates on open (whose random entry ids are masked).
func TestServerMatchesScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the reference script five times; skipped with -short")
	}
	Require(t)
	ctx := testCtx(t)
	v3, mit := sharedFile(t, fixtureV3), sharedFile(t, fixtureMIT)
	for _, f := range []string{v3, mit} {
		got, err := Summary(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var want PiSummary
		runScript(t, &want, "summary", f)
		compact(&want.ThinkingLevel, &want.Model, &want.LLMMessageCount)
		if f == mit {
			got[0].LeafID, want.LeafID = nil, nil
		}
		if !reflect.DeepEqual(got[0], want) {
			t.Errorf("summary of %s:\nserver %+v\nscript %+v", f, got[0], want)
		}

		gotC, err := Context(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var wantC PiContext
		runScript(t, &wantC, "context", f)
		compact(&wantC.ThinkingLevel, &wantC.Model)
		for i := range wantC.Messages {
			compact(&wantC.Messages[i])
		}
		if f == mit {
			gotC.LeafID, wantC.LeafID = nil, nil
		}
		if !reflect.DeepEqual(gotC, wantC) {
			t.Errorf("context of %s differs: server %d messages, script %d", f, len(gotC.Messages), len(wantC.Messages))
		}
	}

	// An edited copy, so compare has a diff to report.
	b, err := os.ReadFile(v3)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(t.TempDir(), "edited.jsonl")
	if err := os.WriteFile(edited, bytes.Replace(b, []byte(`"text":"`), []byte(`"text":"EDITED `), 3), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Compare(ctx, v3, edited)
	if err != nil {
		t.Fatal(err)
	}
	var want PiCompare
	runScript(t, &want, "compare", v3, edited)
	compact(&want.ThinkingLevel[0], &want.ThinkingLevel[1], &want.Model[0], &want.Model[1])
	if got.DifferingMessages == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("compare:\nserver %+v\nscript %+v", got, want)
	}
}

// TestServerOneProcess checks that requests share one process, that a failed request leaves it running, and that
// a process that died or was given up on is replaced.
func TestServerOneProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the oracle process four times; skipped with -short")
	}
	Require(t)
	ctx := testCtx(t)
	v3 := sharedFile(t, fixtureV3)
	if _, err := Summary(ctx, v3); err != nil { // make sure one runs
		t.Fatal(err)
	}
	before := starts.Load()
	for range 5 {
		if _, err := Summary(ctx, v3, v3); err != nil {
			t.Fatal(err)
		}
	}
	env, err := resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(ctx, env, "nonsense", v3); err == nil || !strings.Contains(err.Error(), "bad request") {
		t.Fatalf("bad request: err = %v", err)
	}
	if _, err := Compare(ctx, v3, v3); err != nil {
		t.Fatal(err)
	}
	if n := starts.Load() - before; n != 0 {
		t.Fatalf("%d processes started for 12 requests, want 0 (the running one serves them)", n)
	}

	// Kill the process behind the package's back: the next request starts a new one.
	mu.Lock()
	_ = current.cmd.Process.Kill()
	<-current.done
	mu.Unlock()
	if _, err := Summary(ctx, v3); err != nil {
		t.Fatalf("after the process died: %v", err)
	}
	if n := starts.Load() - before; n != 1 {
		t.Fatalf("%d processes started after a kill, want 1", n)
	}

	// A request whose context ends is abandoned with the process; the next one gets a fresh process.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Summary(cctx, v3); err == nil {
		t.Fatal("cancelled context: no error")
	}
	if _, err := Summary(ctx, v3); err != nil {
		t.Fatal(err)
	}

	// Close stops the process; the next request starts a new one.
	if err := Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	n := starts.Load()
	if _, err := Summary(ctx, v3); err != nil {
		t.Fatal(err)
	}
	if starts.Load() != n+1 {
		t.Fatal("no process started after Close")
	}
}

// TestServerExitsWithStdin checks that the server exits on its own when its stdin closes, which is what happens
// when the test binary that started it exits without Close.
func TestServerExitsWithStdin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second oracle process; skipped with -short")
	}
	Require(t)
	env, err := resolve()
	if err != nil {
		t.Fatal(err)
	}
	s, err := start(testCtx(t), env)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.stdin.Close()
	select {
	case <-s.done:
		if s.waitErr != nil {
			t.Fatalf("server exited with %v: %s", s.waitErr, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.stop()
		t.Fatal("server still running 30s after its stdin closed")
	}
}
