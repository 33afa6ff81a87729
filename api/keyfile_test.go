package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// writeKey writes a key file as install does: a new file renamed over the
// old one, or (inPlace) the old file rewritten.
func writeKey(tb testing.TB, path, key string, inPlace bool) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		tb.Fatal(err)
	}
	if inPlace {
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(key+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// statusWith answers the status of GET path with key ("" sends none).
func statusWith(c *client, path, key string) int {
	c.tb.Helper()
	var hdr []string
	if key != "" {
		hdr = []string{"X-API-Key", key}
	}
	code, _, _ := (&client{tb: c.tb, srv: c.srv}).do("GET", path, "", hdr...)
	return code
}

// authInfo is GET /api/auth-info.
type authInfo struct {
	AuthRequired bool   `json:"auth_required"`
	Open         bool   `json:"open"`
	KeyFile      string `json:"key_file"`
	KeyHint      string `json:"key_hint"`
}

func TestKeyFileKeptInStep(t *testing.T) {
	f := newPlugFixture(t)
	keyFile := filepath.Join(f.root, ".brainsurgeon", "api.key")
	const envKey, keyA, keyB = "env-key-1", "aaaaaaaa-key", "bbbbbbbb-key"
	for _, tc := range []struct {
		name    string
		env     []string
		inPlace bool
	}{
		{"Renamed", nil, false},
		{"InPlace", nil, true},
		{"WithEnvKeys", []string{envKey}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.RemoveAll(filepath.Dir(keyFile))
			srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, APIKeys: tc.env, KeyFile: keyFile, KeyFileInterval: -1})
			c := &client{tb: t, srv: srv}
			var info authInfo
			check := func(what string, wantRequired bool, want map[string]int) {
				t.Helper()
				c.json("GET", "/api/auth-info", "", 200, &info)
				if info.AuthRequired != wantRequired || info.Open == wantRequired || info.KeyFile != keyFile || !strings.Contains(info.KeyHint, "cat "+keyFile) {
					t.Errorf("%s: auth-info %+v, want auth_required %v and the key file %s", what, info, wantRequired, keyFile)
				}
				for key, code := range want {
					if got := statusWith(c, "/api/agents", key); got != code {
						t.Errorf("%s: key %q: status %d, want %d", what, key, got, code)
					}
				}
			}
			noKey := 200
			if len(tc.env) > 0 {
				noKey = 401
			}
			check("no file yet", len(tc.env) > 0, map[string]int{"": noKey, envKey: 200})
			writeKey(t, keyFile, keyA, tc.inPlace)
			check("file appeared", true, map[string]int{"": 401, keyA: 200, keyB: 403})
			writeKey(t, keyFile, keyB, tc.inPlace)
			envWant := 403
			if len(tc.env) > 0 {
				envWant = 200
			}
			check("file rotated", true, map[string]int{"": 401, keyA: 403, keyB: 200, envKey: envWant})
			if err := os.Remove(keyFile); err != nil {
				t.Fatal(err)
			}
			check("file removed", true, map[string]int{"": 401, keyA: 403, keyB: 403, envKey: envWant})
			if err := os.WriteFile(keyFile, []byte("\n \n"), 0o600); err != nil {
				t.Fatal(err)
			}
			check("empty file", true, map[string]int{"": 401, keyB: 403, envKey: envWant})
			writeKey(t, keyFile, keyA, tc.inPlace)
			check("fixed", true, map[string]int{keyA: 200})
		})
	}
}

// TestKeyFileThrottled checks that with a check interval the change is
// seen within a few intervals (polled, with a deadline).
func TestKeyFileThrottled(t *testing.T) {
	f := newPlugFixture(t)
	keyFile := filepath.Join(f.root, "api.key")
	writeKey(t, keyFile, "old-key", false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, KeyFile: keyFile, KeyFileInterval: 20 * time.Millisecond})
	c := &client{tb: t, srv: srv}
	if got := statusWith(c, "/api/agents", "old-key"); got != 200 {
		t.Fatalf("old key before the rotation: %d", got)
	}
	writeKey(t, keyFile, "new-key", false)
	deadline := time.Now().Add(5 * time.Second)
	for statusWith(c, "/api/agents", "new-key") != 200 {
		if time.Now().After(deadline) {
			t.Fatal("the new key is still refused 5 s after the rotation")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := statusWith(c, "/api/agents", "old-key"); got != 403 {
		t.Errorf("old key after the rotation: %d, want 403", got)
	}
}

// TestKeyFileAppearsAfterStart starts a server whose key file (the
// default path serve watches, <openclaw root>/.brainsurgeon/api.key) does
// not exist yet: the API is open and says so (auth-info, config/env,
// health: "open", and the notice the UI shows). Once the file is written,
// the first request without a key after the check interval is refused
// 401, the file's key is accepted, and the API says it is closed.
func TestKeyFileAppearsAfterStart(t *testing.T) {
	f := newPlugFixture(t)
	keyFile := filepath.Join(f.root, ".brainsurgeon", "api.key")
	const interval = 50 * time.Millisecond
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, KeyFile: keyFile, KeyFileInterval: interval})
	c := &client{tb: t, srv: srv}
	type openInfo struct {
		AuthRequired bool   `json:"auth_required"`
		Open         bool   `json:"open"`
		OpenNotice   string `json:"open_notice"`
	}
	check := func(what string, open bool) {
		t.Helper()
		for _, path := range []string{"/api/auth-info", "/api/config/env", "/api/health"} {
			var got openInfo
			c.json("GET", path, "", 200, &got)
			if got.Open != open || got.AuthRequired == open {
				t.Errorf("%s: %s: open %v, auth_required %v; want open %v", what, path, got.Open, got.AuthRequired, open)
			}
			if path != "/api/auth-info" {
				continue
			}
			if open && got.OpenNotice != api.OpenNotice(keyFile) || !open && got.OpenNotice != "" {
				t.Errorf("%s: open_notice %q", what, got.OpenNotice)
			}
		}
	}
	check("no file yet", true)
	if got := statusWith(c, "/api/agents", ""); got != 200 {
		t.Fatalf("no file yet: %d without a key, want 200", got)
	}
	writeKey(t, keyFile, "the-new-key", false)
	time.Sleep(2 * interval)
	if got := statusWith(c, "/api/agents", ""); got != 401 {
		t.Fatalf("the first request without a key after the interval: %d, want 401", got)
	}
	if got := statusWith(c, "/api/agents", "the-new-key"); got != 200 {
		t.Errorf("the file's key: %d, want 200", got)
	}
	check("file written", false)
}

func TestOpenNotice(t *testing.T) {
	for _, tc := range []struct {
		name, keyFile string
		want          []string
	}{
		{"key file", "/o/.brainsurgeon/api.key", []string{"This API is open: anyone who can reach this server", "brainsurgeon openclaw install (it writes /o/.brainsurgeon/api.key", "without a restart", "BRAINSURGEON_API_KEYS"}},
		{"no key file", "", []string{"This API is open", "run brainsurgeon openclaw install or set BRAINSURGEON_API_KEYS and restart."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := api.OpenNotice(tc.keyFile)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("OpenNotice(%q) = %q, want it to hold %q", tc.keyFile, got, w)
				}
			}
		})
	}
}

func TestKeyFileRefusedAtStart(t *testing.T) {
	f := newPlugFixture(t)
	empty := filepath.Join(f.root, "empty.key")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := api.New(api.Options{Installation: f.set.Installation, Backend: f.set, KeyFile: empty})
	if !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "expected at least one key") {
		t.Errorf("New with an empty key file: %v", err)
	}
}

func TestAuthInfoKeyHint(t *testing.T) {
	f := newPlugFixture(t)
	keyFile := filepath.Join(f.root, "api.key")
	writeKey(t, keyFile, "k", false)
	for _, tc := range []struct {
		name     string
		opts     api.Options
		file     string
		hint     string
		required bool
	}{
		{"Open", api.Options{}, "", "", false},
		{"Env", api.Options{APIKeys: []string{"x"}}, "", "Keys come from BRAINSURGEON_API_KEYS", true},
		{"File", api.Options{KeyFile: keyFile}, keyFile, "The key is the first line of " + keyFile + ": cat " + keyFile, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Installation, tc.opts.Backend = f.set.Installation, f.set
			c := &client{tb: t, srv: serve(t, tc.opts)}
			for _, path := range []string{"/api/auth-info", "/api/config/env"} {
				var info authInfo
				c.json("GET", path, "", 200, &info)
				if info != (authInfo{AuthRequired: tc.required, Open: !tc.required, KeyFile: tc.file, KeyHint: tc.hint}) {
					t.Errorf("%s: %+v, want %v %q %q", path, info, tc.required, tc.file, tc.hint)
				}
			}
			var h struct {
				KeyFile      string `json:"key_file"`
				AuthRequired bool   `json:"auth_required"`
				Open         bool   `json:"open"`
				AgentsDir    string `json:"agents_dir"`
				Status       string `json:"status"`
			}
			c.json("GET", "/api/health", "", 200, &h)
			if h.KeyFile != tc.file || h.AuthRequired != tc.required || h.Open == tc.required || h.AgentsDir != f.agents || h.Status != "ok" {
				t.Errorf("health %+v", h)
			}
		})
	}
}

// healthPlugin is the "plugin" member of GET /api/health.
type healthPlugin struct {
	LastCallAt        *time.Time          `json:"last_call_at"`
	LastOKAt          *time.Time          `json:"last_ok_at"`
	LastViewAt        *time.Time          `json:"last_view_at"`
	Views             int                 `json:"views"`
	LastPassthroughAt *time.Time          `json:"last_passthrough_at"`
	LastPassthrough   string              `json:"last_passthrough"`
	Failing           bool                `json:"failing"`
	RecentFailures    []api.PluginFailure `json:"recent_failures"`
	FailuresTotal     int                 `json:"failures_total"`
}

func pluginHealthOf(c *client) healthPlugin {
	c.tb.Helper()
	var h struct {
		Plugin healthPlugin `json:"plugin"`
	}
	c.json("GET", "/api/health", "", 200, &h)
	return h.Plugin
}

func TestPluginHealth(t *testing.T) {
	f := newPlugFixture(t)
	const key = "the-right-key"
	eng := &fakeEngine{view: engine.View{FirstKept: 0, Matched: 3, Turn: 1, EstimatedTokens: 100, PredictedTokens: 150}}
	h, err := api.NewWithEngine(api.Options{Installation: f.set.Installation, Backend: f.set, APIKeys: []string{key}}, eng)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	good, bad := &client{tb: t, srv: srv, key: key}, &client{tb: t, srv: srv, key: "a-stale-key"}

	if p := pluginHealthOf(good); p.LastCallAt != nil || p.Failing || len(p.RecentFailures) != 0 || p.RecentFailures == nil {
		t.Errorf("before any call: %+v, want nothing seen and an empty list", p)
	}
	// A stale key: 403, recorded with its fix.
	bad.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 403, nil)
	p := pluginHealthOf(good)
	if len(p.RecentFailures) != 1 || p.FailuresTotal != 1 || !p.Failing || p.LastCallAt == nil || p.LastOKAt != nil {
		t.Fatalf("after a 403: %+v", p)
	}
	fl := p.RecentFailures[0]
	if fl.Status != 403 || fl.Method != "POST" || fl.Path != "/api/plugin/v1/assemble" || fl.Error != "invalid API key" ||
		fl.Fix != "the plugin's key does not match the daemon's: run brainsurgeon openclaw status" || fl.At.IsZero() {
		t.Errorf("the failure: %+v", fl)
	}
	// The plugin's health check: the right key is accepted, a wrong one
	// is refused and counted.
	var ph struct {
		OK     bool         `json:"ok"`
		Plugin healthPlugin `json:"plugin"`
	}
	good.json("GET", "/api/plugin/v1/health", "", 200, &ph)
	if !ph.OK || ph.Plugin.FailuresTotal != 1 || !ph.Plugin.Failing {
		t.Errorf("plugin health with the right key: %+v (a health check is no plugin call: still failing)", ph)
	}
	bad.json("GET", "/api/plugin/v1/health", "", 403, nil)
	if code, _, _ := (&client{tb: t, srv: srv}).do("GET", "/api/plugin/v1/health", ""); code != 401 {
		t.Errorf("plugin health without a key: %d, want 401", code)
	}
	if code, _, _ := good.do("GET", "/api/plugin/v1/health", "", "Origin", "http://evil.example"); code != 403 {
		t.Errorf("plugin health from a web page: %d, want 403", code)
	}
	// A view served: the failures stay listed, but the plugin is no
	// longer failing.
	good.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, nil)
	p = pluginHealthOf(good)
	if p.Views != 1 || p.LastViewAt == nil || p.LastOKAt == nil || p.Failing || p.FailuresTotal != 4 || len(p.RecentFailures) != 4 {
		t.Errorf("after a view: %+v", p)
	}
	if p.RecentFailures[0].Status != 403 || p.RecentFailures[1].Status != 401 || p.RecentFailures[3].Path != "/api/plugin/v1/assemble" {
		t.Errorf("failures not newest first: %+v", p.RecentFailures)
	}
	// A pass-through is recorded with its reason, not as a view.
	eng.view = engine.View{Passthrough: "no message matched"}
	good.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, nil)
	p = pluginHealthOf(good)
	if p.Views != 1 || p.LastPassthrough != "no message matched" || p.LastPassthroughAt == nil {
		t.Errorf("after a pass-through: %+v", p)
	}
	// A refused body and the ring's bound.
	for i := range api.MaxPluginFailures + 5 {
		good.json("POST", "/api/plugin/v1/assemble", fmt.Sprintf(`{"session_id":%q,"token_budget":-%d}`, plugSessA, i+1), 400, nil)
	}
	p = pluginHealthOf(good)
	if len(p.RecentFailures) != api.MaxPluginFailures || p.FailuresTotal != 4+api.MaxPluginFailures+5 || !p.Failing {
		t.Errorf("after %d refused bodies: %d listed, %d in all, failing %v", api.MaxPluginFailures+5, len(p.RecentFailures), p.FailuresTotal, p.Failing)
	}
	if fl := p.RecentFailures[0]; fl.Status != 400 || !strings.Contains(fl.Error, fmt.Sprintf("found -%d", api.MaxPluginFailures+5)) || fl.Fix == "" {
		t.Errorf("newest failure: %+v", fl)
	}
	// Other routes are not plugin calls.
	bad.json("GET", "/api/agents", "", 403, nil)
	if q := pluginHealthOf(good); q.FailuresTotal != p.FailuresTotal {
		t.Errorf("a refused UI request counted as a plugin failure: %d, want %d", q.FailuresTotal, p.FailuresTotal)
	}
}

func TestWaiting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agents")
	srv := httptest.NewServer(api.Waiting(api.WaitingOptions{AgentsDir: dir, KeyFile: "/k/api.key", Version: "v9", UI: ui.Handler()}))
	t.Cleanup(srv.Close)
	c := &client{tb: t, srv: srv}
	var h map[string]any
	c.json("GET", "/api/health", "", 200, &h)
	if h["status"] != "waiting" || h["waiting_for"] != api.WaitingFor(dir) || h["agents_dir"] != dir || h["key_file"] != "/k/api.key" || h["version"] != "v9" {
		t.Errorf("health while waiting: %v", h)
	}
	if !strings.Contains(api.WaitingFor(dir), dir) || !strings.Contains(api.WaitingFor(dir), "OpenClaw creates it at the first turn") {
		t.Errorf("WaitingFor: %q", api.WaitingFor(dir))
	}
	for _, path := range []string{"/api/sessions", "/api/auth-info", "/api/plugin/v1/health"} {
		code, b, hdr := c.do("GET", path, "")
		var e struct {
			Error   string `json:"error"`
			Waiting bool   `json:"waiting"`
		}
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusServiceUnavailable || !e.Waiting ||
			!strings.Contains(e.Error, "waiting for OpenClaw to create the agents dir "+dir) || hdr.Get("Retry-After") == "" {
			t.Errorf("%s while waiting: %d %s", path, code, b)
		}
	}
	c.json("POST", "/api/plugin/v1/assemble", "{}", 503, nil)
	if code, b, _ := c.do("GET", "/", ""); code != 200 || !strings.Contains(string(b), "<html") {
		t.Errorf("the UI while waiting: %d %.100s", code, b)
	}
	if h["auth_required"] != false || h["open"] != true {
		t.Errorf("auth_required and open without keys: %v %v", h["auth_required"], h["open"])
	}
	// A key file written while waiting: keys will be required.
	keyFile := filepath.Join(t.TempDir(), "api.key")
	writeKey(t, keyFile, "k", false)
	srv2 := httptest.NewServer(api.Waiting(api.WaitingOptions{AgentsDir: dir, KeyFile: keyFile}))
	t.Cleanup(srv2.Close)
	(&client{tb: t, srv: srv2}).json("GET", "/api/health", "", 200, &h)
	if h["auth_required"] != true || h["open"] != false || h["key_file"] != keyFile {
		t.Errorf("health with a key file while waiting: %v", h)
	}
}
