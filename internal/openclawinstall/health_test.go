package openclawinstall

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeDaemon answers like the daemon's GET /api/health and GET
// /api/plugin/v1/health (contract: status, agents_dir, key_file, plugin
// activity; the plugin route needs the key).
type fakeDaemon struct {
	status      string // "ok" or "waiting"
	agentsDir   string
	keyFile     string
	key         string // the key the plugin route accepts; "" = none needed
	activity    *PluginActivity
	engine      *EngineActivity // nil: a daemon that does not count the engine's calls
	noPluginAPI bool            // an older daemon: 404 on /api/plugin/v1/health
}

func (d *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/api/health":
		h := map[string]any{"status": d.status, "version": "9.9.9", "agents_dir": d.agentsDir, "key_file": d.keyFile,
			"auth_required": d.key != "", "plugin": d.activity}
		if d.engine != nil {
			h["engine"] = d.engine
		}
		if d.status == "waiting" {
			h["waiting_for"] = "the agents dir " + d.agentsDir + ": OpenClaw creates it at the first turn"
		}
		json.NewEncoder(w).Encode(h)
	case "/api/plugin/v1/health":
		switch {
		case d.noPluginAPI:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"not found"}`))
		case d.status == "waiting":
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"waiting for OpenClaw to create the agents dir","waiting":true}`))
		case d.key != "" && r.Header.Get("X-API-Key") == "":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"API key required: pass it in the X-API-Key header"}`))
		case d.key != "" && r.Header.Get("X-API-Key") != d.key:
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"error":"invalid API key"}`))
		default:
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "plugin": d.activity, "engine": d.engine})
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func at(min int) *time.Time {
	t := time.Date(2026, 9, 7, 10, min, 0, 0, time.UTC)
	return &t
}

// TestCheckSystem runs the end-to-end checks against a daemon that answers
// like the real one, one table row per way the system can be broken.
func TestCheckSystem(t *testing.T) {
	type want struct {
		healthy bool
		failed  []string // names of the failed checks, in order
		absent  []string // checks that must not run
		detail  string   // in the first failed check's detail (or, healthy, in some check's)
		fix     string   // in the first failed check's fix
	}
	fail403 := PluginFailure{At: *at(30), Method: "POST", Path: "/api/plugin/v1/assemble", Status: 403, Error: "invalid API key"}
	for _, tc := range []struct {
		name    string
		engine  bool
		daemon  func(root, key string) *fakeDaemon // nil: no daemon at the URL
		install bool
		want    want
	}{
		{name: "Healthy", install: true, engine: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key, activity: &PluginActivity{LastCallAt: at(10), LastOKAt: at(10), LastViewAt: at(10), Views: 3, RecentFailures: []PluginFailure{}}}
			},
			want: want{healthy: true, detail: "last view at 2026-09-07T10:10:00Z (3 views"}},
		{name: "HealthyWithLatency", install: true, engine: true,
			daemon: func(root, key string) *fakeDaemon {
				e := &EngineActivity{Views: 3, Passthroughs: 1, LastViewAt: at(10)}
				e.LatencyMS.Count, e.LatencyMS.P50, e.LatencyMS.P99, e.LatencyMS.Max = 4, 2.5, 40, 51.25
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key, engine: e,
					activity: &PluginActivity{LastCallAt: at(10), LastOKAt: at(10), LastViewAt: at(10), Views: 3, RecentFailures: []PluginFailure{}}}
			},
			want: want{healthy: true, detail: "last view at 2026-09-07T10:10:00Z (3 views, 1 pass-through, 0 failures since the daemon started; assemble p50 2.5 ms, p99 40.0 ms, max 51.2 ms)"}},
		{name: "NotInstalled", want: want{failed: []string{CheckPluginInstalled, CheckConfigLinksPlugin}, absent: []string{CheckDaemonReachable}, fix: "brainsurgeon openclaw install --link"}},
		{name: "DaemonDown", install: true,
			want: want{failed: []string{CheckDaemonReachable}, absent: []string{CheckDaemonReady, CheckKeyAccepted}, detail: "no daemon answers", fix: "brainsurgeon serve"}},
		{name: "Waiting", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "waiting", agentsDir: filepath.Join(root, "agents"), key: key}
			},
			want: want{failed: []string{CheckDaemonReady}, absent: []string{CheckKeyAccepted}, detail: "OpenClaw creates it at the first turn", fix: "openclaw gateway restart"}},
		{name: "OtherAgentsDir", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: "/elsewhere/agents", key: key}
			},
			want: want{failed: []string{CheckDaemonReady}, detail: "the daemon serves /elsewhere/agents", fix: "brainsurgeon serve"}},
		{name: "WrongKey", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), keyFile: filepath.Join(root, ".brainsurgeon", "api.key"), key: "an-old-key",
					activity: &PluginActivity{LastCallAt: at(30), RecentFailures: []PluginFailure{fail403}, FailuresTotal: 7}}
			},
			want: want{failed: []string{CheckKeyAccepted, CheckPluginCalls}, detail: "403 invalid API key", fix: "re-reads its key file"}},
		{name: "WrongKeyFile", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), keyFile: "/other/api.key", key: "an-old-key"}
			},
			want: want{failed: []string{CheckKeyAccepted}, detail: "403", fix: "the daemon reads its key from /other/api.key"}},
		{name: "OlderDaemon", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", noPluginAPI: true}
			},
			want: want{failed: []string{CheckKeyAccepted}, detail: "older than this brainsurgeon", fix: "restart the daemon"}},
		{name: "EngineNoViewYet", install: true, engine: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key, activity: &PluginActivity{RecentFailures: []PluginFailure{}}}
			},
			want: want{healthy: true, detail: "no view since the daemon started"}},
		{name: "EngineFailing", install: true, engine: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key,
					activity: &PluginActivity{LastCallAt: at(30), LastOKAt: at(5), LastViewAt: at(5), Views: 1, RecentFailures: []PluginFailure{
						{At: *at(30), Method: "POST", Path: "/api/plugin/v1/assemble", Status: 500, Error: "engine: boom"}}, FailuresTotal: 1}}
			},
			want: want{failed: []string{CheckEngineServing, CheckPluginCalls}, detail: "POST /api/plugin/v1/assemble → 500 engine: boom", fix: "daemon's log"}},
		{name: "OwnProbeFailure", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key,
					activity: &PluginActivity{RecentFailures: []PluginFailure{{At: *at(50), Method: "GET", Path: "/api/plugin/v1/health", Status: 403, Error: "invalid API key"}}, FailuresTotal: 1}}
			},
			want: want{healthy: true, detail: "no failed plugin calls"}},
		{name: "FailuresRecovered", install: true,
			daemon: func(root, key string) *fakeDaemon {
				return &fakeDaemon{status: "ok", agentsDir: filepath.Join(root, "agents"), key: key,
					activity: &PluginActivity{LastCallAt: at(40), LastOKAt: at(40), RecentFailures: []PluginFailure{fail403}, FailuresTotal: 2}}
			},
			want: want{healthy: true, detail: "calls succeed again since 2026-09-07T10:40:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := setup(t, "", nil)
			var srv *httptest.Server
			d := &fakeDaemon{}
			srv = httptest.NewServer(d)
			url := srv.URL
			if tc.daemon == nil {
				srv.Close() // nothing listens there any more
			} else {
				defer srv.Close()
			}
			if tc.install {
				if _, err := Install(context.Background(), Env{}, InstallOptions{Link: true, Engine: tc.engine, DaemonURL: url}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.daemon != nil {
				key, err := ReadKey(filepath.Join(root, ".brainsurgeon", "api.key"))
				if err != nil {
					t.Fatal(err)
				}
				*d = *tc.daemon(root, key)
			}
			st, err := Status(Env{}, "")
			if err != nil {
				t.Fatal(err)
			}
			CheckSystem(context.Background(), Env{}, st, "")
			var failed []string
			var first *Check
			names := map[string]bool{}
			all := ""
			for i, c := range st.Checks {
				names[c.Name] = true
				all += c.Name + ": " + c.Detail + "\n"
				if !c.OK {
					failed = append(failed, c.Name)
					if first == nil {
						first = &st.Checks[i]
					}
					if c.Fix == "" {
						t.Errorf("%s failed without a fix", c.Name)
					}
				} else if c.Fix != "" {
					t.Errorf("%s passed with a fix %q", c.Name, c.Fix)
				}
			}
			if st.Healthy != tc.want.healthy || strings.Join(failed, ",") != strings.Join(tc.want.failed, ",") {
				t.Fatalf("healthy %v, failed %v; want %v, %v\n%s", st.Healthy, failed, tc.want.healthy, tc.want.failed, all)
			}
			if tc.name == "HealthyWithLatency" && (st.Engine == nil || st.Engine.Views != 3) {
				t.Errorf("engine activity %+v; want the daemon's count", st.Engine)
			}
			for _, n := range tc.want.absent {
				if names[n] {
					t.Errorf("%s ran, though an earlier check failed", n)
				}
			}
			switch {
			case first != nil:
				if !strings.Contains(first.Detail, tc.want.detail) || !strings.Contains(first.Fix, tc.want.fix) {
					t.Errorf("first failure %+v; want %q in its detail and %q in its fix", *first, tc.want.detail, tc.want.fix)
				}
				if HealthError(st) == nil {
					t.Error("HealthError = nil for an unhealthy system")
				}
			case !strings.Contains(all, tc.want.detail):
				t.Errorf("no check says %q:\n%s", tc.want.detail, all)
			}
			if tc.engine && tc.daemon != nil && !names[CheckEngineSelected] {
				t.Errorf("engine_selected did not run:\n%s", all)
			}
			// Every JSON member is snake_case.
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`"([A-Za-z_]+)":`).FindAllStringSubmatch(string(b), -1) {
				if m[1] != strings.ToLower(m[1]) {
					t.Errorf("JSON member %q is not snake_case", m[1])
				}
			}
		})
	}
}

// TestReadPluginConfig reads the plugin's entry from a JSON5 config, as
// OpenClaw accepts it.
func TestReadPluginConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "openclaw.json")
	cfg := "{\n  // mine\n  plugins: {entries: {brainsurgeon: {enabled: false, config: {daemonUrl: 'http://127.0.0.1:9100', apiKeyFile: \"/k\",},},},},\n}\n"
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	pc, ok, err := ReadPluginConfig(p)
	if err != nil || !ok || pc != (PluginConfig{DaemonURL: "http://127.0.0.1:9100", APIKeyFile: "/k", Disabled: true}) {
		t.Fatalf("%+v %v %v", pc, ok, err)
	}
	if _, ok, err := ReadPluginConfig(filepath.Join(t.TempDir(), "none.json")); ok || err != nil {
		t.Fatalf("missing config: %v %v", ok, err)
	}
}

// TestInstallNext: the next commands depend on what runs at the daemon URL.
func TestInstallNext(t *testing.T) {
	d := &fakeDaemon{status: "ok"}
	srv := httptest.NewServer(d)
	defer srv.Close()
	n := InstallNext(context.Background(), Env{}, srv.URL, "", true)
	if n.Daemon != DaemonRunning || strings.Join(n.Commands, "|") != "openclaw gateway restart|brainsurgeon openclaw status" ||
		!strings.Contains(strings.Join(n.Notes, " "), "needs no restart") {
		t.Errorf("running: %+v", n)
	}
	d.status = "waiting"
	if n := InstallNext(context.Background(), Env{}, srv.URL, "", true); n.Daemon != DaemonWaiting || len(n.Commands) != 2 {
		t.Errorf("waiting: %+v", n)
	}
	down := httptest.NewServer(d)
	down.Close()
	n = InstallNext(context.Background(), Env{}, down.URL, "/x/agents", false)
	serve := "brainsurgeon serve --agents-dir /x/agents --addr " + strings.TrimPrefix(down.URL, "http://")
	if n.Daemon != DaemonDown || len(n.Commands) != 3 || n.Commands[0] != serve || n.Commands[1] != "openclaw gateway restart" ||
		!strings.Contains(strings.Join(n.Notes, " "), "brainsurgeon service install --agents-dir /x/agents") {
		t.Errorf("down: %+v", n)
	}
	if got := ServeAddr(DefaultDaemonURL); got != "" {
		t.Errorf("ServeAddr(default) = %q", got)
	}
}
