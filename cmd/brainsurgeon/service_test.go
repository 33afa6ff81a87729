package main

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/service"
)

// fakeServiceEnv stands in for a Linux machine running systemd, with a
// home of its own; run answers every systemctl call.
func fakeServiceEnv(t *testing.T, run service.Runner) (service.Env, string) {
	home := t.TempDir()
	env := service.Env{
		GOOS:     "linux",
		Getenv:   func(string) string { return "" },
		HomeDir:  func() (string, error) { return home, nil },
		LookPath: func(n string) (string, error) { return "/usr/bin/" + n, nil },
		Stat: func(p string) (fs.FileInfo, error) {
			if p == "/run/systemd/system" {
				return os.Stat(home)
			}
			return os.Stat(p)
		},
		Run: run,
		UID: 1000,
	}
	old := serviceEnv
	serviceEnv = func() service.Env { return env }
	t.Cleanup(func() { serviceEnv = old })
	return env, filepath.Join(home, ".config", "systemd", "user", service.UnitName)
}

func okRun(ctx context.Context, name string, args ...string) ([]byte, error) { return nil, nil }

// TestServiceUninstallTellsTheTruth: a unit that could not be removed
// exits non-zero without "Removed"; a unit that could not be looked at is
// not "nothing to uninstall".
func TestServiceUninstallTellsTheTruth(t *testing.T) {
	_, unit := fakeServiceEnv(t, okRun)
	if err := os.MkdirAll(filepath.Join(unit, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "service", "uninstall")
	if code == 0 || strings.Contains(out, "Removed") {
		t.Errorf("remove failure: exit %d\n%s\n%s", code, out, errOut)
	}
	os.RemoveAll(unit)
	code, out, _ = run(t, "service", "uninstall")
	if code != 0 || !strings.Contains(out, "Nothing to uninstall") {
		t.Errorf("nothing installed: exit %d\n%s", code, out)
	}
	os.WriteFile(unit, []byte("[Unit]\n"), 0o644)
	code, out, _ = run(t, "service", "uninstall")
	if code != 0 || !strings.Contains(out, "Removed "+unit) {
		t.Errorf("installed: exit %d\n%s", code, out)
	}
}

// TestServiceStatusBusFailure shows a systemctl failure as a problem.
func TestServiceStatusBusFailure(t *testing.T) {
	fakeServiceEnv(t, func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return []byte("Failed to connect to bus: No medium found\n"), errors.New("exit status 1")
	})
	code, out, _ := run(t, "service", "status")
	if code != 0 || !strings.Contains(out, "Manager: systemctl --user is-active") || strings.Contains(out, "Active:") {
		t.Errorf("exit %d\n%s", code, out)
	}
}

// TestServiceInstallNamesNoDefaultKeyFile: the unit never names serve's
// default key file (serve reads it by itself when it exists; a named file
// that is gone makes serve exit), even when it exists.
func TestServiceInstallNamesNoDefaultKeyFile(t *testing.T) {
	_, unit := fakeServiceEnv(t, okRun)
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	key := filepath.Join(root, ".brainsurgeon", "api.key")
	os.MkdirAll(filepath.Dir(key), 0o700)
	os.WriteFile(key, []byte("k\n"), 0o600)
	for _, envKey := range []string{"", key} {
		t.Setenv("BRAINSURGEON_API_KEY_FILE", envKey)
		if code, out, errOut := run(t, "service", "install", "--agents-dir", agents); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if b, _ := os.ReadFile(unit); strings.Contains(string(b), "BRAINSURGEON_API_KEY_FILE") {
			t.Errorf("BRAINSURGEON_API_KEY_FILE=%q: unit names the default key file:\n%s", envKey, b)
		}
	}
	other := filepath.Join(root, "other.key")
	t.Setenv("BRAINSURGEON_API_KEY_FILE", other)
	if code, _, errOut := run(t, "service", "install", "--agents-dir", agents); code == 0 || !strings.Contains(errOut, "expected an existing key file") {
		t.Errorf("missing named key file: exit %d\n%s", code, errOut)
	}
	os.WriteFile(other, []byte("k\n"), 0o600)
	if code, out, errOut := run(t, "service", "install", "--agents-dir", agents); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(unit); !strings.Contains(string(b), "Environment=BRAINSURGEON_API_KEY_FILE="+other) {
		t.Errorf("unit does not name %s:\n%s", other, b)
	}
}

// TestServiceInstallDryRunWithoutSystemd: the preview is printed, then a
// note that systemd is absent; no "Error:", exit 0, nothing written. The
// real install says so and exits 1.
func TestServiceInstallDryRunWithoutSystemd(t *testing.T) {
	env, unit := fakeServiceEnv(t, okRun)
	env.Stat = func(p string) (fs.FileInfo, error) {
		if p == "/run/systemd/system" {
			return nil, fs.ErrNotExist
		}
		return os.Stat(p)
	}
	serviceEnv = func() service.Env { return env }
	agents := filepath.Join(t.TempDir(), "agents")
	code, out, errOut := run(t, "service", "install", "--dry-run", "--agents-dir", agents)
	if code != 0 || errOut != "" || !strings.Contains(out, "Would write "+unit) || !strings.Contains(out, "ExecStart=") ||
		!strings.Contains(out, "Note: no service manager: /run/systemd/system does not exist") || !strings.Contains(out, "systemctl --user enable --now") {
		t.Errorf("dry run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "service", "install", "--dry-run", "--json", "--agents-dir", agents)
	if code != 0 || !strings.Contains(out, `"problem": "no service manager:`) || strings.Contains(out, `"error"`) {
		t.Errorf("dry run --json: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(unit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dry run wrote %s: %v", unit, err)
	}
	code, _, errOut = run(t, "service", "install", "--agents-dir", agents)
	if code != 1 || !strings.Contains(errOut, "Error: service install: no service manager") {
		t.Errorf("install without systemd: exit %d\n%s", code, errOut)
	}
}
