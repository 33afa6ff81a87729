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
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// WritePlugin writes files to dir, replacing what is there as one step:
// the files go to a temporary directory beside dir, which is then renamed
// to dir (the old copy is renamed away first and removed after).
// Directories get mode 0755, files 0644. A dir that exists must hold a
// copy of this plugin and nothing else (see checkOurs; previous are the
// files an earlier install wrote, allowed too), so that nothing else is
// ever replaced. It returns the files written, slash-separated and
// relative to dir.
func WritePlugin(files fs.FS, dir string, previous []string) ([]string, error) {
	if err := checkOurs(dir, files, previous, true); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var written []string
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
		written = append(written, p)
		return atomicfile.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("writing the plugin to %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	old := ""
	if _, err := os.Lstat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return nil, fmt.Errorf("moving the old plugin copy aside: %w", err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return nil, fmt.Errorf("placing the plugin at %s: %w", dir, err)
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return written, atomicfile.SyncDir(parent)
}

// shipped returns the plugin's file paths (slash-separated, relative to
// its root) and the directories that hold them, from files plus extra.
func shipped(files fs.FS, extra []string) (fileSet, dirSet map[string]bool) {
	fileSet, dirSet = map[string]bool{}, map[string]bool{}
	add := func(p string) {
		p = path.Clean(p)
		if p == "." || !fs.ValidPath(p) {
			return
		}
		fileSet[p] = true
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirSet[d] = true
		}
	}
	if files != nil {
		fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				add(p)
			}
			return nil
		})
	}
	for _, p := range extra {
		add(p)
	}
	return fileSet, dirSet
}

// checkOurs checks that dir is a copy of this plugin: it holds an
// openclaw.plugin.json with id "brainsurgeon", and every entry in it is a
// regular file the plugin ships (files, or extra: what an earlier install
// wrote) or a directory holding such files. A directory with anything
// else in it (a checkout of the plugin's source, the user's files) is
// not ours, and the error names the unexpected entries. An empty dir is
// fine; a missing one when missingOK.
func checkOurs(dir string, files fs.FS, extra []string, missingOK bool) error {
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
	fileSet, dirSet := shipped(files, extra)
	var unexpected []string
	empty := true
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, e := range entries {
			empty = false
			p := path.Join(rel, e.Name())
			switch {
			case e.Type().IsRegular() && fileSet[p]:
			case e.IsDir() && dirSet[p]:
				if err := walk(p); err != nil {
					return err
				}
			default:
				if e.IsDir() {
					p += "/"
				}
				unexpected = append(unexpected, p)
			}
		}
		return nil
	}
	if err := walk("."); err != nil {
		return err
	}
	if empty {
		return nil
	}
	if len(unexpected) > 0 {
		if len(unexpected) > 10 {
			unexpected = append(unexpected[:10], fmt.Sprintf("and %d more", len(unexpected)-10))
		}
		return fmt.Errorf("plugin dir %s: expected only the brainsurgeon plugin's files (%s), found also %s; not replacing or removing anything there (choose an empty or new directory with --dir)",
			dir, strings.Join(sortedKeys(fileSet), ", "), strings.Join(unexpected, ", "))
	}
	b, err := os.ReadFile(filepath.Join(dir, "openclaw.plugin.json"))
	var m struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || m.ID != PluginID {
		return fmt.Errorf("plugin dir %s: expected a copy of the brainsurgeon plugin (openclaw.plugin.json with id %q), found other files; not replacing or removing them", dir, PluginID)
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
// replaced, but when its group or others may read it, its mode is set to
// 0600 and tightened says so. created says it was made now.
func EnsureKey(path string, random io.Reader) (created, tightened bool, err error) {
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return false, false, fmt.Errorf("key file %s: expected a regular file, found %s", path, fi.Mode().Type())
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return false, false, fmt.Errorf("key file %s: expected mode 0600, found %#o, and could not change it: %w", path, fi.Mode().Perm(), err)
			}
			return false, true, nil
		}
		return false, false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, false, err
	}
	var k [32]byte
	if _, err := io.ReadFull(random, k[:]); err != nil {
		return false, false, fmt.Errorf("making an API key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, false, err
	}
	if err := atomicfile.WriteNew(path, []byte(hex.EncodeToString(k[:])+"\n"), 0o600); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, false, nil
		}
		return false, false, fmt.Errorf("key file %s: %w", path, err)
	}
	return true, false, nil
}

// InstallOptions are install's arguments.
type InstallOptions struct {
	// AgentsDir is the agents dir whose parent is the OpenClaw root (""
	// for the default agents dir; see ResolvePaths).
	AgentsDir string
	// Dir is the plugin dir ("" for the stable default).
	Dir string
	// DaemonURL is the daemon the plugin calls ("" for DefaultDaemonURL).
	DaemonURL string
	// Link changes OpenClaw's config through its CLI; without it nothing
	// of OpenClaw's is touched.
	Link bool
	// OpenClaw is the openclaw executable ("" looks it up on PATH).
	OpenClaw string
	// Engine selects the plugin's context engine
	// (plugins.slots.contextEngine "brainsurgeon"): with Link through the
	// same config patch, recording the slot's previous value; without
	// Link in the printed snippet.
	Engine bool
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
	// KeyModeFixed says an existing key file could be read by its group
	// or others and its mode was set to 0600.
	KeyModeFixed bool `json:"key_mode_fixed,omitempty"`
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
	// EngineSlot is the context-engine slot set (with Link) or printed
	// (without): "brainsurgeon" with InstallOptions.Engine, else "".
	// EnginePrevious is the slot's value before an install that set it
	// ("" when it was not set); uninstall puts it back.
	EngineSlot     string `json:"context_engine_slot,omitempty"`
	EnginePrevious string `json:"previous_context_engine_slot,omitempty"`
	// Next is what to run next (InstallNext; Install leaves it nil: the
	// command asks the daemon).
	Next *Next `json:"next,omitempty"`
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
	p, err := ResolvePaths(env, o.AgentsDir, o.Dir)
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
	written, err := WritePlugin(env.Files, p.PluginDir, prev.Files)
	if err != nil {
		return nil, err
	}
	if res.KeyCreated, res.KeyModeFixed, err = EnsureKey(p.KeyFile, env.Rand); err != nil {
		return nil, err
	}
	rec := Record{Root: p.Root, PluginDir: p.PluginDir, KeyFile: p.KeyFile, ConfigPath: p.ConfigPath,
		KeyCreated: res.KeyCreated || (hadPrev && prev.KeyCreated), PluginVersion: env.Version,
		Files: written, DaemonURL: url, InstalledAt: env.Now().UTC()}
	if hadPrev && prev.Linked {
		// A config linked before stays linked: keep what restores it.
		rec.Linked, rec.BackupPath, rec.ConfigMissing = true, prev.BackupPath, prev.ConfigMissing
		rec.ConfigSHA256Before, rec.ConfigSHA256After, rec.ConfigMode = prev.ConfigSHA256Before, prev.ConfigSHA256After, prev.ConfigMode
		rec.BackupRestorable, rec.Commands = prev.BackupRestorable, prev.Commands
	}
	if hadPrev && prev.Engine {
		// The slot set before stays set: keep the value that restores it.
		rec.Engine, rec.EnginePrevious = true, prev.EnginePrevious
	}
	if o.Engine {
		res.EngineSlot = PluginID
	}
	if !o.Link {
		res.Snippet = Snippet(p.PluginDir, url, p.KeyFile, o.Engine)
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
	if o.Engine && !rec.Engine {
		rec.Engine = true
		if prevSlot := configEngineSlot(cfg); prevSlot != PluginID {
			rec.EnginePrevious = prevSlot
		}
	}
	if o.Engine {
		res.EnginePrevious = rec.EnginePrevious
	}
	if oc.known {
		res.OpenClawVersion = oc.version.String()
	}
	err = oc.exec(ctx, nil, oc.linkArgs(p.PluginDir)...)
	if err == nil {
		var linked []byte
		if linked, _, _, err = readConfig(p.ConfigPath); err == nil {
			err = oc.exec(ctx, LinkPatch(url, p.KeyFile, o.Engine, cfg, linked), "config", "patch", "--stdin")
		}
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
	// AgentsDir is the agents dir whose parent is the OpenClaw root (""
	// for the default agents dir; see ResolvePaths).
	AgentsDir string
	// OpenClaw is the openclaw executable ("" looks it up on PATH); it is
	// needed only when the config changed after install or the plugin
	// was linked by hand.
	OpenClaw string
	// UnlinkHandLinked agrees to take the plugin out of a config that
	// names it though install did not link it (the user linked it by
	// hand), through OpenClaw's CLI. Without it Uninstall refuses such a
	// config (a *HandLinkedError) and changes nothing.
	UnlinkHandLinked bool
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
	// EngineSlot is plugins.slots.contextEngine after uninstall ("legacy"
	// when unset), when install had selected the plugin's context engine
	// or the config selected it; "" otherwise.
	EngineSlot string `json:"context_engine_slot,omitempty"`
}

// UninstallPlan says what Uninstall would do to OpenClaw's config.
type UninstallPlan struct {
	// Linked says install linked the config: Uninstall restores it or
	// takes our entries out.
	Linked bool `json:"linked"`
	// HandLinked says the config names the plugin (its dir,
	// plugins.entries.brainsurgeon, or its context engine in
	// plugins.slots.contextEngine) though install did not link it, and
	// Uninstall would remove files it names: it needs
	// UninstallOptions.UnlinkHandLinked.
	HandLinked bool `json:"hand_linked"`
	// ConfigPath is OpenClaw's config.
	ConfigPath string `json:"config_path"`
	// Commands take the plugin out of the config by hand (HandLinked).
	Commands []string `json:"commands,omitempty"`
}

// HandLinkedError says the config names the plugin though install did not
// link it; Uninstall changed nothing.
type HandLinkedError struct {
	ConfigPath string
	Commands   []string
}

func (e *HandLinkedError) Error() string {
	return fmt.Sprintf("OpenClaw's config %s names the brainsurgeon plugin, which install did not link (it was added by hand): removing the plugin's files would leave the config naming a plugin that does not exist. Take it out of the config first, then run uninstall again:\n  %s\nor let uninstall run OpenClaw's CLI for you (--yes)",
		e.ConfigPath, strings.Join(e.Commands, "\n  "))
}

// HandUnlinkCommands are the OpenClaw commands that take the plugin out of
// its config by hand; engine adds the one that puts the context-engine
// slot back to OpenClaw's own engine.
func HandUnlinkCommands(engine bool) []string {
	c := []string{"openclaw plugins uninstall " + PluginID + " --force", "openclaw config unset plugins.entries." + PluginID}
	if engine {
		c = append(c, "openclaw config set plugins.slots.contextEngine "+EngineSlotDefault)
	}
	return c
}

// uninstallState is what Uninstall reads before it changes anything.
type uninstallState struct {
	paths  Paths
	rec    Record
	hasRec bool
	dir    string   // the plugin dir
	files  []string // the files to remove from it
}

func readUninstallState(env Env, agentsDir string) (uninstallState, error) {
	p, err := ResolvePaths(env, agentsDir, "")
	if err != nil {
		return uninstallState{}, err
	}
	rec, ok, err := ReadRecord(p.RecordPath)
	if err != nil {
		return uninstallState{}, err
	}
	st := uninstallState{paths: p, rec: rec, hasRec: ok, dir: p.PluginDir}
	if ok {
		st.dir = rec.PluginDir
	}
	fileSet, _ := shipped(env.Files, rec.Files)
	if ok && len(rec.Files) > 0 {
		fileSet, _ = shipped(nil, rec.Files)
	}
	st.files = sortedKeys(fileSet)
	return st, nil
}

// handLinked reports whether the config names the plugin though install
// did not link it, while there is a plugin copy (or a record) to remove.
func (st uninstallState) handLinked() (bool, error) {
	if st.hasRec && st.rec.Linked {
		return false, nil
	}
	if !st.hasRec {
		if _, err := os.Lstat(st.dir); errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
	}
	cfgPath := st.paths.ConfigPath
	if st.hasRec && st.rec.ConfigPath != "" {
		cfgPath = st.rec.ConfigPath
	}
	cfg, _, missing, err := readConfig(cfgPath)
	if err != nil || missing {
		return false, err
	}
	return configNamesDir(cfg, st.dir) || configHasEntry(cfg) || configEngineSlot(cfg) == PluginID, nil
}

// configPath is the config uninstall works on: the record's, else the
// resolved one.
func (st uninstallState) configPath() string {
	if st.hasRec && st.rec.ConfigPath != "" {
		return st.rec.ConfigPath
	}
	return st.paths.ConfigPath
}

// engineSlotTarget returns the value plugins.slots.contextEngine must take
// when uninstall takes the plugin out of the config cfgPath: the value
// install recorded before it selected the engine, else "legacy"; "" when
// the slot does not select the plugin's engine (it is left alone).
func engineSlotTarget(cfgPath string, rec Record) string {
	cfg, _, missing, err := readConfig(cfgPath)
	if err != nil || missing || configEngineSlot(cfg) != PluginID {
		return ""
	}
	if rec.Engine && rec.EnginePrevious != "" && rec.EnginePrevious != PluginID {
		return rec.EnginePrevious
	}
	return EngineSlotDefault
}

// engineSlotAfter returns the config's plugins.slots.contextEngine, "legacy"
// when it is not set or the config is gone.
func engineSlotAfter(cfgPath string) string {
	cfg, _, _, err := readConfig(cfgPath)
	if s := configEngineSlot(cfg); err == nil && s != "" {
		return s
	}
	return EngineSlotDefault
}

// configNamesDir reports whether the config holds dir's path (as
// plugins.load.paths does).
func configNamesDir(cfg []byte, dir string) bool {
	q, _ := json.Marshal(dir)
	return strings.Contains(string(cfg), string(q[1:len(q)-1]))
}

var entryKeyRE = regexp.MustCompile(`["']?` + PluginID + `["']?\s*:`)

// configHasEntry reports whether the config has
// plugins.entries.brainsurgeon. A config that is not plain JSON (OpenClaw
// reads JSON5) is searched for a brainsurgeon member instead.
func configHasEntry(cfg []byte) bool {
	var c struct {
		Plugins struct {
			Entries map[string]json.RawMessage `json:"entries"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		return entryKeyRE.Match(cfg)
	}
	_, ok := c.Plugins.Entries[PluginID]
	return ok
}

// PlanUninstall says what Uninstall would do to OpenClaw's config, so that
// the caller can ask first; it changes nothing.
func PlanUninstall(env Env, agentsDir string) (UninstallPlan, error) {
	env = env.withDefaults()
	st, err := readUninstallState(env, agentsDir)
	if err != nil {
		return UninstallPlan{}, err
	}
	plan := UninstallPlan{Linked: st.hasRec && st.rec.Linked, ConfigPath: st.configPath()}
	if plan.HandLinked, err = st.handLinked(); err != nil {
		return plan, err
	}
	if plan.HandLinked {
		plan.Commands = HandUnlinkCommands(engineSlotTarget(plan.ConfigPath, st.rec) != "")
	}
	return plan, nil
}

// Uninstall takes back what Install did. The config is restored to its
// bytes from before install when it is byte-identical to what install
// left; otherwise only our entries are removed, through `openclaw plugins
// uninstall` and `openclaw config patch`, and every other change is kept.
// A config that names the plugin though install did not link it is
// refused (a *HandLinkedError) unless o.UnlinkHandLinked, which takes our
// entries out the same way. Then the plugin's files (those install
// wrote), the plugin dir when that leaves it empty, the key file (only if
// install created it), the backup and the record are removed. A plugin dir
// holding anything but the plugin's files is refused before anything
// changes. Without a record it removes a plugin copy at the stable path,
// if any, and nothing else. Running it again does nothing.
func Uninstall(ctx context.Context, env Env, o UninstallOptions) (*UninstallResult, error) {
	env = env.withDefaults()
	st, err := readUninstallState(env, o.AgentsDir)
	if err != nil {
		return nil, err
	}
	res := &UninstallResult{ConfigAction: "untouched", Removed: []string{}}
	if err := checkOurs(st.dir, nil, st.files, true); err != nil {
		return res, err
	}
	hand, err := st.handLinked()
	if err != nil {
		return res, err
	}
	if hand {
		cfgPath := st.configPath()
		slot := engineSlotTarget(cfgPath, st.rec)
		if !o.UnlinkHandLinked {
			return res, &HandLinkedError{ConfigPath: cfgPath, Commands: HandUnlinkCommands(slot != "")}
		}
		res.ConfigPath = cfgPath
		explicit := o.OpenClaw
		if _, lerr := env.LookPath("openclaw"); explicit == "" && lerr != nil {
			explicit = st.rec.OpenClaw
		}
		root := st.paths.Root
		if st.rec.Root != "" {
			root = st.rec.Root
		}
		ran, err := removeEntries(ctx, env, explicit, root, cfgPath, slot)
		res.Commands = ran
		if err != nil {
			return res, fmt.Errorf("the config %s names the brainsurgeon plugin (linked by hand), so it must be taken out with OpenClaw's CLI before the files go: %w", cfgPath, err)
		}
		res.ConfigAction = "entries_removed"
		if slot != "" {
			res.EngineSlot = engineSlotAfter(cfgPath)
		}
	}
	rec := st.rec
	if !st.hasRec {
		if err := removePlugin(st.dir, st.files, res); err != nil {
			return res, err
		}
		removeIfEmpty(filepath.Dir(st.paths.RecordPath), res)
		return res, nil
	}
	res.Installed = true
	if rec.Linked {
		res.ConfigPath = rec.ConfigPath
		if err := unlink(ctx, env, o, rec, res); err != nil {
			return res, err
		}
		if rec.Engine || res.EngineSlot != "" {
			res.EngineSlot = engineSlotAfter(rec.ConfigPath)
		}
	}
	if err := removePlugin(rec.PluginDir, st.files, res); err != nil {
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
	if err := removeFile(st.paths.RecordPath, res); err != nil {
		return res, err
	}
	removeIfEmpty(filepath.Dir(st.paths.RecordPath), res)
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
	slot := engineSlotTarget(rec.ConfigPath, rec)
	ran, err := removeEntries(ctx, env, explicit, root, rec.ConfigPath, slot)
	if slot != "" {
		res.EngineSlot = slot
	}
	res.Commands = ran
	if err != nil {
		return fmt.Errorf("the config %s changed since install, so only the brainsurgeon entries can be taken out, which needs OpenClaw's CLI: %w", rec.ConfigPath, err)
	}
	res.ConfigAction = "entries_removed"
	if rec.BackupPath != "" && !rec.ConfigMissing {
		res.BackupKept = rec.BackupPath
	}
	return nil
}

// removeEntries takes the plugin out of the config cfg with OpenClaw's CLI
// run on root: `openclaw plugins uninstall brainsurgeon --force`, then a
// patch that deletes plugins.entries.brainsurgeon (2026.8+ leaves it as
// {enabled:false}) and, when slot is not empty, sets
// plugins.slots.contextEngine to slot (OpenClaw's uninstall resets a slot
// naming the plugin to "legacy"; the patch also puts back another value
// install recorded). It returns the commands run.
func removeEntries(ctx context.Context, env Env, explicit, root, cfg, slot string) ([]string, error) {
	oc, err := findOpenClaw(ctx, env, explicit, root, cfg)
	if err != nil {
		return nil, err
	}
	err = oc.exec(ctx, nil, "plugins", "uninstall", PluginID, "--force")
	if err == nil {
		plugins := map[string]any{"entries": map[string]any{PluginID: nil}}
		if slot != "" {
			plugins["slots"] = map[string]any{"contextEngine": slot}
		}
		patch, _ := json.Marshal(map[string]any{"plugins": plugins})
		err = oc.exec(ctx, patch, "config", "patch", "--stdin")
	}
	return oc.ran, err
}

// removePlugin removes the files of the plugin copy in dir, then dir and
// the directories in it that this leaves empty. dir must hold nothing
// else (checkOurs).
func removePlugin(dir string, files []string, res *UninstallResult) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := checkOurs(dir, nil, files, false); err != nil {
		return err
	}
	_, dirSet := shipped(nil, files)
	for _, f := range files {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(f))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	dirs := sortedKeys(dirSet)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		os.Remove(filepath.Join(dir, filepath.FromSlash(d))) // only when empty
	}
	if err := os.Remove(dir); err != nil {
		return fmt.Errorf("removing the plugin dir %s: %w", dir, err)
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
	// ConfigHasEntry says it has plugins.entries.brainsurgeon.
	ConfigHasEntry bool `json:"config_has_entry"`
	// KeyFileExists says the key file exists.
	KeyFileExists bool `json:"key_file_exists"`
	// EngineSlot is the config's plugins.slots.contextEngine ("legacy",
	// OpenClaw's own engine, when it is not set); EngineSelected says it
	// selects the plugin's engine; EngineByInstall says install --engine
	// selected it, and EnginePrevious is the value uninstall puts back.
	EngineSlot      string `json:"context_engine_slot"`
	EngineSelected  bool   `json:"engine_selected"`
	EngineByInstall bool   `json:"engine_by_install"`
	EnginePrevious  string `json:"previous_context_engine_slot,omitempty"`

	// The end-to-end checks (CheckSystem fills them; Status leaves them
	// empty). DaemonURL is the daemon the plugin calls (its config's
	// daemonUrl, else the install record's, else DefaultDaemonURL);
	// Plugin is its entry in OpenClaw's config; Daemon is the daemon's
	// GET /api/health answer, Activity what it saw of the plugin's calls
	// and Engine its count of the context engine's calls (nil when it did
	// not answer them). Checks are the checks run, and Healthy says every
	// one passed.
	DaemonURL string          `json:"daemon_url,omitempty"`
	Plugin    PluginConfig    `json:"plugin_config"`
	Daemon    *DaemonHealth   `json:"daemon,omitempty"`
	Activity  *PluginActivity `json:"plugin_activity,omitempty"`
	Engine    *EngineActivity `json:"engine_activity,omitempty"`
	Checks    []Check         `json:"checks,omitempty"`
	Healthy   bool            `json:"healthy"`

	recordDaemonURL string
}

// Status reports where the plugin is and what names it, under the OpenClaw
// root of agentsDir ("" for the default agents dir).
func Status(env Env, agentsDir string) (*StatusResult, error) {
	env = env.withDefaults()
	p, err := ResolvePaths(env, agentsDir, "")
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
	s := &StatusResult{Paths: p, Record: ok, Linked: ok && rec.Linked, EmbeddedVersion: env.Version,
		EngineSlot: EngineSlotDefault, EngineByInstall: ok && rec.Engine}
	if s.EngineByInstall {
		s.EnginePrevious = rec.EnginePrevious
	}
	if ok {
		s.recordDaemonURL = rec.DaemonURL
	}
	if checkOurs(p.PluginDir, env.Files, rec.Files, false) == nil {
		s.InstalledVersion = installedVersion(p.PluginDir)
		s.Installed = s.InstalledVersion != ""
	}
	s.Current = s.Installed && s.InstalledVersion == s.EmbeddedVersion
	if cfg, _, missing, err := readConfig(p.ConfigPath); err == nil && !missing {
		s.ConfigExists = true
		s.ConfigNamesPlugin = configNamesDir(cfg, p.PluginDir)
		s.ConfigHasEntry = configHasEntry(cfg)
		if slot := configEngineSlot(cfg); slot != "" {
			s.EngineSlot = slot
		}
	}
	s.EngineSelected = s.EngineSlot == PluginID
	if fi, err := os.Stat(p.KeyFile); err == nil && fi.Mode().IsRegular() {
		s.KeyFileExists = true
	}
	return s, nil
}
