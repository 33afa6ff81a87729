//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// piNote is the text of the file the tool call of TestDoctorPiLive reads (what its tool result holds).
const piNote = "a note for the pi doctor test"

// piMissingResult is the text of the result pi-ai makes up for a call without one (as the model receives it).
const piMissingResult = "No result provided"

// piModelID is the model pi is configured with: the test model, through pi's "openai-completions" provider.
const piModelID = "mock-model"

// piRun is one run of the pi CLI in print mode.
type piRun struct {
	stdout, stderr string
	code           int
	reqs           []openclaw.ModelRequest // the model requests made during the run
	took           time.Duration
}

func (r piRun) String() string {
	return "exit " + strconv.Itoa(r.code) + "\nstdout: " + r.stdout + "\nstderr: " + r.stderr
}

// piHost is the real pi coding agent (the oracle's pi-coding-agent package) with its agent dir in a temp home,
// pointed at the test model.
type piHost struct {
	node, cli string
	home      string // HOME of the runs
	agentDir  string // PI_CODING_AGENT_DIR
	model     *openclaw.Model
}

// sessions returns pi's sessions dir (what brainsurgeon's --agents-dir takes for pi).
func (p *piHost) sessions() string { return filepath.Join(p.agentDir, "sessions") }

func newPiHost(t *testing.T, model *openclaw.Model) *piHost {
	t.Helper()
	oracle.Require(t)
	node, modules, err := oracle.Node()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	p := &piHost{node: node, cli: filepath.Join(modules, filepath.FromSlash(oracle.PiPackage), "dist", "cli.js"),
		home: home, agentDir: filepath.Join(home, ".pi", "agent"), model: model}
	if err := os.MkdirAll(p.agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"providers": map[string]any{"mock": map[string]any{
		"baseUrl": model.URL() + "/v1", "api": "openai-completions", "apiKey": "mock",
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": piModelID, "name": "Test model", "reasoning": false, "input": []string{"text"},
			"contextWindow": 128000, "maxTokens": 4096,
			"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
	}}}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.agentDir, "models.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs `pi -p msg` in cwd (on the session file session when not ""), with only the read tool and nothing
// of the machine's pi setup, and returns what it printed and the model requests it made.
func (p *piHost) run(t *testing.T, cwd, session, msg string) piRun {
	t.Helper()
	args := []string{p.cli, "--provider", "mock", "--model", piModelID, "--tools", "read", "--offline",
		"--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files"}
	if session != "" {
		args = append(args, "--session", session)
	}
	args = append(args, "-p", msg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.node, args...)
	cmd.Dir = cwd
	env := []string{"HOME=" + p.home, "PI_CODING_AGENT_DIR=" + p.agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0",
		"NO_COLOR=1", "TERM=dumb"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" || k == "LANG" {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before := len(p.model.Requests())
	start := time.Now()
	err := cmd.Run()
	r := piRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("pi -p %q: %v", msg, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("pi -p %q did not end within 90 s: %s", msg, r)
	}
	r.reqs = p.model.Requests()[before:]
	return r
}

// onlySession returns the one transcript pi wrote under its sessions dir for cwd.
func (p *piHost) onlySession(t *testing.T, cwd string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(p.sessions(), "*", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range files {
		var hdr struct {
			Type string `json:"type"`
			Cwd  string `json:"cwd"`
		}
		first, _, _ := bytes.Cut(readFile(t, f), []byte("\n"))
		if json.Unmarshal(first, &hdr) == nil && hdr.Type == "session" && hdr.Cwd == cwd {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one pi session of %s, found %v (of %v)", cwd, found, files)
	}
	return found[0]
}

// TestDoctorPiLive shows, on the real pi coding agent (print mode) and a test model that refuses unpaired tool
// blocks as providers do, what `brainsurgeon doctor --fix` is for: pi (unlike OpenClaw) does not repair an
// orphan tool result in memory (pi-ai's transformMessages drops an aborted assistant message with its calls but
// keeps their results, and keeps a result whose call is on another branch), so the provider refuses every turn
// of a session damaged that way. After `doctor --fix` the next pi turn succeeds, and `restore --all --pristine`
// gives the damaged bytes back.
func TestDoctorPiLive(t *testing.T) {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	model.RejectUnpaired(true)
	pi := newPiHost(t, model)
	writeConfig(t, pi.sessions(), map[string]any{"idle_seconds": 0})

	// The damages of [doctorCorruptions]: pi passes "aborted" and "branch" to the provider, which refuses them;
	// "missing" it repairs in memory (pi-ai's "No result provided"), and doctor --fix writes that repair.
	type sess struct {
		kind, cwd, path, id string
		damaged, fixed      []byte
	}
	var ss []*sess
	for _, kind := range doctorCorruptions {
		s := &sess{kind: kind, cwd: filepath.Join(pi.home, "work-"+kind)}
		if err := os.MkdirAll(s.cwd, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.cwd, "notes.txt"), []byte(piNote+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	first := func(s *sess) string { return `read it (` + s.kind + `) CALL:read:{"path":"notes.txt"}` }

	// 1. A real turn with a tool call and its result.
	for _, s := range ss {
		r := pi.run(t, s.cwd, "", first(s))
		if r.code != 0 || len(r.reqs) != 2 || !strings.Contains(string(r.reqs[1].Body), piNote) {
			t.Fatalf("%s: the first pi turn (a read of notes.txt) did not go as planned (%d model requests): %s", s.kind, len(r.reqs), r)
		}
		s.path = pi.onlySession(t, s.cwd)
		t.Logf("%s: first pi turn in %s: %q", s.kind, r.took.Round(time.Millisecond), strings.TrimSpace(r.stdout))
	}
	if rej := model.Rejected(); len(rej) != 0 {
		t.Fatalf("the model refused %d requests of the clean turns: %v", len(rej), rej[0].Unpaired)
	}

	// 2. The damage a crash leaves; 3. the next pi turn is refused by the model (or, for a missing result,
	// repaired by pi in memory).
	for _, s := range ss {
		corrupt(t, s.path, s.kind)
		corrupted := readFile(t, s.path)
		r := pi.run(t, s.cwd, s.path, "after the damage ("+s.kind+")")
		s.damaged = readFile(t, s.path)
		logLines(t, s.kind+": the turn on the damaged session appended", s.damaged[min(len(corrupted), len(s.damaged)):])
		if s.kind == "missing" {
			if r.code != 0 || len(r.reqs) == 0 || r.reqs[0].Unpaired != nil || !strings.Contains(string(r.reqs[0].Body), piMissingResult) {
				t.Fatalf("%s: pi did not repair the missing result in memory (%q) on its way to the model: %s", s.kind, piMissingResult, r)
			}
			t.Logf("%s: pi repaired the damage in memory (the model received %q) and the turn succeeded in %s", s.kind,
				piMissingResult, r.took.Round(time.Millisecond))
			continue
		}
		refused := 0
		for _, q := range r.reqs {
			if q.Unpaired != nil {
				refused++
			}
		}
		if len(r.reqs) == 0 || refused != len(r.reqs) {
			t.Fatalf("%s: the pi turn on the damaged session was not refused (%d of %d requests refused): %s", s.kind, refused, len(r.reqs), r)
		}
		if out := r.stdout + r.stderr; r.code == 0 || !strings.Contains(out, r.reqs[0].Unpaired.Message) {
			t.Errorf("%s: pi does not report the model's refusal %q: %s", s.kind, r.reqs[0].Unpaired.Message, r)
		}
		t.Logf("%s: the pi turn on the damaged session was refused (%s; %d requests, %s); pi exit %d: %s", s.kind,
			r.reqs[0].Unpaired, len(r.reqs), r.took.Round(time.Millisecond), r.code, strings.TrimSpace(r.stdout+r.stderr))
	}

	// 4. doctor says broken; doctor --fix repairs.
	rep, r := doctor(t, pi.sessions())
	if r.code != 0 {
		t.Fatalf("doctor: %s", r)
	}
	for _, s := range ss {
		s.id = sessionIDOf(t, rep, s.path)
		if hl, probs := rep.health(t, s.id); hl != "broken" {
			t.Errorf("%s: doctor says %q (%s), want broken", s.kind, hl, probs)
		} else {
			t.Logf("%s: doctor says broken: %s", s.kind, probs)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, s := range ss {
		if !bytes.Equal(readFile(t, s.path), s.damaged) {
			t.Fatalf("%s: doctor (without --fix) changed the transcript", s.kind)
		}
		rep, r := doctor(t, pi.sessions(), "--fix", "--session", s.id)
		if r.code != 0 || len(rep.Fixes) != 1 || !rep.Fixes[0].Applied {
			t.Fatalf("%s: doctor --fix: %s", s.kind, r)
		}
		t.Logf("%s: doctor --fix inserted %d results, detached %d", s.kind, rep.Fixes[0].Inserted, rep.Fixes[0].Detached)
		s.fixed = readFile(t, s.path)
		logFix(t, s.kind, s.damaged, s.fixed)
		if want := s.kind == "missing"; want != bytes.Contains(s.fixed, []byte(`"text":"No result provided"`)) {
			t.Errorf("%s: pi's synthetic result in the fixed transcript: %v, want %v", s.kind, !want, want)
		}
	}

	// 5. The next pi turn succeeds and sees the conversation before the damage.
	before := len(model.Rejected())
	for _, s := range ss {
		r := pi.run(t, s.cwd, s.path, "after the fix ("+s.kind+")")
		if r.code != 0 || len(r.reqs) == 0 {
			t.Errorf("%s: the pi turn after the fix failed (%d model requests): %s", s.kind, len(r.reqs), r)
			continue
		}
		for _, q := range r.reqs {
			if q.Unpaired != nil || q.Status != http.StatusOK {
				t.Errorf("%s: the model answered a request after the fix with HTTP %d (%v)", s.kind, q.Status, q.Unpaired)
			}
		}
		body := string(r.reqs[0].Body)
		for _, want := range []string{"read it (" + s.kind + ")", "model final", "after the damage (" + s.kind + ")"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: the request after the fix lacks %q of the conversation before: %.3000s", s.kind, want, body)
			}
		}
		if strings.Contains(body, piNote) {
			t.Errorf("%s: after the fix the model still receives the result that lost its call", s.kind)
		}
		if s.kind == "missing" && !strings.Contains(body, piMissingResult) {
			t.Errorf("%s: after the fix the model does not receive pi's synthetic result %q", s.kind, piMissingResult)
		}
		t.Logf("%s: the pi turn after the fix succeeded in %s: %q", s.kind, r.took.Round(time.Millisecond), strings.TrimSpace(r.stdout))
	}
	if n := len(model.Rejected()); n != before {
		t.Errorf("the model refused %d requests after the fix", n-before)
	}
	rep, r = doctor(t, pi.sessions())
	if r.code != 0 {
		t.Fatalf("doctor after the fix: %s", r)
	}
	for _, s := range ss {
		if hl, probs := rep.health(t, s.id); hl != "ok" {
			t.Errorf("%s: after the fix and a turn, doctor says %q (%s), want ok", s.kind, hl, probs)
		}
	}

	// 6. restore --all --pristine gives the damaged bytes back, then what the turn after the fix appended.
	for _, s := range ss {
		checkPristine(t, s.kind, s.path, pi.sessions(), s.id, s.damaged, s.fixed)
	}
	t.Logf("pi done in %s", time.Since(t0).Round(time.Millisecond))
}

// sessionIDOf returns the session id doctor reports for the transcript at path (its file name is
// <timestamp>_<id>.jsonl).
func sessionIDOf(t *testing.T, rep doctorReport, path string) string {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	for _, s := range rep.Sessions {
		if s.SessionID != "" && strings.HasSuffix(base, s.SessionID) {
			return s.SessionID
		}
	}
	t.Fatalf("doctor reports no session for %s: %+v", path, rep.Sessions)
	return ""
}

// logLines logs the lines of b (each cut to 700 characters) under what.
func logLines(t *testing.T, what string, b []byte) {
	t.Helper()
	var ls []string
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(l) > 0 {
			ls = append(ls, "  "+head(string(l), min(len([]rune(string(l))), 700)))
		}
	}
	t.Logf("%s %d lines:\n%s", what, len(ls), strings.Join(ls, "\n"))
}

// logFix logs the lines a fix inserted or changed (the lines of fixed that are not in damaged).
func logFix(t *testing.T, kind string, damaged, fixed []byte) {
	t.Helper()
	old := map[string]bool{}
	for _, l := range bytes.Split(damaged, []byte("\n")) {
		old[string(l)] = true
	}
	var changed []byte
	for _, l := range bytes.SplitAfter(fixed, []byte("\n")) {
		if !old[string(bytes.TrimSuffix(l, []byte("\n")))] {
			changed = append(changed, l...)
		}
	}
	logLines(t, kind+": doctor --fix inserted or changed", changed)
}
