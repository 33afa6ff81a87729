package piinstall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
	"github.com/brainsurgeon/brainsurgeon/internal/piinstall"
)

// testEnv is a home directory of its own with no OpenClaw, and a small
// plugin to write.
func testEnv(t *testing.T) (piinstall.Env, string) {
	t.Helper()
	home := t.TempDir()
	vars := map[string]string{}
	return piinstall.Env{
		Getenv:  func(k string) string { return vars[k] },
		HomeDir: func() (string, error) { return home, nil },
		Files: fstest.MapFS{
			"package.json":         {Data: []byte(`{"name":"brainsurgeon","version":"9.9.9"}`)},
			"openclaw.plugin.json": {Data: []byte(`{"id":"brainsurgeon"}`)},
			"pi.js":                {Data: []byte("export default function (pi) {}\n")},
			"client.js":            {Data: []byte("export {};\n")},
		},
		Version: "9.9.9",
	}, home
}

func read(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstallWithoutLink writes the extension, its config and the key,
// and leaves pi's settings alone, saying what to add.
func TestInstallWithoutLink(t *testing.T) {
	env, home := testEnv(t)
	res, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".pi", "agent", "brainsurgeon")
	if res.Dir != dir || res.Linked || res.SettingsChanged || !res.KeyCreated || !strings.Contains(res.Snippet, dir) {
		t.Fatalf("result %+v", res)
	}
	// No OpenClaw here: the daemon is the one of pi's sessions dir.
	if want := filepath.Join(home, ".pi", "agent", ".brainsurgeon", "api.key"); res.KeyFile != want {
		t.Errorf("key file %s, want %s", res.KeyFile, want)
	}
	var cfg struct{ DaemonURL, APIKeyFile string }
	if err := json.Unmarshal(read(t, filepath.Join(dir, piinstall.ConfigName)), &cfg); err != nil || cfg.DaemonURL != openclawinstall.DefaultDaemonURL || cfg.APIKeyFile != res.KeyFile {
		t.Errorf("config %+v, %v", cfg, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".pi", "agent", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("settings.json written without --link: %v", err)
	}
	if fi, err := os.Stat(res.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v", fi, err)
	}
}

// TestLinkRoundTrip links into settings of every starting shape and
// uninstalls: settings.json comes back byte for byte (or goes away when
// there was none), and every file install wrote is gone.
func TestLinkRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, settings string }{
		{"no settings", ""},
		{"empty object", "{}\n"},
		{"other members", "{\n  \"defaultProvider\": \"anthropic\",\n  \"theme\": \"dark\"\n}\n"},
		{"extensions already", "{\n  \"extensions\": [\n    \"/opt/other.ts\"\n  ],\n  \"theme\": \"light\"\n}"},
		{"crlf and unicode", "{\r\n  \"theme\": \"d\u00e9j\u00e0 vu\"\r\n}\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, home := testEnv(t)
			agent := filepath.Join(home, ".pi", "agent")
			settings := filepath.Join(agent, "settings.json")
			if tc.settings != "" {
				if err := os.MkdirAll(agent, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(settings, []byte(tc.settings), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			res, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Link: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Linked || !res.SettingsChanged {
				t.Fatalf("result %+v", res)
			}
			var got struct {
				Extensions []string `json:"extensions"`
			}
			b := read(t, settings)
			if err := json.Unmarshal(b, &got); err != nil || got.Extensions[len(got.Extensions)-1] != res.Dir {
				t.Fatalf("settings after install:\n%s\n%v", b, err)
			}
			if tc.settings != "" && strings.Contains(tc.settings, "theme") && !bytes.Contains(b, []byte(`"theme"`)) {
				t.Fatalf("settings lost a member:\n%s", b)
			}
			// Installing again changes nothing in the settings.
			if res2, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Link: true}); err != nil || res2.SettingsChanged || !bytes.Equal(read(t, settings), b) {
				t.Fatalf("second install: %+v, %v", res2, err)
			}
			un, err := piinstall.Uninstall(context.Background(), env, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.settings == "" {
				if _, err := os.Stat(settings); !os.IsNotExist(err) || un.SettingsAction != "removed" {
					t.Fatalf("settings after uninstall: %v, action %q; want no file", err, un.SettingsAction)
				}
			} else {
				if got := read(t, settings); string(got) != tc.settings || un.SettingsAction != "restored" {
					t.Fatalf("settings after uninstall (%s):\n%q\nwant\n%q", un.SettingsAction, got, tc.settings)
				}
				if fi, _ := os.Stat(settings); fi.Mode().Perm() != 0o640 {
					t.Errorf("settings mode %v, want 0640", fi.Mode().Perm())
				}
			}
			for _, p := range []string{res.Dir, res.KeyFile, res.Record} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s left after uninstall: %v", p, err)
				}
			}
		})
	}
}

// TestUninstallKeepsOthers keeps a changed settings file (taking out only
// the extension's entry), a file of the user's in the extension's dir, and
// a key file the OpenClaw plugin's install also uses.
func TestUninstallKeepsOthers(t *testing.T) {
	env, home := testEnv(t)
	res, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Link: true})
	if err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(home, ".pi", "agent", "settings.json")
	changed := bytes.Replace(read(t, settings), []byte("{"), []byte("{\n  \"theme\": \"dark\","), 1)
	if err := os.WriteFile(settings, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(res.Dir, "notes.txt")
	if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(res.KeyFile), "openclaw-install.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	un, err := piinstall.Uninstall(context.Background(), env, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Theme      string   `json:"theme"`
		Extensions []string `json:"extensions"`
	}
	if err := json.Unmarshal(read(t, settings), &got); err != nil || got.Theme != "dark" || len(got.Extensions) != 0 || un.SettingsAction != "entry_removed" {
		t.Fatalf("settings after uninstall %+v (%s), %v", got, un.SettingsAction, err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's file was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "pi.js")); !os.IsNotExist(err) {
		t.Errorf("pi.js left: %v", err)
	}
	if _, err := os.Stat(res.KeyFile); err != nil {
		t.Errorf("the shared key file was removed: %v", err)
	}
	if len(un.Kept) != 2 {
		t.Errorf("kept %v, want the user's file and the key", un.Kept)
	}
}

// TestBadSettings refuses settings that are not pi's and changes nothing.
func TestBadSettings(t *testing.T) {
	for _, bad := range []string{"[1,2]", "{\"extensions\": \"x.ts\"}", "{not json"} {
		env, home := testEnv(t)
		settings := filepath.Join(home, ".pi", "agent", "settings.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Link: true})
		if err == nil || !strings.Contains(err.Error(), "nothing changed") {
			t.Errorf("%s: %v, want a refusal", bad, err)
		}
		if got := read(t, settings); string(got) != bad {
			t.Errorf("%s: settings changed to %s", bad, got)
		}
	}
}

// TestProjectScope installs into a project's .pi.
func TestProjectScope(t *testing.T) {
	env, _ := testEnv(t)
	proj := t.TempDir()
	res, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Project: proj, Link: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Scope != "project" || res.Dir != filepath.Join(proj, ".pi", "brainsurgeon") || res.Settings != filepath.Join(proj, ".pi", "settings.json") {
		t.Fatalf("paths %+v", res.Paths)
	}
	if _, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Project: filepath.Join(proj, "missing")}); err == nil {
		t.Error("a missing project was accepted")
	}
	if _, err := piinstall.Uninstall(context.Background(), env, proj, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(proj, ".pi", "settings.json")); !os.IsNotExist(err) {
		t.Errorf("project settings left: %v", err)
	}
}

// TestStatus checks the running system against a daemon on loopback: down,
// serving another dir, then healthy.
func TestStatus(t *testing.T) {
	env, home := testEnv(t)
	pi := filepath.Join(home, ".pi", "agent", "sessions")
	var piDir string
	key := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/health":
			json.NewEncoder(w).Encode(map[string]any{"status": "ok", "version": "t", "agents_dir": "/elsewhere", "pi_sessions_dir": piDir})
		case "/api/plugin/v1/health":
			if r.Header.Get("X-API-Key") != key {
				w.WriteHeader(403)
				w.Write([]byte(`{"error":"invalid API key"}`))
				return
			}
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	res, err := piinstall.Install(context.Background(), env, piinstall.InstallOptions{Link: true, DaemonURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := openclawinstall.ReadKey(res.KeyFile)
	check := func(wantHealthy bool, wantLast string) {
		t.Helper()
		st, err := piinstall.Status(context.Background(), env, "", "")
		if err != nil {
			t.Fatal(err)
		}
		last := st.Checks[len(st.Checks)-1]
		if st.Healthy != wantHealthy || last.Name != wantLast {
			t.Fatalf("healthy %v, last check %+v; want %v, %s", st.Healthy, last, wantHealthy, wantLast)
		}
		if (piinstall.HealthError(st) == nil) != wantHealthy {
			t.Fatalf("HealthError disagrees")
		}
	}
	check(false, piinstall.CheckServesPi)
	piDir = pi
	check(false, piinstall.CheckKeyAccepted)
	key = k
	check(true, piinstall.CheckKeyAccepted)
	srv.Close()
	check(false, piinstall.CheckDaemon)
}
