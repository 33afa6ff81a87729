package openclawinstall

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// WritePlugin writes files to dir, replacing what is there as one step:
// the files go to a temporary directory beside dir, which is then renamed
// to dir (the old copy is renamed away first and removed after).
// Directories get mode 0755, files 0644. A dir that exists must hold a
// copy of this plugin (an openclaw.plugin.json with id "brainsurgeon"), so
// that nothing else is ever replaced.
func WritePlugin(files fs.FS, dir string) error {
	if err := checkOurs(dir, true); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(p))
		if d.IsDir() {
			return os.Mkdir(dst, 0o755)
		}
		b, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("writing the plugin to %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	old := ""
	if _, err := os.Lstat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("moving the old plugin copy aside: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return fmt.Errorf("placing the plugin at %s: %w", dir, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return atomicfile.SyncDir(parent)
}

// checkOurs checks that dir is a copy of this plugin; a missing dir is
// fine when missingOK.
func checkOurs(dir string, missingOK bool) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) && missingOK {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("plugin dir %s: expected a directory, found %s", dir, fi.Mode().Type())
	}
	b, err := os.ReadFile(filepath.Join(dir, "openclaw.plugin.json"))
	var m struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || m.ID != PluginID {
		entries, _ := os.ReadDir(dir)
		if len(entries) == 0 {
			return nil
		}
		return fmt.Errorf("plugin dir %s: expected a copy of the brainsurgeon plugin (openclaw.plugin.json with id %q), found other files; not replacing or removing them", dir, PluginID)
	}
	return nil
}

// installedVersion reads the version of the plugin copy in dir ("" when
// there is none).
func installedVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	json.Unmarshal(b, &p)
	return p.Version
}

// EnsureKey creates the key file at path (0600, 32 random bytes as 64 hex
// digits and a newline) unless it exists; an existing key is never
// replaced. created says it was made now.
func EnsureKey(path string, random io.Reader) (created bool, err error) {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return false, fmt.Errorf("key file %s: expected a regular file, found %s", path, fi.Mode().Type())
		}
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	var k [32]byte
	if _, err := io.ReadFull(random, k[:]); err != nil {
		return false, fmt.Errorf("making an API key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	if err := atomicfile.WriteNew(path, []byte(hex.EncodeToString(k[:])+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("key file %s: %w", path, err)
	}
	return true, nil
}

// InstallOptions are install's arguments.
type InstallOptions struct {
	// Dir is the plugin dir ("" for the stable default).
	Dir string
	// DaemonURL is the daemon the plugin calls ("" for DefaultDaemonURL).
	DaemonURL string
	// Link changes OpenClaw's config through its CLI; without it nothing
	// of OpenClaw's is touched.
	Link bool
	// OpenClaw is the openclaw executable ("" looks it up on PATH).
	OpenClaw string
}

// InstallResult says what install did.
type InstallResult struct {
	// Paths are the files used.
	Paths
	// PluginVersion is the version of the plugin written.
	PluginVersion string `json:"plugin_version"`
	// KeyCreated says the key file was created now (an existing one is
	// kept).
	KeyCreated bool `json:"key_created"`
	// DaemonURL is the daemonUrl configured or printed.
	DaemonURL string `json:"daemon_url"`
	// Linked says OpenClaw's config names the plugin through its CLI,
	// now or from an earlier install.
	Linked bool `json:"linked"`
	// OpenClawVersion is the release linked into ("" when unknown or not
	// linking).
	OpenClawVersion string `json:"openclaw_version,omitempty"`
	// Commands are the OpenClaw commands run.
	Commands []string `json:"commands,omitempty"`
	// ConfigChanged says the config's bytes differ after linking.
	ConfigChanged bool `json:"config_changed,omitempty"`
	// Snippet and LinkCommand say what to do by hand (without Link).
	Snippet     string `json:"config_snippet,omitempty"`
	LinkCommand string `json:"link_command,omitempty"`
}

// Plan returns the paths install would use, checking the options; it
// writes nothing.
func Plan(env Env, o InstallOptions) (Paths, string, error) {
	url := o.DaemonURL
	if url == "" {
		url = DefaultDaemonURL
	}
	if err := CheckDaemonURL(url); err != nil {
		return Paths{}, "", err
	}
	p, err := ResolvePaths(env, o.Dir)
	return p, url, err
}

// Install writes the plugin and the key file and, with o.Link, links the
// plugin into OpenClaw's config (see the package doc). The install record
// is written in every case, and also when linking fails halfway, so that
// Uninstall can take back what was done.
func Install(ctx context.Context, env Env, o InstallOptions) (*InstallResult, error) {
	env = env.withDefaults()
	p, url, err := Plan(env, o)
	if err != nil {
		return nil, err
	}
	var oc *openclaw
	if o.Link {
		if oc, err = findOpenClaw(ctx, env, o.OpenClaw, p.Root, p.ConfigPath); err != nil {
			return nil, err
		}
	}
	prev, hadPrev, err := ReadRecord(p.RecordPath)
	if err != nil {
		return nil, err
	}
	if hadPrev && prev.PluginDir != p.PluginDir {
		return nil, fmt.Errorf("the plugin is already installed at %s (install record %s): run brainsurgeon openclaw uninstall first to move it to %s", prev.PluginDir, p.RecordPath, p.PluginDir)
	}
	res := &InstallResult{Paths: p, PluginVersion: env.Version, DaemonURL: url}
	if err := WritePlugin(env.Files, p.PluginDir); err != nil {
		return nil, err
	}
	if res.KeyCreated, err = EnsureKey(p.KeyFile, env.Rand); err != nil {
		return nil, err
	}
	rec := Record{Root: p.Root, PluginDir: p.PluginDir, KeyFile: p.KeyFile, ConfigPath: p.ConfigPath,
		KeyCreated: res.KeyCreated || (hadPrev && prev.KeyCreated), PluginVersion: env.Version,
		DaemonURL: url, InstalledAt: env.Now().UTC()}
	if hadPrev && prev.Linked {
		// A config linked before stays linked: keep what restores it.
		rec.Linked, rec.BackupPath, rec.ConfigMissing = true, prev.BackupPath, prev.ConfigMissing
		rec.ConfigSHA256Before, rec.ConfigSHA256After, rec.ConfigMode = prev.ConfigSHA256Before, prev.ConfigSHA256After, prev.ConfigMode
		rec.BackupRestorable, rec.Commands = prev.BackupRestorable, prev.Commands
	}
	if !o.Link {
		res.Snippet = Snippet(p.PluginDir, url, p.KeyFile)
		res.LinkCommand = LinkCommand(p.PluginDir)
		res.Linked = rec.Linked
		return res, writeRecord(p.RecordPath, rec)
	}
	cfg, mode, missing, err := readConfig(p.ConfigPath)
	if err != nil {
		return nil, err
	}
	cur := ""
	if !missing {
		cur = sha(cfg)
	}
	if !rec.Linked {
		if !missing {
			if err := atomicfile.WriteFile(p.BackupPath, cfg, 0o600); err != nil {
				return nil, fmt.Errorf("backing up %s: %w", p.ConfigPath, err)
			}
		}
		rec.Linked, rec.BackupPath, rec.ConfigMissing = true, p.BackupPath, missing
		rec.ConfigSHA256Before, rec.ConfigMode, rec.BackupRestorable = cur, uint32(mode), true
	} else if cur != rec.ConfigSHA256After {
		// Someone changed the config since the last install: the backup
		// would take that back too.
		rec.BackupRestorable = false
	}
	if oc.known {
		res.OpenClawVersion = oc.version.String()
	}
	err = oc.exec(ctx, nil, oc.linkArgs(p.PluginDir)...)
	if err == nil {
		err = oc.exec(ctx, ConfigPatch(url, p.KeyFile), "config", "patch", "--stdin")
	}
	rec.Commands = append(rec.Commands, oc.ran...)
	rec.OpenClaw = oc.path
	res.Commands = oc.ran
	after, _, amissing, rerr := readConfig(p.ConfigPath)
	if rerr == nil && !amissing {
		rec.ConfigSHA256After = sha(after)
	}
	res.Linked = true
	res.ConfigChanged = rec.ConfigSHA256After != cur
	if werr := writeRecord(p.RecordPath, rec); werr != nil && err == nil {
		err = werr
	}
	if err == nil {
		err = rerr
	}
	if err != nil {
		return res, fmt.Errorf("%w (brainsurgeon openclaw uninstall takes back what was done)", err)
	}
	return res, nil
}

// UninstallOptions are uninstall's arguments.
type UninstallOptions struct {
	// OpenClaw is the openclaw executable ("" looks it up on PATH); it is
	// needed only when the config changed after install.
	OpenClaw string
}

// UninstallResult says what uninstall did.
type UninstallResult struct {
	// Installed says there was an install record.
	Installed bool `json:"installed"`
	// ConfigPath is OpenClaw's config; ConfigAction is what happened to
	// it: "restored" (the bytes from before install), "removed" (there
	// was none before), "entries_removed" (our entries only, other
	// changes kept), or "untouched".
	ConfigPath   string `json:"config_path,omitempty"`
	ConfigAction string `json:"config_action"`
	// BackupKept is the backup left in place when the config was not
	// restored from it.
	BackupKept string `json:"backup_kept,omitempty"`
	// Commands are the OpenClaw commands run.
	Commands []string `json:"commands,omitempty"`
	// Removed are the files and directories removed.
	Removed []string `json:"removed"`
	// KeyKept is the key file left in place because install did not
	// create it.
	KeyKept string `json:"key_kept,omitempty"`
}

// NeedsConfirmation reports whether Uninstall would change OpenClaw's
// config (there is a record of a linked install).
func NeedsConfirmation(env Env) (bool, error) {
	p, err := ResolvePaths(env, "")
	if err != nil {
		return false, err
	}
	rec, ok, err := ReadRecord(p.RecordPath)
	return ok && rec.Linked, err
}

// Uninstall takes back what Install did. The config is restored to its
// bytes from before install when it is byte-identical to what install
// left; otherwise only our entries are removed, through `openclaw plugins
// uninstall` and `openclaw config patch`, and every other change is kept.
// Then the plugin dir, the key file (only if install created it), the
// backup and the record are removed. Without a record it removes a plugin
// copy at the stable path, if any, and nothing else. Running it again does
// nothing.
func Uninstall(ctx context.Context, env Env, o UninstallOptions) (*UninstallResult, error) {
	env = env.withDefaults()
	p, err := ResolvePaths(env, "")
	if err != nil {
		return nil, err
	}
	res := &UninstallResult{ConfigAction: "untouched", Removed: []string{}}
	rec, ok, err := ReadRecord(p.RecordPath)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := removePlugin(p.PluginDir, res); err != nil {
			return res, err
		}
		removeIfEmpty(filepath.Dir(p.RecordPath), res)
		return res, nil
	}
	res.Installed = true
	if rec.Linked {
		res.ConfigPath = rec.ConfigPath
		if err := unlink(ctx, env, o, rec, res); err != nil {
			return res, err
		}
	}
	if err := removePlugin(rec.PluginDir, res); err != nil {
		return res, err
	}
	if rec.KeyCreated {
		if err := removeFile(rec.KeyFile, res); err != nil {
			return res, err
		}
	} else if _, err := os.Stat(rec.KeyFile); err == nil {
		res.KeyKept = rec.KeyFile
	}
	if rec.BackupPath != "" && res.BackupKept == "" {
		if err := removeFile(rec.BackupPath, res); err != nil {
			return res, err
		}
	}
	if err := removeFile(p.RecordPath, res); err != nil {
		return res, err
	}
	removeIfEmpty(filepath.Dir(p.RecordPath), res)
	return res, nil
}

// unlink takes our entries out of the config.
func unlink(ctx context.Context, env Env, o UninstallOptions, rec Record, res *UninstallResult) error {
	cur, _, missing, err := readConfig(rec.ConfigPath)
	if err != nil {
		return err
	}
	if rec.BackupRestorable && !missing && rec.ConfigSHA256After != "" && sha(cur) == rec.ConfigSHA256After {
		if rec.ConfigMissing {
			if err := os.Remove(rec.ConfigPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			res.ConfigAction = "removed"
			return nil
		}
		b, err := os.ReadFile(rec.BackupPath)
		if err != nil {
			return fmt.Errorf("the config's backup %s: %w; the config %s is left as it is", rec.BackupPath, err, rec.ConfigPath)
		}
		if sha(b) != rec.ConfigSHA256Before {
			return fmt.Errorf("the config's backup %s: expected sha256 %s, found %s; the config %s is left as it is", rec.BackupPath, rec.ConfigSHA256Before, sha(b), rec.ConfigPath)
		}
		mode := fs.FileMode(rec.ConfigMode)
		if mode == 0 {
			mode = 0o600
		}
		if err := atomicfile.WriteFile(rec.ConfigPath, b, mode); err != nil {
			return err
		}
		res.ConfigAction = "restored"
		return nil
	}
	if missing {
		// Nothing of ours can be in a config that is gone.
		if _, err := os.Stat(rec.BackupPath); rec.BackupPath != "" && err == nil {
			res.BackupKept = rec.BackupPath
		}
		return nil
	}
	explicit := o.OpenClaw
	if _, lerr := env.LookPath("openclaw"); explicit == "" && lerr != nil {
		explicit = rec.OpenClaw
	}
	root := rec.Root
	if root == "" {
		root = filepath.Dir(filepath.Dir(rec.KeyFile))
	}
	oc, err := findOpenClaw(ctx, env, explicit, root, rec.ConfigPath)
	if err != nil {
		return fmt.Errorf("the config %s changed since install, so only the brainsurgeon entries can be taken out, which needs OpenClaw's CLI: %w", rec.ConfigPath, err)
	}
	err = oc.exec(ctx, nil, "plugins", "uninstall", PluginID, "--force")
	if err == nil {
		// 2026.8+ leaves plugins.entries.brainsurgeon {enabled:false}.
		err = oc.exec(ctx, []byte(`{"plugins":{"entries":{"`+PluginID+`":null}}}`), "config", "patch", "--stdin")
	}
	res.Commands = oc.ran
	if err != nil {
		return err
	}
	res.ConfigAction = "entries_removed"
	if rec.BackupPath != "" && !rec.ConfigMissing {
		res.BackupKept = rec.BackupPath
	}
	return nil
}

// removePlugin removes dir when it holds a copy of this plugin.
func removePlugin(dir string, res *UninstallResult) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := checkOurs(dir, false); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	res.Removed = append(res.Removed, dir)
	return nil
}

func removeFile(path string, res *UninstallResult) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		res.Removed = append(res.Removed, path)
	}
	return err
}

func removeIfEmpty(dir string, res *UninstallResult) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 && os.Remove(dir) == nil {
		res.Removed = append(res.Removed, dir)
	}
}

// StatusResult says where the plugin is and whether OpenClaw names it.
type StatusResult struct {
	// Paths are the files install uses (the plugin dir and key file
	// from the install record when there is one).
	Paths
	// Installed says a copy of the plugin is in PluginDir.
	Installed bool `json:"installed"`
	// InstalledVersion is that copy's version, EmbeddedVersion the one
	// this binary carries; Current says they are equal.
	InstalledVersion string `json:"installed_version,omitempty"`
	EmbeddedVersion  string `json:"embedded_version"`
	Current          bool   `json:"current"`
	// Record says there is an install record; Linked that install linked
	// the config.
	Record bool `json:"record"`
	Linked bool `json:"linked"`
	// ConfigExists says the config exists; ConfigNamesPlugin that it
	// contains the plugin dir's path (as plugins.load.paths does).
	ConfigExists      bool `json:"config_exists"`
	ConfigNamesPlugin bool `json:"config_names_plugin"`
	// KeyFileExists says the key file exists.
	KeyFileExists bool `json:"key_file_exists"`
}

// Status reports where the plugin is and what names it.
func Status(env Env) (*StatusResult, error) {
	env = env.withDefaults()
	p, err := ResolvePaths(env, "")
	if err != nil {
		return nil, err
	}
	rec, ok, err := ReadRecord(p.RecordPath)
	if err != nil {
		return nil, err
	}
	if ok {
		p.PluginDir, p.KeyFile = rec.PluginDir, rec.KeyFile
	}
	s := &StatusResult{Paths: p, Record: ok, Linked: ok && rec.Linked, EmbeddedVersion: env.Version}
	if checkOurs(p.PluginDir, false) == nil {
		s.InstalledVersion = installedVersion(p.PluginDir)
		s.Installed = s.InstalledVersion != ""
	}
	s.Current = s.Installed && s.InstalledVersion == s.EmbeddedVersion
	if cfg, _, missing, err := readConfig(p.ConfigPath); err == nil && !missing {
		s.ConfigExists = true
		q, _ := json.Marshal(p.PluginDir)
		s.ConfigNamesPlugin = strings.Contains(string(cfg), string(q[1:len(q)-1]))
	}
	if fi, err := os.Stat(p.KeyFile); err == nil && fi.Mode().IsRegular() {
		s.KeyFileExists = true
	}
	return s, nil
}
