package service

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var goldenSpec = Spec{
	Binary:    "/home/u/go/bin/brainsurgeon",
	Addr:      "127.0.0.1:8000",
	AgentsDir: "/home/u/.openclaw/agents",
	KeyFile:   "/home/u/.openclaw/.brainsurgeon/api.key",
	LogDir:    "/home/u/Library/Logs/brainsurgeon",
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

func TestSystemdUnitGolden(t *testing.T) { golden(t, "brainsurgeon.service", SystemdUnit(goldenSpec)) }

func TestLaunchdPlistGolden(t *testing.T) {
	s := goldenSpec
	s.AgentsDir = "/home/u/<&>/agents"
	b := LaunchdPlist(s)
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		if _, err := d.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("plist is not well-formed XML: %v\n%s", err, b)
		}
	}
	golden(t, "dev.brainsurgeon.serve.plist", LaunchdPlist(goldenSpec))
}

// TestSystemdUnitQuotesSpaces: a path with a space stays one word.
func TestSystemdUnitQuotesSpaces(t *testing.T) {
	s := goldenSpec
	s.Binary, s.AgentsDir = "/opt/my tools/brainsurgeon", "/srv/open claw/agents"
	u := string(SystemdUnit(s))
	if !strings.Contains(u, `ExecStart="/opt/my tools/brainsurgeon" serve --addr 127.0.0.1:8000 --agents-dir "/srv/open claw/agents"`) {
		t.Errorf("unit:\n%s", u)
	}
}

// TestSystemdAnalyzeVerify runs systemd-analyze verify on a generated
// unit, and requires it to say nothing at all (it exits 0 on mere
// warnings).
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("systemd-analyze is not on PATH (%v); CI installs it (Debian package systemd)", err)
		}
		t.Skipf("systemd-analyze is not on PATH (%v): the unit is checked against the golden file only", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "brainsurgeon")
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	s := Spec{Binary: bin, Addr: "127.0.0.1:8000", AgentsDir: dir, KeyFile: filepath.Join(dir, "api.key")}
	unit := filepath.Join(dir, UnitName)
	os.WriteFile(unit, SystemdUnit(s), 0o644)
	out, err := exec.Command(sa, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// fakeOS is an Env over a temp home, with systemctl/launchctl present or
// not, /run/systemd/system present or not, and a runner that records
// calls and fails those listed.
type fakeOS struct {
	home    string
	tools   map[string]bool
	running bool
	fail    map[string]bool
	calls   []string
}

func (f *fakeOS) env(goos string) Env {
	return Env{
		GOOS:    goos,
		Getenv:  func(k string) string { return map[string]string{"XDG_CONFIG_HOME": filepath.Join(f.home, "xdg")}[k] },
		HomeDir: func() (string, error) { return f.home, nil },
		LookPath: func(n string) (string, error) {
			if f.tools[n] {
				return "/usr/bin/" + n, nil
			}
			return "", errors.New("not found")
		},
		Stat: func(p string) (fs.FileInfo, error) {
			if p == "/run/systemd/system" {
				if f.running {
					return os.Stat(f.home)
				}
				return nil, fs.ErrNotExist
			}
			return os.Stat(p)
		},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			c := filepath.Base(name) + " " + strings.Join(args, " ")
			f.calls = append(f.calls, c)
			if f.fail[c] {
				return []byte("Failed to connect to bus"), errors.New("exit status 1")
			}
			if strings.Contains(c, "is-active") {
				return []byte("active\n"), nil
			}
			return nil, nil
		},
		UID: 501,
	}
}

func spec(t *testing.T) Spec {
	return Spec{Binary: "/usr/local/bin/brainsurgeon", Addr: "127.0.0.1:8000", AgentsDir: "/a/agents", KeyFile: "/a/.brainsurgeon/api.key"}
}

func TestInstallSystemd(t *testing.T) {
	f := &fakeOS{home: t.TempDir(), tools: map[string]bool{"systemctl": true}, running: true}
	ctx := context.Background()
	res, err := Install(ctx, f.env("linux"), spec(t), false)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(f.home, "xdg", "systemd", "user", UnitName)
	if res.File != want || !res.Written || len(res.Todo) != 0 {
		t.Errorf("result %+v", res)
	}
	if b, _ := os.ReadFile(want); string(b) != string(SystemdUnit(spec(t))) {
		t.Errorf("unit file:\n%s", b)
	}
	if got := strings.Join(f.calls, "; "); got != "systemctl --user daemon-reload; systemctl --user enable --now brainsurgeon.service" {
		t.Errorf("calls %s", got)
	}
	// Installing again restarts the service on the new unit.
	f.calls = nil
	if _, err := Install(ctx, f.env("linux"), spec(t), false); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.calls, "; "); !strings.HasSuffix(got, "; systemctl --user restart brainsurgeon.service") {
		t.Errorf("reinstall calls %s", got)
	}
	st, err := Status(ctx, f.env("linux"))
	if err != nil || !st.Installed || st.Active != "active" {
		t.Errorf("status %+v %v", st, err)
	}
	f.calls = nil
	un, err := Uninstall(ctx, f.env("linux"), false)
	if err != nil || !un.Removed {
		t.Errorf("uninstall %+v %v", un, err)
	}
	if got := strings.Join(f.calls, "; "); got != "systemctl --user disable --now brainsurgeon.service; systemctl --user daemon-reload" {
		t.Errorf("calls %s", got)
	}
	if _, err := os.Stat(want); !os.IsNotExist(err) {
		t.Errorf("unit after uninstall: %v", err)
	}
	if un, err := Uninstall(ctx, f.env("linux"), false); err != nil || un.Removed || un.Installed {
		t.Errorf("second uninstall %+v %v", un, err)
	}
}

// TestInstallSystemdNoUserBus: the unit is written and the commands to
// run are returned when systemctl --user cannot reach a user manager.
func TestInstallSystemdNoUserBus(t *testing.T) {
	f := &fakeOS{home: t.TempDir(), tools: map[string]bool{"systemctl": true}, running: true,
		fail: map[string]bool{"systemctl --user daemon-reload": true}}
	res, err := Install(context.Background(), f.env("linux"), spec(t), false)
	if err != nil || !res.Written || len(res.Todo) != 2 || len(res.Ran) != 0 {
		t.Errorf("result %+v %v", res, err)
	}
}

// TestInstallWithoutSystemd says so, and writes nothing.
func TestInstallWithoutSystemd(t *testing.T) {
	for _, f := range []*fakeOS{
		{tools: map[string]bool{}, running: true},
		{tools: map[string]bool{"systemctl": true}, running: false},
	} {
		f.home = t.TempDir()
		_, err := Install(context.Background(), f.env("linux"), spec(t), false)
		if !errors.Is(err, ErrNoServiceManager) {
			t.Errorf("err %v", err)
		}
		if entries, _ := os.ReadDir(f.home); len(entries) != 0 || len(f.calls) != 0 {
			t.Errorf("wrote %v, ran %q", entries, f.calls)
		}
		// A dry run previews the unit all the same and says why a real install would write nothing.
		res, err := Install(context.Background(), f.env("linux"), spec(t), true)
		if err != nil || res.Content == "" || !res.DryRun || !strings.Contains(res.Problem, "systemd") || len(res.Todo) != 2 {
			t.Errorf("dry run %+v %v", res, err)
		}
		if entries, _ := os.ReadDir(f.home); len(entries) != 0 || len(f.calls) != 0 {
			t.Errorf("dry run wrote %v, ran %q", entries, f.calls)
		}
		if st, err := Status(context.Background(), f.env("linux")); err != nil || st.Problem == "" || st.Installed {
			t.Errorf("status %+v %v", st, err)
		}
	}
	if _, err := Install(context.Background(), (&fakeOS{home: t.TempDir()}).env("windows"), spec(t), false); !errors.Is(err, ErrNoServiceManager) {
		t.Errorf("windows: %v", err)
	}
	// With nothing to preview, a dry run fails as the install would.
	if _, err := Install(context.Background(), (&fakeOS{home: t.TempDir()}).env("windows"), spec(t), true); !errors.Is(err, ErrNoServiceManager) {
		t.Errorf("windows dry run: %v", err)
	}
}

func TestInstallLaunchd(t *testing.T) {
	f := &fakeOS{home: t.TempDir(), tools: map[string]bool{"launchctl": true}}
	ctx := context.Background()
	res, err := Install(ctx, f.env("darwin"), spec(t), false)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(f.home, "Library", "LaunchAgents", "dev.brainsurgeon.serve.plist")
	if res.File != want || !res.Written {
		t.Errorf("result %+v", res)
	}
	if b, _ := os.ReadFile(want); !strings.Contains(string(b), "<string>/a/agents</string>") || !strings.Contains(string(b), "Library/Logs/brainsurgeon/serve.log") {
		t.Errorf("plist:\n%s", b)
	}
	if got := strings.Join(f.calls, "; "); got != "launchctl bootstrap gui/501 "+want {
		t.Errorf("calls %s", got)
	}
	f.calls = nil
	if un, err := Uninstall(ctx, f.env("darwin"), false); err != nil || !un.Removed {
		t.Errorf("uninstall %+v %v", un, err)
	}
	if got := strings.Join(f.calls, "; "); got != "launchctl bootout gui/501/dev.brainsurgeon.serve" {
		t.Errorf("calls %s", got)
	}
}

func TestSpecCheck(t *testing.T) {
	for _, s := range []Spec{
		{Binary: "brainsurgeon", Addr: "127.0.0.1:8000", AgentsDir: "/a"},
		{Binary: "/b", Addr: "127.0.0.1:8000", AgentsDir: "a"},
		{Binary: "/b", Addr: "", AgentsDir: "/a"},
		{Binary: "/b%n", Addr: "127.0.0.1:8000", AgentsDir: "/a"},
		{Binary: "/b", Addr: "127.0.0.1:8000", AgentsDir: "/a\n[Service]"},
	} {
		if s.Check() == nil {
			t.Errorf("%+v passed", s)
		}
	}
	if err := spec(t).Check(); err != nil {
		t.Error(err)
	}
}

// TestStatusManagerUnreachable: an is-active failure that names no state
// (no user bus) is a problem, not the service's state; a state printed
// with a non-zero exit is the state.
func TestStatusManagerUnreachable(t *testing.T) {
	f := &fakeOS{home: t.TempDir(), tools: map[string]bool{"systemctl": true}, running: true,
		fail: map[string]bool{"systemctl --user is-active brainsurgeon.service": true}}
	st, err := Status(context.Background(), f.env("linux"))
	if err != nil || st.Active != "" || !strings.Contains(st.Problem, "Failed to connect to bus") {
		t.Errorf("status %+v %v", st, err)
	}
	env := f.env("linux")
	env.Run = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return []byte("inactive\n"), errors.New("exit status 3")
	}
	if st, err := Status(context.Background(), env); err != nil || st.Active != "inactive" || st.Problem != "" {
		t.Errorf("inactive: %+v %v", st, err)
	}
}

// TestUninstallReportsFailures: a unit that cannot be removed, or cannot
// be looked at, is an error, never "removed" or "nothing to uninstall".
func TestUninstallReportsFailures(t *testing.T) {
	f := &fakeOS{home: t.TempDir(), tools: map[string]bool{"systemctl": true}, running: true}
	ctx := context.Background()
	m, _ := Detect(f.env("linux"))
	// A non-empty directory where the unit should be: os.Remove fails.
	if err := os.MkdirAll(filepath.Join(m.File, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := Uninstall(ctx, f.env("linux"), false)
	if err == nil || res.Removed {
		t.Errorf("remove failure: %+v %v", res, err)
	}
	env := f.env("linux")
	env.Stat = func(p string) (fs.FileInfo, error) {
		if p == m.File {
			return nil, fs.ErrPermission
		}
		return f.env("linux").Stat(p)
	}
	res, err = Uninstall(ctx, env, false)
	if !errors.Is(err, fs.ErrPermission) || res.Installed || res.Removed {
		t.Errorf("stat failure: %+v %v", res, err)
	}
}
