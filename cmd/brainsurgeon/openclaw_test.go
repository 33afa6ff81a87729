package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
)

// openclawRoot makes an OpenClaw root named only by OPENCLAW_STATE_DIR.
func openclawRoot(t *testing.T) string {
	root := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("BRAINSURGEON_AGENTS_DIR", "")
	t.Setenv("AGENTS_DIR", "")
	t.Setenv("OPENCLAW_CONFIG_PATH", "")
	t.Setenv("OPENCLAW_STATE_DIR", root)
	return root
}

// TestOpenClawRootIsServes: with only OPENCLAW_STATE_DIR set, install
// writes the key where serve (and service) look for it: beside the
// default agents dir.
func TestOpenClawRootIsServes(t *testing.T) {
	root := openclawRoot(t)
	if code, out, errOut := run(t, "openclaw", "install"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	agents := config.DefaultAgentsDir()
	if agents != filepath.Join(root, "agents") {
		t.Fatalf("default agents dir %s, want %s/agents", agents, root)
	}
	keys, path, err := readServeKeyFile(serveEnv{}, agents)
	if err != nil || len(keys) != 1 || path != filepath.Join(root, ".brainsurgeon", "api.key") {
		t.Errorf("serve's key file %q %q %v", keys, path, err)
	}
	// --agents-dir moves the root for install as for serve.
	other := t.TempDir()
	if code, out, errOut := run(t, "openclaw", "install", "--agents-dir", filepath.Join(other, "agents")); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(other, ".brainsurgeon", "api.key")); err != nil {
		t.Error(err)
	}
}

// TestOpenClawUninstallHandLinkedRefuses: without --yes and without a
// terminal, uninstall of a plugin the user linked by hand exits non-zero,
// prints the commands to run first, and removes nothing.
func TestOpenClawUninstallHandLinkedRefuses(t *testing.T) {
	root := openclawRoot(t)
	if code, out, errOut := run(t, "openclaw", "install"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	cfg := `{"plugins":{"entries":{"brainsurgeon":{"enabled":true}}}}`
	os.WriteFile(filepath.Join(root, "openclaw.json"), []byte(cfg), 0o600)
	code, out, errOut := run(t, "openclaw", "uninstall")
	if code == 0 || !strings.Contains(errOut, "openclaw plugins uninstall brainsurgeon --force") || !strings.Contains(errOut, "openclaw config unset plugins.entries.brainsurgeon") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, ".brainsurgeon", "openclaw-plugin", "index.js")); err != nil {
		t.Errorf("plugin removed: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "openclaw.json")); string(b) != cfg {
		t.Errorf("config changed: %s", b)
	}
}
