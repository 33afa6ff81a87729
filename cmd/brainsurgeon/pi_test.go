package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPiInstallUninstall installs the extension with --link into pi's
// settings and uninstalls it: the settings come back byte for byte, status
// says what fails while no daemon runs, and every written file goes.
func TestPiInstallUninstall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_CODING_AGENT_DIR", "")
	t.Setenv("BRAINSURGEON_AGENTS_DIR", "")
	t.Setenv("AGENTS_DIR", "")
	t.Setenv("OPENCLAW_STATE_DIR", "")
	t.Setenv("BRAINSURGEON_PI_SESSIONS_DIR", "")
	agent := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(filepath.Join(agent, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(agent, "settings.json")
	before := "{\n  \"defaultProvider\": \"anthropic\"\n}\n"
	if err := os.WriteFile(settings, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: the daemon is down.
	url := "http://127.0.0.1:9"
	code, out, errOut := run(t, "pi", "install", "--link", "--yes", "--daemon-url", url, "--json")
	if code != 0 {
		t.Fatalf("pi install: %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Dir       string `json:"extension_dir"`
		KeyFile   string `json:"key_file"`
		AgentsDir string `json:"agents_dir"`
		Linked    bool   `json:"linked"`
		Next      struct {
			Commands []string `json:"next_commands"`
		} `json:"next"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.Linked || res.AgentsDir != filepath.Join(agent, "sessions") {
		t.Fatalf("install output %s: %v", out, err)
	}
	if len(res.Next.Commands) == 0 || !strings.Contains(res.Next.Commands[0], "brainsurgeon serve --agents-dir "+filepath.Join(agent, "sessions")) {
		t.Errorf("next commands %v: want the daemon of pi's sessions dir first", res.Next.Commands)
	}
	for _, f := range []string{"pi.js", "package.json", "brainsurgeon.json"} {
		if _, err := os.Stat(filepath.Join(res.Dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	b, _ := os.ReadFile(settings)
	if !strings.Contains(string(b), res.Dir) || !strings.Contains(string(b), "defaultProvider") {
		t.Fatalf("settings after install:\n%s", b)
	}
	code, out, _ = run(t, "pi", "status")
	if code != 1 || !strings.Contains(out, "FAIL  daemon_reachable") || !strings.Contains(out, "ok    settings_load_extension") {
		t.Errorf("pi status with no daemon: exit %d\n%s", code, out)
	}
	if code, out, errOut := run(t, "pi", "uninstall"); code == 0 || !strings.Contains(out+errOut, "--yes") {
		t.Errorf("uninstall without --yes from a non-terminal: %d %s %s", code, out, errOut)
	}
	code, out, errOut = run(t, "pi", "uninstall", "--yes")
	if code != 0 {
		t.Fatalf("pi uninstall: %d\n%s\n%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(settings); string(got) != before {
		t.Errorf("settings after uninstall:\n%q\nwant\n%q", got, before)
	}
	for _, p := range []string{res.Dir, res.KeyFile, filepath.Join(agent, "brainsurgeon-install.json")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
	if code, out, _ := run(t, "pi", "uninstall", "--yes"); code != 0 || !strings.Contains(out, "Nothing to uninstall") {
		t.Errorf("second uninstall: %d %s", code, out)
	}
}
