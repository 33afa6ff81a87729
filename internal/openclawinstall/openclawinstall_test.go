package openclawinstall

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	openclawplugin "github.com/brainsurgeon/brainsurgeon/openclaw-plugin"
)

// setup makes an OpenClaw root with the given config (nil: none) and a
// fake openclaw of version on PATH, and returns the root.
func setup(t *testing.T, version string, config []byte) string {
	root := t.TempDir()
	t.Setenv("OPENCLAW_STATE_DIR", root)
	t.Setenv("OPENCLAW_CONFIG_PATH", filepath.Join(root, "openclaw.json"))
	t.Setenv("PATH", fakeOpenClawDir(t, version))
	if config != nil {
		if err := os.WriteFile(filepath.Join(root, "openclaw.json"), config, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readOrNil(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstallUninstallRestoresConfig: install --link then uninstall leaves
// the config byte-identical (or absent, as it was), and removes every file
// install made.
func TestInstallUninstallRestoresConfig(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		config        []byte
	}{
		{"9.x", "2026.9.6", []byte("{\"update\":   {\"checkOnStart\": false},\n\t\"gateway\": {\"port\": 19001}}")},
		{"7.x", "2026.7.35", []byte("{\n  \"agents\": {}\n}\n")},
		{"no config", "2026.9.6", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := setup(t, tc.version, tc.config)
			cfgPath := filepath.Join(root, "openclaw.json")
			ctx := context.Background()
			res, err := Install(ctx, Env{}, InstallOptions{Link: true, DaemonURL: "http://127.0.0.1:9000"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Linked || !res.ConfigChanged || res.OpenClawVersion != tc.version || len(res.Commands) != 2 {
				t.Errorf("install result %+v", res)
			}
			after := readOrNil(t, cfgPath)
			var cfg struct {
				Plugins struct {
					Load    struct{ Paths []string }
					Entries map[string]struct {
						Enabled bool
						Config  map[string]string
					}
				}
			}
			if err := json.Unmarshal(after, &cfg); err != nil {
				t.Fatalf("config after install: %v\n%s", err, after)
			}
			e := cfg.Plugins.Entries[PluginID]
			if len(cfg.Plugins.Load.Paths) != 1 || cfg.Plugins.Load.Paths[0] != res.PluginDir || !e.Enabled ||
				e.Config["daemonUrl"] != "http://127.0.0.1:9000" || e.Config["apiKeyFile"] != res.KeyFile {
				t.Errorf("config after install:\n%s", after)
			}
			checkPlugin(t, res.PluginDir)
			checkKey(t, res.KeyFile)
			if st, err := Status(Env{}, ""); err != nil || !st.Installed || !st.Current || !st.Linked || !st.ConfigNamesPlugin || !st.KeyFileExists {
				t.Errorf("status after install: %+v, %v", st, err)
			}

			un, err := Uninstall(ctx, Env{}, UninstallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := "restored"
			if tc.config == nil {
				want = "removed"
			}
			if un.ConfigAction != want || un.BackupKept != "" || un.KeyKept != "" {
				t.Errorf("uninstall result %+v, want config %s", un, want)
			}
			if got := readOrNil(t, cfgPath); !bytes.Equal(got, tc.config) {
				t.Errorf("config after uninstall:\n%q\nwant\n%q", got, tc.config)
			}
			if tc.config != nil {
				if fi, _ := os.Stat(cfgPath); fi.Mode().Perm() != 0o640 {
					t.Errorf("config mode after uninstall %v, want 0640", fi.Mode().Perm())
				}
			}
			if _, err := os.Stat(filepath.Join(root, ".brainsurgeon")); !os.IsNotExist(err) {
				t.Errorf(".brainsurgeon after uninstall: %v", err)
			}
			again, err := Uninstall(ctx, Env{}, UninstallOptions{})
			if err != nil || again.Installed || len(again.Removed) != 0 {
				t.Errorf("second uninstall: %+v, %v", again, err)
			}
		})
	}
}

// pluginFiles returns the embedded plugin's file paths, sorted: what
// install writes.
func pluginFiles(t *testing.T) []string {
	t.Helper()
	var names []string
	err := fs.WalkDir(openclawplugin.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Contains(names, "index.js") || !slices.Contains(names, "openclaw.plugin.json") {
		t.Fatalf("embedded plugin files %q: expected index.js and openclaw.plugin.json among them", names)
	}
	return names
}

func checkPlugin(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("plugin dir %s: %v %v", dir, fi, err)
	}
	for _, name := range pluginFiles(t) {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("plugin file %s: %v %v", name, fi, err)
		}
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".*new-*")); len(leftovers) > 0 {
		t.Errorf("temporary dirs left: %q", leftovers)
	}
}

func checkKey(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(b) {
		t.Errorf("key file %s: %v, mode %v, %d bytes", path, err, fi.Mode(), len(b))
	}
}

// TestLinkRunsOpenClawOnTheRoot: with the root taken from the agents dir
// (no OPENCLAW_STATE_DIR), OpenClaw's CLI is run on that root and its
// config, the one backed up, and not on ~/.openclaw.
func TestLinkRunsOpenClawOnTheRoot(t *testing.T) {
	root := setup(t, "", []byte(`{"x":true}`))
	t.Setenv("OPENCLAW_STATE_DIR", "")
	t.Setenv("OPENCLAW_CONFIG_PATH", "")
	t.Setenv("BRAINSURGEON_AGENTS_DIR", filepath.Join(root, "agents"))
	t.Setenv("HOME", t.TempDir())
	res, err := Install(context.Background(), Env{}, InstallOptions{Link: true})
	if err != nil || res.Root != root || !res.ConfigChanged {
		t.Fatalf("install %+v, %v", res, err)
	}
	if _, err := Uninstall(context.Background(), Env{}, UninstallOptions{}); err != nil {
		t.Fatal(err)
	}
	if b := readOrNil(t, filepath.Join(root, "openclaw.json")); string(b) != `{"x":true}` {
		t.Errorf("config %s", b)
	}
}

// TestUninstallKeepsOtherChanges: when the config changed after install,
// uninstall removes only our entries (with the openclaw install ran, when
// PATH has none) and says the backup is kept.
func TestUninstallKeepsOtherChanges(t *testing.T) {
	root := setup(t, "", []byte(`{"update":{"checkOnStart":false}}`))
	cfgPath := filepath.Join(root, "openclaw.json")
	ctx := context.Background()
	if _, err := Install(ctx, Env{}, InstallOptions{Link: true}); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	json.Unmarshal(readOrNil(t, cfgPath), &cfg)
	cfg["gateway"] = map[string]any{"port": 19001.0}
	b, _ := json.Marshal(cfg)
	os.WriteFile(cfgPath, b, 0o600)
	// With no openclaw on PATH, uninstall uses the one install ran.
	t.Setenv("PATH", t.TempDir())

	un, err := Uninstall(ctx, Env{}, UninstallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if un.ConfigAction != "entries_removed" || un.BackupKept == "" || len(un.Commands) != 2 {
		t.Errorf("uninstall result %+v", un)
	}
	after := string(readOrNil(t, cfgPath))
	if strings.Contains(after, PluginID) || !strings.Contains(after, "19001") || !strings.Contains(after, "checkOnStart") {
		t.Errorf("config after uninstall:\n%s", after)
	}
	if _, err := os.Stat(un.BackupKept); err != nil {
		t.Errorf("backup: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".brainsurgeon", "openclaw-plugin")); !os.IsNotExist(err) {
		t.Errorf("plugin dir after uninstall: %v", err)
	}
}

// TestInstallWithoutLink changes nothing of OpenClaw's, runs no command,
// keeps an existing key, and prints a snippet that names everything.
func TestInstallWithoutLink(t *testing.T) {
	config := []byte("{ // JSON5\n  update: {checkOnStart: false},\n}\n")
	root := setup(t, "", config)
	key := filepath.Join(root, ".brainsurgeon", "api.key")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte("mine\n"), 0o600)
	dir := filepath.Join(t.TempDir(), "plug")
	res, err := Install(context.Background(), Env{}, InstallOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Linked || res.KeyCreated || len(res.Commands) != 0 || res.PluginDir != dir {
		t.Errorf("result %+v", res)
	}
	if b := readOrNil(t, key); string(b) != "mine\n" {
		t.Errorf("existing key replaced: %q", b)
	}
	if b := readOrNil(t, filepath.Join(root, "openclaw.json")); !bytes.Equal(b, config) {
		t.Errorf("config changed:\n%s", b)
	}
	if calls := readOrNil(t, filepath.Join(os.Getenv("PATH"), "calls")); calls != nil {
		t.Errorf("openclaw ran: %s", calls)
	}
	var snip map[string]any
	if err := json.Unmarshal([]byte(res.Snippet), &snip); err != nil {
		t.Fatalf("snippet is not JSON: %v\n%s", err, res.Snippet)
	}
	for _, want := range []string{dir, key, DefaultDaemonURL, `"enabled": true`, `"paths"`} {
		if !strings.Contains(res.Snippet, want) {
			t.Errorf("snippet lacks %q:\n%s", want, res.Snippet)
		}
	}
	checkPlugin(t, dir)
	// Reinstalling replaces the copy; uninstall keeps the user's key.
	os.WriteFile(filepath.Join(dir, "index.js"), []byte("stale"), 0o644)
	if _, err := Install(context.Background(), Env{}, InstallOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if b := readOrNil(t, filepath.Join(dir, "index.js")); string(b) == "stale" {
		t.Error("reinstall left the old index.js")
	}
	un, err := Uninstall(context.Background(), Env{}, UninstallOptions{})
	if err != nil || un.KeyKept != key || un.ConfigAction != "untouched" {
		t.Errorf("uninstall %+v, %v", un, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("plugin dir after uninstall: %v", err)
	}
}

// TestReinstallKeepsFirstBackup: installing twice and uninstalling once
// restores the config from before the first install.
func TestReinstallKeepsFirstBackup(t *testing.T) {
	config := []byte(`{"a":1}`)
	root := setup(t, "", config)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := Install(ctx, Env{}, InstallOptions{Link: true, DaemonURL: "http://localhost:800" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if un, err := Uninstall(ctx, Env{}, UninstallOptions{}); err != nil || un.ConfigAction != "restored" {
		t.Fatalf("uninstall %+v, %v", un, err)
	}
	if b := readOrNil(t, filepath.Join(root, "openclaw.json")); !bytes.Equal(b, config) {
		t.Errorf("config %s, want %s", b, config)
	}
}

// TestInstallLinkNeedsOpenClaw: without an openclaw on PATH, --link fails
// before writing anything.
func TestInstallLinkNeedsOpenClaw(t *testing.T) {
	root := setup(t, "", nil)
	t.Setenv("PATH", t.TempDir())
	_, err := Install(context.Background(), Env{}, InstallOptions{Link: true})
	if err == nil || !strings.Contains(err.Error(), "openclaw command is not on PATH") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".brainsurgeon")); !os.IsNotExist(err) {
		t.Errorf("wrote %v", err)
	}
	_, err = Install(context.Background(), Env{}, InstallOptions{Link: true, OpenClaw: root})
	if err == nil || !strings.Contains(err.Error(), "expected the openclaw executable") {
		t.Errorf("--openclaw dir: %v", err)
	}
}

// TestWritePluginRefusesForeignDir never replaces a directory that is not
// a copy of the plugin.
func TestWritePluginRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	files := fstest.MapFS{"openclaw.plugin.json": {Data: []byte(`{"id":"brainsurgeon"}`)}}
	if _, err := WritePlugin(files, dir, nil); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Errorf("err %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "x" {
		t.Error("foreign file touched")
	}
}

func TestCheckDaemonURL(t *testing.T) {
	for u, ok := range map[string]bool{
		"http://127.0.0.1:8000": true, "http://localhost": true, "http://[::1]:9/x": true,
		"https://127.0.0.1:8000": false, "http://127.0.0.1.evil.com": false, "http://example.com": false, "": false,
	} {
		if err := CheckDaemonURL(u); (err == nil) != ok {
			t.Errorf("CheckDaemonURL(%q) = %v", u, err)
		}
	}
}

func TestParseOpenClawVersion(t *testing.T) {
	for out, want := range map[string]string{
		"OpenClaw 2026.9.6 (eb377ac)\n": "2026.9.6", "2026.7.35": "2026.7.35", "openclaw dev": "",
	} {
		v, ok := ParseOpenClawVersion(out)
		if got := v.String(); (ok && got != want) || (!ok && want != "") {
			t.Errorf("%q: %v %v, want %q", out, got, ok, want)
		}
	}
	if v, _ := ParseOpenClawVersion("2026.7.35"); !v.Before(2026, 8) {
		t.Error("2026.7.35 not before 2026.8")
	}
}

func TestResolvePaths(t *testing.T) {
	env := func(vars map[string]string) Env {
		return Env{Getenv: func(k string) string { return vars[k] }, HomeDir: func() (string, error) { return "/home/u", nil }}
	}
	for _, tc := range []struct {
		vars            map[string]string
		agents, dir     string
		root, cfg, plug string
		wantErr         bool
	}{
		{vars: nil, root: "/home/u/.openclaw", cfg: "/home/u/.openclaw/openclaw.json", plug: "/home/u/.openclaw/.brainsurgeon/openclaw-plugin"},
		{vars: map[string]string{"OPENCLAW_STATE_DIR": "/s"}, root: "/s", cfg: "/s/openclaw.json", plug: "/s/.brainsurgeon/openclaw-plugin"},
		{vars: map[string]string{"OPENCLAW_STATE_DIR": "~/oc"}, root: "/home/u/oc", cfg: "/home/u/oc/openclaw.json", plug: "/home/u/oc/.brainsurgeon/openclaw-plugin"},
		// The agents dir wins, as for serve: the root is its parent.
		{vars: map[string]string{"OPENCLAW_STATE_DIR": "/s", "BRAINSURGEON_AGENTS_DIR": "/x/agents"}, root: "/x", cfg: "/x/openclaw.json", plug: "/x/.brainsurgeon/openclaw-plugin"},
		{vars: map[string]string{"OPENCLAW_STATE_DIR": "/s", "AGENTS_DIR": "/z/agents"}, root: "/z", cfg: "/z/openclaw.json", plug: "/z/.brainsurgeon/openclaw-plugin"},
		{vars: map[string]string{"OPENCLAW_STATE_DIR": "/s"}, agents: "/y/agents", root: "/y", cfg: "/y/openclaw.json", plug: "/y/.brainsurgeon/openclaw-plugin"},
		{vars: map[string]string{"BRAINSURGEON_AGENTS_DIR": "~/oc/agents", "OPENCLAW_CONFIG_PATH": "/etc/oc.json"}, root: "/home/u/oc", cfg: "/etc/oc.json", plug: "/home/u/oc/.brainsurgeon/openclaw-plugin"},
		{vars: nil, dir: "/opt/bs-plugin", root: "/home/u/.openclaw", cfg: "/home/u/.openclaw/openclaw.json", plug: "/opt/bs-plugin"},
		{vars: nil, dir: "/", wantErr: true},
		{vars: nil, dir: "/home/u/.openclaw", wantErr: true},
	} {
		p, err := ResolvePaths(env(tc.vars), tc.agents, tc.dir)
		if (err != nil) != tc.wantErr {
			t.Errorf("%v %q: err %v", tc.vars, tc.dir, err)
			continue
		}
		if err == nil && (p.Root != tc.root || p.ConfigPath != tc.cfg || p.PluginDir != tc.plug || p.KeyFile != tc.root+"/.brainsurgeon/api.key") {
			t.Errorf("%v %q: %+v", tc.vars, tc.dir, p)
		}
	}
}
