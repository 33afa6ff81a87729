package piinstall

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
	openclawplugin "github.com/brainsurgeon/brainsurgeon/openclaw-plugin"
)

// InstallOptions are install's arguments.
type InstallOptions struct {
	// Project installs into the project's .pi ("" for pi's agent dir).
	Project string
	// AgentsDir is the agents dir of the daemon the extension calls (""
	// for OpenClaw's default when it exists, else pi's sessions dir).
	AgentsDir string
	// DaemonURL is the daemon the extension calls ("" for
	// openclawinstall.DefaultDaemonURL).
	DaemonURL string
	// Link adds the extension to pi's settings.json; without it pi's
	// files are not touched.
	Link bool
}

// InstallResult says what install did.
type InstallResult struct {
	Paths
	Version      string `json:"version"`
	DaemonURL    string `json:"daemon_url"`
	KeyCreated   bool   `json:"key_created"`
	KeyModeFixed bool   `json:"key_mode_fixed,omitempty"`
	// Linked says settings.json names the extension (now or from an
	// earlier install); SettingsChanged that install changed it now.
	Linked          bool `json:"linked"`
	SettingsChanged bool `json:"settings_changed"`
	// Snippet is the settings.json member to add by hand (without Link),
	// and TryCommand runs pi with the extension once, without settings.
	Snippet    string `json:"settings_snippet,omitempty"`
	TryCommand string `json:"try_command"`
	// Next is what to run next (the command fills it; nil here).
	Next *openclawinstall.Next `json:"next,omitempty"`
}

// Plan returns the paths and daemon URL install would use, checking the
// options; it writes nothing.
func Plan(env Env, o InstallOptions) (Paths, string, error) {
	url := o.DaemonURL
	if url == "" {
		url = openclawinstall.DefaultDaemonURL
	}
	if err := openclawinstall.CheckDaemonURL(url); err != nil {
		return Paths{}, "", err
	}
	p, err := ResolvePaths(env, o.Project, o.AgentsDir)
	return p, url, err
}

// files returns the plugin's files and version from env, or the ones this
// binary carries.
func files(env Env) (fs.FS, string) {
	if env.Files != nil {
		return env.Files, env.Version
	}
	return openclawplugin.Files(), openclawplugin.Version()
}

// Install writes the extension, its config and the key file and, with
// o.Link, adds the extension to settings.json (see the package doc). The
// record is written whenever something was, so that Uninstall can take it
// back.
func Install(ctx context.Context, env Env, o InstallOptions) (*InstallResult, error) {
	env = withDefaults(env)
	p, url, err := Plan(env, o)
	if err != nil {
		return nil, err
	}
	prev, _, err := ReadRecord(p.Record)
	if err != nil {
		return nil, err
	}
	fsys, version := files(env)
	res := &InstallResult{Paths: p, Version: version, DaemonURL: url, TryCommand: "pi -e " + shellQuote(p.Dir)}
	written, err := openclawinstall.WritePlugin(fsys, p.Dir, append(slices.Clone(prev.Files), ConfigName))
	if err != nil {
		return nil, fmt.Errorf("pi install: %w", err)
	}
	cfg, err := json.MarshalIndent(piConfig{DaemonURL: url, APIKeyFile: p.KeyFile}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(p.Dir, ConfigName), append(cfg, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("pi install: the extension's config: %w", err)
	}
	random := env.Rand
	if random == nil {
		random = rand.Reader
	}
	created, fixed, err := openclawinstall.EnsureKey(p.KeyFile, random)
	if err != nil {
		return nil, fmt.Errorf("pi install: the key file: %w", err)
	}
	res.KeyCreated, res.KeyModeFixed = created, fixed
	rec := prev
	rec.Version, rec.Dir, rec.Files, rec.DaemonURL, rec.KeyFile = version, p.Dir, written, url, p.KeyFile
	rec.KeyCreated = rec.KeyCreated || created
	settings, mode, missing, err := readFile(p.Settings)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("pi install: settings %s: %w", p.Settings, err), writeRecord(p.Record, rec))
	}
	list, _, serr := extensionsOf(settings)
	res.Linked = serr == nil && slices.Contains(list, p.Dir)
	if !o.Link || res.Linked {
		if !res.Linked {
			b, _ := json.Marshal(p.Dir)
			res.Snippet = `"extensions": [` + string(b) + `]`
		}
		return res, writeRecord(p.Record, rec)
	}
	if serr != nil {
		return res, errors.Join(fmt.Errorf("pi install: settings %s: %w; nothing changed in it", p.Settings, serr), writeRecord(p.Record, rec))
	}
	after, err := withExtension(settings, p.Dir)
	if err != nil {
		return res, errors.Join(fmt.Errorf("pi install: settings %s: %w; nothing changed in it", p.Settings, err), writeRecord(p.Record, rec))
	}
	if !rec.Linked {
		rec.Settings, rec.SettingsExisted, rec.SettingsBefore = p.Settings, !missing, settings
	}
	rec.Linked, rec.SettingsAfter = true, sha(after)
	// The record first: a crash between the two leaves a record that
	// uninstall can act on (it finds the settings unchanged or changed).
	if err := writeRecord(p.Record, rec); err != nil {
		return res, err
	}
	if err := os.MkdirAll(filepath.Dir(p.Settings), 0o755); err != nil {
		return res, err
	}
	if err := atomicfile.WriteFile(p.Settings, after, mode); err != nil {
		return res, fmt.Errorf("pi install: settings %s: %w", p.Settings, err)
	}
	res.Linked, res.SettingsChanged = true, true
	return res, nil
}

// UninstallResult says what uninstall did.
type UninstallResult struct {
	Paths
	// Settings is what happened to settings.json: "restored" (its bytes
	// from before install), "removed" (there was none before install),
	// "entry_removed" (it changed since install: only the extension's
	// entry was taken out), "not_named" or "" (install did not link).
	SettingsAction string   `json:"settings_action"`
	Removed        []string `json:"removed"`
	Kept           []string `json:"kept,omitempty"`
	// Installed is false when there was nothing to uninstall.
	Installed bool `json:"installed"`
	// DaemonURL is the daemon the extension called.
	DaemonURL string `json:"daemon_url"`
}

// Uninstall takes back what Install did for project ("" global): the
// settings (byte for byte when they did not change since), the
// extension's files, the key file when install created it and no OpenClaw
// plugin install uses it, and the record. The transcripts are the
// command's business (it writes offloaded values back).
func Uninstall(ctx context.Context, env Env, project, agentsDir string) (*UninstallResult, error) {
	env = withDefaults(env)
	p, err := ResolvePaths(env, project, agentsDir)
	if err != nil {
		return nil, err
	}
	res := &UninstallResult{Paths: p, Removed: []string{}, DaemonURL: openclawinstall.DefaultDaemonURL}
	rec, ok, err := ReadRecord(p.Record)
	if err != nil {
		return res, err
	}
	if c, err := readPiConfig(p.Dir); err == nil && c.DaemonURL != "" {
		res.DaemonURL = c.DaemonURL
	}
	settings, mode, missing, err := readFile(p.Settings)
	if err != nil {
		return res, fmt.Errorf("pi uninstall: settings %s: %w", p.Settings, err)
	}
	res.Installed = ok || isDir(p.Dir)
	switch {
	case ok && rec.Linked && !missing && sha(settings) == rec.SettingsAfter && rec.SettingsExisted:
		if err := atomicfile.WriteFile(p.Settings, rec.SettingsBefore, mode); err != nil {
			return res, err
		}
		res.SettingsAction = "restored"
	case ok && rec.Linked && !missing && sha(settings) == rec.SettingsAfter:
		if err := os.Remove(p.Settings); err != nil {
			return res, err
		}
		res.SettingsAction = "removed"
	case !missing:
		after, named, err := withoutExtension(settings, p.Dir)
		if err != nil {
			return res, fmt.Errorf("pi uninstall: settings %s: %w; nothing changed", p.Settings, err)
		}
		if named {
			if err := atomicfile.WriteFile(p.Settings, after, mode); err != nil {
				return res, err
			}
			res.SettingsAction, res.Installed = "entry_removed", true
		} else if rec.Linked {
			res.SettingsAction = "not_named"
		}
	}
	fsys, _ := files(env)
	if err := removeOurs(fsys, p.Dir, rec.Files, res); err != nil {
		return res, err
	}
	if rec.KeyCreated {
		// The OpenClaw plugin's install may use the same key file.
		if _, err := os.Stat(filepath.Join(filepath.Dir(rec.KeyFile), "openclaw-install.json")); err == nil {
			res.Kept = append(res.Kept, p.KeyFile+" (the OpenClaw plugin's install uses it too)")
		} else if err := os.Remove(rec.KeyFile); err == nil {
			res.Removed = append(res.Removed, rec.KeyFile)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
	}
	if ok {
		if err := os.Remove(p.Record); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
		res.Removed = append(res.Removed, p.Record)
	}
	return res, nil
}

// removeOurs removes the extension's files from dir: those install wrote
// (recorded), those this binary carries, and its config; then the
// directories they leave empty. A file of anyone else is kept (and dir
// with it), and named in res.Kept.
func removeOurs(fsys fs.FS, dir string, recorded []string, res *UninstallResult) error {
	if !isDir(dir) {
		return nil
	}
	ours := map[string]bool{ConfigName: true}
	for _, f := range recorded {
		ours[filepath.FromSlash(f)] = true
	}
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			ours[filepath.FromSlash(p)] = true
		}
		return nil
	})
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case ours[rel]:
			if err := os.Remove(p); err != nil {
				return err
			}
			res.Removed = append(res.Removed, p)
		default:
			res.Kept = append(res.Kept, p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pi uninstall: removing the extension from %s: %w", dir, err)
	}
	for _, d := range slices.Backward(dirs) {
		if os.Remove(d) == nil && d == dir {
			res.Removed = append(res.Removed, d)
		}
	}
	return nil
}

// The names of Status's checks, in order.
const (
	CheckInstalled   = "extension_installed"
	CheckSettings    = "settings_load_extension"
	CheckDaemon      = "daemon_reachable"
	CheckServesPi    = "daemon_serves_pi"
	CheckKeyAccepted = "key_accepted"
)

// StatusResult is what Status found.
type StatusResult struct {
	Paths
	Installed        bool                    `json:"installed"`
	InstalledVersion string                  `json:"installed_version,omitempty"`
	EmbeddedVersion  string                  `json:"embedded_version"`
	SettingsName     bool                    `json:"settings_name_extension"`
	DaemonURL        string                  `json:"daemon_url"`
	Checks           []openclawinstall.Check `json:"checks"`
	Healthy          bool                    `json:"healthy"`
}

// Status reports the install for project ("" global) and checks the
// running system end to end; a check that needs an earlier one is left
// out when that one fails. It only reads.
func Status(ctx context.Context, env Env, project, agentsDir string) (*StatusResult, error) {
	env = withDefaults(env)
	p, err := ResolvePaths(env, project, agentsDir)
	if err != nil {
		return nil, err
	}
	_, version := files(env)
	st := &StatusResult{Paths: p, EmbeddedVersion: version, DaemonURL: openclawinstall.DefaultDaemonURL, Checks: []openclawinstall.Check{}}
	add := func(c openclawinstall.Check) { st.Checks = append(st.Checks, c) }
	defer func() {
		st.Healthy = len(st.Checks) > 0
		for _, c := range st.Checks {
			st.Healthy = st.Healthy && c.OK
		}
	}()
	install := "brainsurgeon pi install --link"
	if project != "" {
		install += " --project " + shellQuote(p.Project)
	}
	cfg, cerr := readPiConfig(p.Dir)
	if pkg, err := os.ReadFile(filepath.Join(p.Dir, "package.json")); err == nil && cerr == nil {
		var v struct {
			Version string `json:"version"`
		}
		_ = json.Unmarshal(pkg, &v)
		st.Installed, st.InstalledVersion = true, v.Version
	}
	if !st.Installed {
		add(openclawinstall.Check{Name: CheckInstalled, Detail: fmt.Sprintf("no copy of the extension (package.json and %s) in %s", ConfigName, p.Dir), Fix: install})
		return st, nil
	}
	d := fmt.Sprintf("version %s in %s", st.InstalledVersion, p.Dir)
	if st.InstalledVersion != version {
		d += fmt.Sprintf("; this binary carries %s (%s updates it)", version, install)
	}
	add(openclawinstall.Check{Name: CheckInstalled, OK: true, Detail: d})
	settings, _, missing, err := readFile(p.Settings)
	list, _, serr := extensionsOf(settings)
	st.SettingsName = err == nil && serr == nil && slices.Contains(list, p.Dir)
	switch {
	case err != nil:
		add(openclawinstall.Check{Name: CheckSettings, Detail: err.Error(), Fix: install})
	case serr != nil:
		add(openclawinstall.Check{Name: CheckSettings, Detail: fmt.Sprintf("%s: %v", p.Settings, serr), Fix: "fix the file's syntax, then " + install})
	case missing || !st.SettingsName:
		add(openclawinstall.Check{Name: CheckSettings, Detail: fmt.Sprintf("%s does not name %s in \"extensions\"", p.Settings, p.Dir), Fix: install})
	default:
		add(openclawinstall.Check{Name: CheckSettings, OK: true, Detail: fmt.Sprintf("%s loads the extension from %s (pi loads it at its next start; /reload in a running pi)", p.Settings, p.Dir)})
	}
	if cfg.DaemonURL != "" {
		st.DaemonURL = cfg.DaemonURL
	}
	agentsArg := ""
	if p.AgentsDir == p.PiSessions {
		agentsArg = p.AgentsDir
	}
	serve, service := openclawinstall.StartCommands(st.DaemonURL, agentsArg)
	state, h, detail := openclawinstall.ProbeDaemon(ctx, env, st.DaemonURL)
	switch state {
	case openclawinstall.DaemonDown:
		add(openclawinstall.Check{Name: CheckDaemon, Detail: "no daemon answers at the extension's daemonUrl: " + detail + "; pi runs as without the extension",
			Fix: fmt.Sprintf("start the daemon: %s (or as a user service: %s)", serve, service)})
		return st, nil
	case openclawinstall.DaemonOther:
		add(openclawinstall.Check{Name: CheckDaemon, Detail: detail, Fix: fmt.Sprintf("stop what listens at %s and start the daemon there (%s)", st.DaemonURL, serve)})
		return st, nil
	}
	add(openclawinstall.Check{Name: CheckDaemon, OK: true, Detail: fmt.Sprintf("BrainSurgeon %s answers at %s", h.Version, st.DaemonURL)})
	switch {
	case state == openclawinstall.DaemonWaiting:
		add(openclawinstall.Check{Name: CheckServesPi, Detail: "the daemon is waiting: " + h.WaitingFor, Fix: "stop it and start it for pi's sessions: " + serve})
		return st, nil
	case !sameDir(h.PiSessionsDir, p.PiSessions) && !sameDir(h.AgentsDir, p.PiSessions):
		add(openclawinstall.Check{Name: CheckServesPi, Detail: fmt.Sprintf("the daemon serves %s and pi sessions dir %q, not pi's sessions in %s", h.AgentsDir, h.PiSessionsDir, p.PiSessions),
			Fix: "restart the daemon so that it finds pi's sessions dir (it serves ~/.pi/agent/sessions when that exists, or set BRAINSURGEON_PI_SESSIONS_DIR): " + serve})
		return st, nil
	}
	add(openclawinstall.Check{Name: CheckServesPi, OK: true, Detail: "the daemon serves pi's sessions in " + p.PiSessions})
	key, kerr := "", error(nil)
	if cfg.APIKeyFile != "" {
		key, kerr = openclawinstall.ReadKey(cfg.APIKeyFile)
	}
	if kerr != nil {
		add(openclawinstall.Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the extension's apiKeyFile %s cannot be read: %v", cfg.APIKeyFile, kerr), Fix: install + " (creates the key file)"})
		return st, nil
	}
	var ans struct {
		OK bool `json:"ok"`
	}
	code, msg, err := openclawinstall.PluginHealth(ctx, env, st.DaemonURL, key, &ans)
	switch {
	case err != nil:
		add(openclawinstall.Check{Name: CheckKeyAccepted, Detail: err.Error(), Fix: "see the daemon's log"})
	case code == http.StatusOK:
		add(openclawinstall.Check{Name: CheckKeyAccepted, OK: true, Detail: "the daemon accepts the key in " + cfg.APIKeyFile})
	default:
		fix := "the daemon re-reads its key file within seconds; if it still refuses, it reads another key file (" + orNone(h.KeyFile) + "): " + install + " --agents-dir <the daemon's agents dir>"
		add(openclawinstall.Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the daemon refuses the key in %s: %d %s", cfg.APIKeyFile, code, msg), Fix: fix})
	}
	return st, nil
}

// HealthError returns nil when st is healthy, else an error naming each
// failed check.
func HealthError(st *StatusResult) error {
	if st.Healthy {
		return nil
	}
	var failed []string
	for _, c := range st.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	return fmt.Errorf("pi status: not healthy: %s failed", strings.Join(failed, ", "))
}

func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	ea, errA := filepath.EvalSymlinks(a)
	eb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ea == eb
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
