// Package service installs `brainsurgeon serve` as a per-user service: a
// systemd user unit on Linux (~/.config/systemd/user/brainsurgeon.service,
// $XDG_CONFIG_HOME honoured) or a launchd agent on macOS
// (~/Library/LaunchAgents/dev.brainsurgeon.serve.plist). It never needs
// root and never touches system-wide units. The unit and the plist are
// pure functions of a Spec; everything else goes through Env so that tests
// can stand in for the OS.
package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// UnitName is the systemd user unit's file name.
const UnitName = "brainsurgeon.service"

// LaunchdLabel is the launchd agent's label (and plist file name without
// ".plist").
const LaunchdLabel = "dev.brainsurgeon.serve"

// Spec is what the service runs.
type Spec struct {
	// Binary is the absolute path of the brainsurgeon binary.
	Binary string
	// Addr is serve's --addr.
	Addr string
	// AgentsDir is serve's --agents-dir (absolute).
	AgentsDir string
	// KeyFile is BRAINSURGEON_API_KEY_FILE ("" sets none).
	KeyFile string
	// LogDir is where launchd writes the agent's stdout and stderr
	// (macOS only).
	LogDir string
}

// Check checks that the spec's paths are absolute and have no characters
// a unit or a plist cannot carry.
func (s Spec) Check() error {
	for _, f := range []struct{ name, v string }{{"binary", s.Binary}, {"agents dir", s.AgentsDir}, {"key file", s.KeyFile}, {"log dir", s.LogDir}} {
		if f.v == "" && (f.name == "key file" || f.name == "log dir") {
			continue
		}
		if !filepath.IsAbs(f.v) {
			return fmt.Errorf("service %s: expected an absolute path, found %q", f.name, f.v)
		}
		if strings.ContainsAny(f.v, "\n\r\x00\"\\%$") {
			return fmt.Errorf("service %s %q: expected a path without newlines, quotes, backslashes, %% or $", f.name, f.v)
		}
	}
	if s.Addr == "" || strings.ContainsAny(s.Addr, " \t\n\r\x00\"\\%$") {
		return fmt.Errorf("service address %q: expected host:port", s.Addr)
	}
	return nil
}

// quote quotes a word for a systemd command line or Environment= when it
// holds a space.
func quote(s string) string {
	if strings.ContainsAny(s, " \t'") {
		return `"` + s + `"`
	}
	return s
}

// SystemdUnit returns the systemd user unit running `brainsurgeon serve`.
func SystemdUnit(s Spec) []byte {
	var b bytes.Buffer
	b.WriteString("# Written by brainsurgeon service install; brainsurgeon service uninstall removes it.\n")
	b.WriteString("[Unit]\nDescription=BrainSurgeon daemon (brainsurgeon serve)\n")
	b.WriteString("After=network.target\n\n")
	b.WriteString("[Service]\nType=simple\n")
	fmt.Fprintf(&b, "ExecStart=%s serve --addr %s --agents-dir %s\n", quote(s.Binary), s.Addr, quote(s.AgentsDir))
	if s.KeyFile != "" {
		fmt.Fprintf(&b, "Environment=%s\n", quote("BRAINSURGEON_API_KEY_FILE="+s.KeyFile))
	}
	b.WriteString("Restart=on-failure\nRestartSec=5\n\n")
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.Bytes()
}

// xmlEscape escapes text for a plist string.
func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// LaunchdPlist returns the launchd agent running `brainsurgeon serve`.
func LaunchdPlist(s Spec) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by brainsurgeon service install; brainsurgeon service uninstall removes it. -->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>` + LaunchdLabel + `</string>
  <key>ProgramArguments</key>
  <array>
`)
	for _, a := range []string{s.Binary, "serve", "--addr", s.Addr, "--agents-dir", s.AgentsDir} {
		fmt.Fprintf(&b, "    <string>%s</string>\n", xmlEscape(a))
	}
	b.WriteString("  </array>\n")
	if s.KeyFile != "" {
		fmt.Fprintf(&b, "  <key>EnvironmentVariables</key>\n  <dict>\n    <key>BRAINSURGEON_API_KEY_FILE</key>\n    <string>%s</string>\n  </dict>\n", xmlEscape(s.KeyFile))
	}
	b.WriteString("  <key>RunAtLoad</key>\n  <true/>\n")
	b.WriteString("  <key>KeepAlive</key>\n  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n")
	if s.LogDir != "" {
		fmt.Fprintf(&b, "  <key>StandardOutPath</key>\n  <string>%s</string>\n", xmlEscape(filepath.Join(s.LogDir, "serve.log")))
		fmt.Fprintf(&b, "  <key>StandardErrorPath</key>\n  <string>%s</string>\n", xmlEscape(filepath.Join(s.LogDir, "serve.log")))
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}

// Runner runs one command and returns its combined output.
type Runner func(ctx context.Context, name string, args ...string) ([]byte, error)

// ExecRunner runs commands with os/exec.
func ExecRunner(ctx context.Context, name string, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, name, args...).CombinedOutput()
}

// Env is what the package reads from the OS; the zero value uses the
// process's.
type Env struct {
	// GOOS is the operating system ("linux", "darwin"; default
	// runtime.GOOS, set by the caller).
	GOOS string
	// Getenv, HomeDir, LookPath and Stat default to the os and os/exec
	// functions.
	Getenv   func(string) string
	HomeDir  func() (string, error)
	LookPath func(string) (string, error)
	Stat     func(string) (fs.FileInfo, error)
	// Run runs systemctl and launchctl (default ExecRunner).
	Run Runner
	// UID is the user id for launchctl's gui/<uid> domain (default
	// os.Getuid()).
	UID int
}

func (e Env) withDefaults() Env {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.HomeDir == nil {
		e.HomeDir = os.UserHomeDir
	}
	if e.LookPath == nil {
		e.LookPath = exec.LookPath
	}
	if e.Stat == nil {
		e.Stat = os.Stat
	}
	if e.Run == nil {
		e.Run = ExecRunner
	}
	if e.UID == 0 {
		e.UID = os.Getuid()
	}
	return e
}

// ErrNoServiceManager says the machine has no per-user service manager
// this package knows (no systemd running, or an OS other than Linux and
// macOS).
var ErrNoServiceManager = errors.New("no service manager")

// Manager is the service manager of the machine.
type Manager struct {
	// Kind is "systemd" or "launchd".
	Kind string `json:"manager"`
	// File is the unit or plist path.
	File string `json:"file"`
	// Tool is the absolute path of systemctl or launchctl.
	Tool string `json:"-"`
}

// Detect finds the user service manager: systemd when systemctl is on
// PATH and /run/systemd/system exists (systemd is running), launchd on
// macOS. Otherwise the error wraps ErrNoServiceManager and says what is
// missing.
func Detect(env Env) (Manager, error) {
	env = env.withDefaults()
	home, err := env.HomeDir()
	if err != nil || home == "" {
		return Manager{}, fmt.Errorf("no home directory for the user service (%v)", err)
	}
	switch env.GOOS {
	case "linux":
		cfg := env.Getenv("XDG_CONFIG_HOME")
		if cfg == "" || !filepath.IsAbs(cfg) {
			cfg = filepath.Join(home, ".config")
		}
		m := Manager{Kind: "systemd", File: filepath.Join(cfg, "systemd", "user", UnitName)}
		tool, err := env.LookPath("systemctl")
		if err != nil {
			return m, fmt.Errorf("%w: systemctl is not on PATH, so this machine does not run systemd; run brainsurgeon serve another way (a terminal, tmux, your init system)", ErrNoServiceManager)
		}
		if _, err := env.Stat("/run/systemd/system"); err != nil {
			return m, fmt.Errorf("%w: /run/systemd/system does not exist, so systemd is not running here (a container or another init); run brainsurgeon serve another way (a terminal, tmux, your init system)", ErrNoServiceManager)
		}
		m.Tool = tool
		return m, nil
	case "darwin":
		m := Manager{Kind: "launchd", File: filepath.Join(home, "Library", "LaunchAgents", LaunchdLabel+".plist")}
		tool, err := env.LookPath("launchctl")
		if err != nil {
			return m, fmt.Errorf("%w: launchctl is not on PATH", ErrNoServiceManager)
		}
		m.Tool = tool
		return m, nil
	}
	return Manager{}, fmt.Errorf("%w: brainsurgeon service supports Linux (systemd) and macOS (launchd), not %s", ErrNoServiceManager, env.GOOS)
}

// Result says what install, uninstall or status did or found.
type Result struct {
	Manager
	// Content is the unit or plist written (or that would be, with
	// DryRun).
	Content string `json:"content,omitempty"`
	// Written and Removed say the file was written or removed.
	Written bool `json:"written,omitempty"`
	Removed bool `json:"removed,omitempty"`
	// Installed says the file exists (status).
	Installed bool `json:"installed"`
	// Active is the manager's word on the service (status; "" when not
	// asked).
	Active string `json:"active,omitempty"`
	// Ran are the commands run; Todo those the user must run because
	// the manager could not be reached.
	Ran  []string `json:"ran,omitempty"`
	Todo []string `json:"todo,omitempty"`
	// DryRun says nothing was written or run.
	DryRun bool `json:"dry_run,omitempty"`
	// Problem says why the manager could not be asked (status), or, for
	// a dry run on a machine without it, why a real install would write
	// nothing (the preview is there all the same).
	Problem string `json:"problem,omitempty"`
}

// commands returns the commands that load (or unload) the service.
func (m Manager) commands(uid int, load bool) [][]string {
	if m.Kind == "systemd" {
		if load {
			return [][]string{{"systemctl", "--user", "daemon-reload"}, {"systemctl", "--user", "enable", "--now", UnitName}}
		}
		return [][]string{{"systemctl", "--user", "disable", "--now", UnitName}, {"systemctl", "--user", "daemon-reload"}}
	}
	domain := "gui/" + strconv.Itoa(uid)
	if load {
		return [][]string{{"launchctl", "bootstrap", domain, m.File}}
	}
	return [][]string{{"launchctl", "bootout", domain + "/" + LaunchdLabel}}
}

func join(c []string) string { return strings.Join(c, " ") }

// Install writes the unit (or plist) for spec and loads it. When the
// manager cannot be reached (systemctl --user without a user session),
// the file stays written and Todo lists the commands to run. With dryRun
// it only returns the content and the commands. On a machine without a
// service manager it writes nothing and the error wraps
// ErrNoServiceManager; a dry run there still returns the content for the
// OS (Linux: the systemd unit) with no error, Problem saying why a real
// install would write nothing.
func Install(ctx context.Context, env Env, spec Spec, dryRun bool) (*Result, error) {
	env = env.withDefaults()
	if err := spec.Check(); err != nil {
		return nil, err
	}
	m, err := Detect(env)
	res := &Result{Manager: m, DryRun: dryRun}
	if m.Kind == "launchd" && spec.LogDir == "" {
		home, _ := env.HomeDir()
		spec.LogDir = filepath.Join(home, "Library", "Logs", "brainsurgeon")
	}
	switch m.Kind {
	case "systemd":
		res.Content = string(SystemdUnit(spec))
	case "launchd":
		res.Content = string(LaunchdPlist(spec))
	}
	cmds := m.commands(env.UID, true)
	if dryRun {
		for _, c := range cmds {
			res.Todo = append(res.Todo, join(c))
		}
		if errors.Is(err, ErrNoServiceManager) && res.Content != "" {
			// The preview is still what was asked for: the unit for
			// this OS, with why a real install would write nothing.
			res.Problem, err = err.Error(), nil
		}
		return res, err
	}
	if err != nil {
		return res, err
	}
	if spec.LogDir != "" && m.Kind == "launchd" {
		if err := os.MkdirAll(spec.LogDir, 0o700); err != nil {
			return res, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(m.File), 0o755); err != nil {
		return res, err
	}
	_, serr := env.Stat(m.File)
	existed := serr == nil
	if m.Kind == "launchd" && existed {
		// bootstrap refuses a label that is loaded: unload an older copy.
		env.Run(ctx, m.Tool, m.commands(env.UID, false)[0][1:]...)
	}
	if m.Kind == "systemd" && existed {
		// enable --now leaves a running service as it is: restart it
		// on the new unit.
		cmds = append(cmds, []string{"systemctl", "--user", "restart", UnitName})
	}
	if err := os.WriteFile(m.File+".tmp", []byte(res.Content), 0o644); err != nil {
		return res, err
	}
	if err := os.Rename(m.File+".tmp", m.File); err != nil {
		os.Remove(m.File + ".tmp")
		return res, err
	}
	res.Written = true
	return res, runAll(ctx, env, m, cmds, res)
}

// runAll runs cmds; once one fails because the manager cannot be reached,
// it and the rest go to Todo.
func runAll(ctx context.Context, env Env, m Manager, cmds [][]string, res *Result) error {
	for i, c := range cmds {
		out, err := env.Run(ctx, m.Tool, c[1:]...)
		if err != nil {
			for _, r := range cmds[i:] {
				res.Todo = append(res.Todo, join(r))
			}
			if m.Kind == "systemd" && i == 0 {
				// daemon-reload fails without a user manager (no login
				// session, no XDG_RUNTIME_DIR): the user runs them later.
				return nil
			}
			return fmt.Errorf("%s: %v: %s", join(c), err, strings.TrimSpace(string(out)))
		}
		res.Ran = append(res.Ran, join(c))
	}
	return nil
}

// Uninstall stops and disables the service and removes its file. A
// service that is not installed is no error. A failure to stop is
// reported in Todo, and the file is removed anyway.
func Uninstall(ctx context.Context, env Env, dryRun bool) (*Result, error) {
	env = env.withDefaults()
	m, err := Detect(env)
	res := &Result{Manager: m, DryRun: dryRun}
	if m.File == "" {
		return res, err
	}
	if _, serr := env.Stat(m.File); serr != nil {
		if errors.Is(serr, fs.ErrNotExist) {
			return res, nil
		}
		return res, serr
	}
	res.Installed = true
	cmds := m.commands(env.UID, false)
	if dryRun {
		for _, c := range cmds {
			res.Todo = append(res.Todo, join(c))
		}
		return res, nil
	}
	if err == nil {
		for _, c := range cmds {
			if _, rerr := env.Run(ctx, m.Tool, c[1:]...); rerr != nil {
				res.Todo = append(res.Todo, join(c))
				continue
			}
			res.Ran = append(res.Ran, join(c))
		}
	}
	if rerr := os.Remove(m.File); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return res, rerr
	}
	res.Removed = true
	return res, nil
}

// Status says whether the file exists and what the manager says of the
// service.
func Status(ctx context.Context, env Env) (*Result, error) {
	env = env.withDefaults()
	m, err := Detect(env)
	res := &Result{Manager: m}
	if m.File != "" {
		if b, serr := os.ReadFile(m.File); serr == nil {
			res.Installed, res.Content = true, string(b)
		}
	}
	if err != nil {
		res.Problem = err.Error()
		return res, nil
	}
	var out []byte
	if m.Kind == "systemd" {
		var rerr error
		out, rerr = env.Run(ctx, m.Tool, "--user", "is-active", UnitName)
		// is-active exits non-zero for every state but active, printing
		// the state; anything else (such as "Failed to connect to bus")
		// says the manager could not be asked.
		if state := firstLine(out); rerr != nil && !unitStates[state] {
			res.Problem = fmt.Sprintf("systemctl --user is-active %s: %v: %s", UnitName, rerr, strings.TrimSpace(string(out)))
			return res, nil
		}
	} else {
		if _, rerr := env.Run(ctx, m.Tool, "print", "gui/"+strconv.Itoa(env.UID)+"/"+LaunchdLabel); rerr == nil {
			out = []byte("loaded")
		} else {
			out = []byte("not loaded")
		}
	}
	res.Active = firstLine(out)
	if res.Active == "" {
		res.Active = "unknown"
	}
	return res, nil
}

// unitStates are the states `systemctl is-active` prints.
var unitStates = map[string]bool{"active": true, "reloading": true, "inactive": true, "failed": true,
	"activating": true, "deactivating": true, "maintenance": true, "refreshing": true, "unknown": true}

// firstLine returns the first line of out, trimmed.
func firstLine(out []byte) string {
	s := strings.TrimSpace(string(out))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}
