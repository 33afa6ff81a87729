//go:build e2e

package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
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

// installBigChars is the size of the offloaded tool result of TestInstallLive, in code points.
const installBigChars = 100_000

// TestInstallLive installs BrainSurgeon as a new user does, on a fresh OpenClaw state dir (2026.9.6, then
// 2026.7.35, where the first model call of a new session comes before its transcript exists) that has no agents dir
// yet, with the real binaries (`brainsurgeon serve`, `brainsurgeon openclaw install`) and a real gateway:
//
//	a. `serve` starts first: /api/health answers and says it is waiting for the agents dir;
//	b. `openclaw install --engine --link --yes` links the plugin; the gateway starts; the first turn (a tool result
//	   of 100,000 characters) is offloaded at the source and the model's requests are served by the engine (views
//	   with no pass-through in the engine's state and no failed plugin call; on 2026.7.35 the new session's very
//	   first call is answered with a pass-through, nothing of it being stored yet), and the daemon now serves the
//	   agents dir the host created, without a restart;
//	c. `uninstall --yes` then `install --engine --link --yes` with `serve` still running writes a new key: the next
//	   turn is served (a view, no 403 recorded by the daemon), the daemon was not restarted;
//	d. `openclaw status --json` says healthy (exit 0); with the daemon stopped it exits 1 naming daemon_reachable;
//	   with the daemon holding another key it exits 1 naming key_accepted;
//	e. the final `uninstall --yes`: once the session is idle no `[[extracted-tc-` is left in its rows, every
//	   offloaded value is back byte-identical, and openclaw.json is byte-identical to before install.
func TestInstallLive(t *testing.T) {
	for _, v := range []string{openclaw.V9, openclaw.V7} {
		t.Run(v, func(t *testing.T) {
			t.Parallel() // each era is a host of its own (state dir, HOME, gateway, serve)
			installLive(t, v)
		})
	}
}

func installLive(t *testing.T, version string) {
	t0 := time.Now()
	in := openclaw.Require(t, version)
	work := t.TempDir()
	needle := "NEEDLE-" + randHex(t, 6)
	big := bigResult(installBigChars, needle)
	bigFile := filepath.Join(work, "big.txt")
	if err := os.WriteFile(bigFile, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	var (
		d          *serveProc
		wrapper    string
		configOrig []byte
		env        []string
		st         *openclaw.State
	)
	run := func(bin string, args ...string) (string, error) { return runEnv(env, bin, args...) }
	h := openclaw.NewHostWithModel(t, version, model.URL(), func(s *openclaw.State) error {
		st = s
		env = st.Vars(openclaw.NewEnv(in.Node), "BRAINSURGEON_AGENTS_DIR="+st.AgentsDir())
		// The fixture tool bs_big (a 100,000-character result) is part of the user's config before install.
		addBigTool(t, st)
		configOrig = readFile(t, st.ConfigPath())
		// A fresh state dir: OpenClaw 2026.9.6 creates the agents dir at the first turn.
		if err := os.RemoveAll(st.AgentsDir()); err != nil {
			return err
		}
		// The daemon's runtime config: a short quiet period, so that "once the session is idle" comes soon;
		// no file-level extraction; the queued write-backs applied every second.
		writeConfig(t, st.AgentsDir(), map[string]any{"enabled": false, "idle_seconds": 2, "auto_cron": "* * * * * *"})

		// a. serve first.
		d = startServe(t, env)
		health := d.health(t)
		if health.Status != "waiting" || !strings.Contains(health.WaitingFor, st.AgentsDir()) {
			t.Errorf("a: /api/health before the agents dir exists = %+v, want status waiting naming %s", health, st.AgentsDir())
		}
		// b. install.
		wrapper = openclawWrapper(t, work, in)
		out, err := run(bsBin, "openclaw", "install", "--engine", "--link", "--yes", "--openclaw", wrapper, "--daemon-url", d.url)
		if err != nil {
			return err
		}
		t.Logf("install --engine --link:\n%s", out)
		if !strings.Contains(out, "openclaw gateway restart") && !strings.Contains(out, "gateway") {
			t.Errorf("b: install does not say what to run next (the gateway):\n%s", out)
		}
		return nil
	})
	t.Logf("setup (serve, install, gateway start): %s", time.Since(t0).Round(100*time.Millisecond))
	// With a gateway running, OpenClaw's CLI (plugins install, config patch) goes through it: a user's CLI holds
	// the gateway's credentials, as this environment now does.
	env = st.Vars(openclaw.NewEnv(in.Node), "BRAINSURGEON_AGENTS_DIR="+st.AgentsDir(),
		"OPENCLAW_GATEWAY_PORT="+strconv.Itoa(h.Gateway.Port), "OPENCLAW_GATEWAY_TOKEN="+h.Gateway.Token)
	keyFile := filepath.Join(st.Dir, ".brainsurgeon", "api.key")
	key1 := strings.TrimSpace(string(readFile(t, keyFile)))

	// b. The first turn: offloaded at the source, served by the engine.
	turnStart := time.Now()
	reqs := pluginTurnVia(t, h, model, `CALL:bs_big:{"file":"`+bigFile+`"}`, true)
	seen, _ := reqs[len(reqs)-1].lastTool()
	if placeholderKey.FindStringSubmatch(seen) == nil {
		t.Errorf("b: the model saw no [[extracted-tc-…]] placeholder after the big result; it saw %d chars: %.300q", len(seen), seen)
	}
	if health := d.health(t); health.Status != "ok" {
		t.Errorf("b: /api/health after the first turn = %+v, want status ok (the agents dir exists now)", health)
	}
	sid := liveSessionID(t, h, pluginKey)
	d.servedSince(t, h, "b", sid, turnStart)

	// c. Reinstall with serve still running.
	pid := d.cmd.Process.Pid
	out, err := run(bsBin, "openclaw", "uninstall", "--yes", "--keep-placeholders")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uninstall --keep-placeholders:\n%s", out)
	out, err = run(bsBin, "openclaw", "install", "--engine", "--link", "--yes", "--openclaw", wrapper, "--daemon-url", d.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reinstall:\n%s", out)
	key2 := strings.TrimSpace(string(readFile(t, keyFile)))
	if key2 == key1 {
		t.Fatal("c: the reinstall kept the old key; the rotation is not tested")
	}
	// the daemon takes the new key within seconds
	deadline := time.Now().Add(15 * time.Second)
	for d.get(t, "/api/plugin/v1/health", key2) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("c: the daemon still refuses the new key 15 s after the reinstall")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code := d.get(t, "/api/plugin/v1/health", key1); code != http.StatusForbidden {
		t.Errorf("c: the old key after the reinstall: HTTP %d, want 403", code)
	}
	d.clearFailuresBefore = time.Now()
	turnStart = time.Now()
	pluginTurnVia(t, h, model, "Turn 2: where are we?", true)
	d.servedSince(t, h, "c", sid, turnStart)
	if d.cmd.Process.Pid != pid || d.exited() {
		t.Error("c: the daemon was restarted or stopped during the reinstall")
	}

	// d. Health of the running system.
	status := func(want int) statusOut {
		t.Helper()
		out, err := run(bsBin, "openclaw", "status", "--json")
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var s statusOut
		if jerr := json.Unmarshal([]byte(out), &s); jerr != nil {
			t.Fatalf("d: openclaw status --json is not JSON (%v): %v\n%s", jerr, err, out)
		}
		if code != want {
			t.Errorf("d: openclaw status exited %d, want %d: %s", code, want, out)
		}
		return s
	}
	if s := status(0); !s.Healthy {
		t.Errorf("d: status says not healthy with everything running: %+v", s.Checks)
	}
	d.stop(t)
	if s := status(1); s.Healthy || !s.failed("daemon_reachable") {
		t.Errorf("d: with the daemon stopped: healthy=%v, failed checks %v, want daemon_reachable among them", s.Healthy, s.failedNames())
	}
	other := filepath.Join(work, "other.key")
	if err := os.WriteFile(other, []byte(randHex(t, 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d = startServeAt(t, append(env, "BRAINSURGEON_API_KEY_FILE="+other), d.addr)
	if s := status(1); s.Healthy || !s.failed("key_accepted") {
		t.Errorf("d: with the daemon holding another key: healthy=%v, failed checks %v, want key_accepted among them", s.Healthy, s.failedNames())
	}
	d.stop(t)
	d = startServeAt(t, env, d.addr)
	if s := status(0); !s.Healthy {
		t.Errorf("d: status after the daemon came back: %+v", s.Checks)
	}

	// e. The final uninstall writes the offloaded values back once the session is idle.
	out, err = run(bsBin, "openclaw", "uninstall", "--yes")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uninstall:\n%s", out)
	deadline = time.Now().Add(60 * time.Second)
	for {
		rows := toolResults(t, h, version, "bs_big")
		left := 0
		for _, r := range rows {
			if strings.Contains(r.text(), "[[extracted-tc-") {
				left++
			}
		}
		if left == 0 {
			if len(rows) != 1 || rows[0].text() != big {
				t.Errorf("e: after uninstall the bs_big result is %d chars (needle %v), want the original %d chars byte-identical",
					len(rows[0].text()), strings.Contains(rows[0].text(), needle), len(big))
			}
			break
		}
		if time.Now().After(deadline) {
			logFile, _ := os.ReadFile(filepath.Join(st.Dir, "logs", "brainsurgeon.log"))
			if len(logFile) > 6000 {
				logFile = logFile[len(logFile)-6000:]
			}
			t.Fatalf("e: %d bs_big results still hold [[extracted-tc- 60 s after uninstall; daemon output:\n%s\nlog file (tail):\n%s", left, d.logs.tail(4000), logFile)
		}
		time.Sleep(time.Second)
	}
	if after := readFile(t, st.ConfigPath()); !bytes.Equal(after, configOrig) {
		t.Errorf("e: openclaw.json after uninstall differs from before install:\n%s\nwant\n%s", after, configOrig)
	}
	if version == openclaw.V9 {
		if r, err := sqliteIntegrity(t, storePath(st)); err != nil || r != "ok" {
			t.Errorf("e: PRAGMA integrity_check = %q, %v", r, err)
		}
	}
	t.Logf("TestInstallLive/%s: %s", version, time.Since(t0).Round(100*time.Millisecond))
}

// addBigTool adds the fixture plugin bs-big (tool bs_big: returns a file's text) to the state dir's config.
func addBigTool(t *testing.T, st *openclaw.State) {
	t.Helper()
	raw := readFile(t, st.ConfigPath())
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	root, err := oracle.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugins := obj(cfg, "plugins")
	load := obj(plugins, "load")
	paths, _ := load["paths"].([]any)
	load["paths"] = append(paths, filepath.Join(root, "e2e", "testdata", "bs-big-plugin"))
	obj(plugins, "entries")["bs-big"] = map[string]any{"enabled": true}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.ConfigPath(), out, 0o600); err != nil {
		t.Fatal(err)
	}
}

func randHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// statusOut is the part of `brainsurgeon openclaw status --json` the test reads.
type statusOut struct {
	Healthy bool `json:"healthy"`
	Checks  []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
		Fix    string `json:"fix"`
	} `json:"checks"`
}

func (s statusOut) failed(name string) bool {
	for _, c := range s.Checks {
		if c.Name == name && !c.OK {
			return true
		}
	}
	return false
}

func (s statusOut) failedNames() []string {
	var out []string
	for _, c := range s.Checks {
		if !c.OK {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

// serveProc is a running `brainsurgeon serve`.
type serveProc struct {
	cmd  *exec.Cmd
	addr string
	url  string
	logs *syncBuffer
	done chan struct{}
	// clearFailuresBefore: failures recorded before this instant are not the current turn's.
	clearFailuresBefore time.Time
}

// startServe starts `brainsurgeon serve` on a free loopback port.
func startServe(t *testing.T, env []string) *serveProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return startServeAt(t, env, addr)
}

// startServeAt starts `brainsurgeon serve --addr addr` and waits until /api/health answers.
func startServeAt(t *testing.T, env []string, addr string) *serveProc {
	t.Helper()
	p := &serveProc{addr: addr, url: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bsBin, "serve", "--addr", addr)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("serve output (tail):\n%s", p.logs.tail(4000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/api/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		if p.exited() || time.Now().After(deadline) {
			t.Fatalf("serve did not answer /api/health (exited: %v): %v\n%s", p.exited(), err, p.logs.tail(4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return p
}

func (p *serveProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop stops serve with SIGINT (bounded) and waits until its port refuses connections.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Error("serve did not stop within 30 s of SIGINT (killed)")
	}
}

// healthAnswer is the part of GET /api/health the test reads.
type healthAnswer struct {
	Status     string `json:"status"`
	WaitingFor string `json:"waiting_for"`
	Plugin     struct {
		LastViewAt     *time.Time `json:"last_view_at"`
		Views          int        `json:"views"`
		RecentFailures []struct {
			At     time.Time `json:"at"`
			Path   string    `json:"path"`
			Status int       `json:"status"`
			Error  string    `json:"error"`
		} `json:"recent_failures"`
	} `json:"plugin"`
}

func (p *serveProc) health(t *testing.T) healthAnswer {
	t.Helper()
	resp, err := http.Get(p.url + "/api/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var h healthAnswer
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("/api/health: HTTP %d, not JSON: %v\n%s", resp.StatusCode, err, raw)
	}
	return h
}

// get returns the status of GET path with key.
func (p *serveProc) get(t *testing.T, path, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+path, nil)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// servedSince checks that the engine served views of session sid since start with no pass-through, and that the
// daemon recorded no failed plugin call since then.
func (p *serveProc) servedSince(t *testing.T, hst *openclaw.Host, step, sid string, start time.Time) {
	t.Helper()
	h := p.health(t)
	if h.Plugin.LastViewAt == nil || h.Plugin.LastViewAt.Before(start) {
		t.Errorf("%s: the daemon answered no engine view since %s (last_view_at %v, views %d)", step, start.Format(time.RFC3339), h.Plugin.LastViewAt, h.Plugin.Views)
	}
	for _, f := range h.Plugin.RecentFailures {
		if f.At.After(start) && f.At.After(p.clearFailuresBefore) {
			t.Errorf("%s: a plugin call failed during the turn: HTTP %d %s: %s", step, f.Status, f.Path, f.Error)
		}
	}
	st, ok := engineState(t, hst, sid)
	if !ok {
		t.Errorf("%s: the engine kept no state for session %s", step, sid)
		return
	}
	views := 0
	for _, v := range st.Turns {
		if v.At.Before(start) {
			continue
		}
		views++
		if v.Passthrough != "" {
			t.Errorf("%s: a view at %s passed the host's messages through: %s", step, v.At.Format(time.RFC3339), v.Passthrough)
		}
	}
	if views == 0 {
		t.Errorf("%s: the engine's state has no view since %s", step, start.Format(time.RFC3339))
	}
}

// sqliteIntegrity runs PRAGMA integrity_check on the store (read-only).
func sqliteIntegrity(t *testing.T, path string) (string, error) {
	t.Helper()
	var r string
	err := openRO(t, path).QueryRow("PRAGMA integrity_check").Scan(&r)
	return r, err
}
