// Package openclawinstall installs BrainSurgeon's OpenClaw plugin and takes
// it back: it writes the plugin embedded in the binary to a stable
// directory, creates the API key file the plugin and the daemon share, and,
// when asked, links the plugin into OpenClaw's config through OpenClaw's own
// CLI (`openclaw plugins install --link`, `openclaw config patch`), keeping
// a backup of the config's bytes so that uninstalling restores them exactly.
//
// Layout, under the OpenClaw root (the parent of the agents dir, as for
// brainsurgeon serve: $OPENCLAW_STATE_DIR when only that is set, else
// ~/.openclaw; see ResolvePaths):
//
//	.brainsurgeon/openclaw-plugin/          the plugin (or the directory given)
//	.brainsurgeon/api.key                   the API key (0600, 64 hex digits)
//	.brainsurgeon/openclaw-install.json     what install did (the install record)
//	.brainsurgeon/openclaw.json.before-install  the config's bytes before linking
//
// The package never prints; the command reports what the results say.
package openclawinstall

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/internal/hostconfig"
	openclawplugin "github.com/brainsurgeon/brainsurgeon/openclaw-plugin"
)

// PluginID is the plugin's id in OpenClaw's config.
const PluginID = "brainsurgeon"

// EngineSlotDefault is OpenClaw's own context engine, the value of
// plugins.slots.contextEngine when nothing else is selected.
const EngineSlotDefault = "legacy"

// DefaultDaemonURL is the daemon the plugin calls when none is given.
const DefaultDaemonURL = "http://127.0.0.1:8000"

// Runner runs one external command in the current environment plus env
// ("K=V", winning over the current values), with stdin as its standard
// input, and returns what it wrote to stdout and stderr. err is not nil
// when the command could not start or exited non-zero.
type Runner func(ctx context.Context, name string, args, env []string, stdin []byte) (stdout, stderr []byte, err error)

// ExecRunner runs commands with os/exec.
func ExecRunner(ctx context.Context, name string, args, env []string, stdin []byte) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.Bytes(), errb.Bytes(), err
}

// Env is what the package reads from its surroundings; the zero value uses
// the process's environment, home directory, PATH and os/exec.
type Env struct {
	// Getenv reads an environment variable (default os.Getenv).
	Getenv func(string) string
	// HomeDir returns the home directory (default os.UserHomeDir).
	HomeDir func() (string, error)
	// LookPath finds an executable on PATH (default exec.LookPath).
	LookPath func(string) (string, error)
	// Run runs OpenClaw's CLI (default ExecRunner).
	Run Runner
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand is the source of the API key (default crypto/rand.Reader).
	Rand io.Reader
	// Files is the plugin to write (default openclawplugin.Files()),
	// and Version its version (default openclawplugin.Version()).
	Files   fs.FS
	Version string
	// HTTP asks the daemon (default: a client with HealthTimeout).
	HTTP *http.Client
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
	if e.Run == nil {
		e.Run = ExecRunner
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Rand == nil {
		e.Rand = rand.Reader
	}
	if e.Files == nil {
		e.Files = openclawplugin.Files()
		if e.Version == "" {
			e.Version = openclawplugin.Version()
		}
	}
	return e
}

// Paths are the files install writes and reads.
type Paths struct {
	// Root is the OpenClaw root (state dir).
	Root string `json:"openclaw_root"`
	// AgentsDir is the agents dir whose parent Root is.
	AgentsDir string `json:"agents_dir"`
	// PluginDir is where the plugin is written.
	PluginDir string `json:"plugin_dir"`
	// KeyFile holds the API key.
	KeyFile string `json:"key_file"`
	// ConfigPath is OpenClaw's config ($OPENCLAW_CONFIG_PATH, else
	// <root>/openclaw.json).
	ConfigPath string `json:"config_path"`
	// RecordPath is the install record.
	RecordPath string `json:"record_path"`
	// BackupPath holds the config's bytes from before linking.
	BackupPath string `json:"backup_path"`
}

// ResolvePaths returns the paths for agentsDir and pluginDir. The OpenClaw
// root is the parent of the agents dir, as for brainsurgeon serve and
// brainsurgeon service: agentsDir, else the default agents dir
// ($BRAINSURGEON_AGENTS_DIR, $AGENTS_DIR, $OPENCLAW_STATE_DIR/agents,
// ~/.openclaw/agents; config.DefaultAgentsDir). pluginDir "" means the
// stable default under the root.
func ResolvePaths(env Env, agentsDir, pluginDir string) (Paths, error) {
	env = env.withDefaults()
	agents := expandHome(env, strings.TrimSpace(agentsDir))
	if agents == "" {
		var err error
		if agents, err = config.DefaultAgentsDirFrom(env.Getenv, env.HomeDir); err != nil {
			return Paths{}, fmt.Errorf("the OpenClaw root: %w", err)
		}
	}
	root := filepath.Dir(filepath.Clean(agents))
	root, err := filepath.Abs(root)
	if err != nil {
		return Paths{}, err
	}
	own := filepath.Join(root, ".brainsurgeon")
	absAgents, err := filepath.Abs(agents)
	if err != nil {
		return Paths{}, err
	}
	p := Paths{
		Root:       root,
		AgentsDir:  absAgents,
		PluginDir:  filepath.Join(own, "openclaw-plugin"),
		KeyFile:    filepath.Join(own, "api.key"),
		ConfigPath: filepath.Join(root, "openclaw.json"),
		RecordPath: filepath.Join(own, "openclaw-install.json"),
		BackupPath: filepath.Join(own, "openclaw.json.before-install"),
	}
	if c := strings.TrimSpace(env.Getenv("OPENCLAW_CONFIG_PATH")); c != "" {
		if p.ConfigPath, err = filepath.Abs(expandHome(env, c)); err != nil {
			return Paths{}, err
		}
	}
	if pluginDir != "" {
		d, err := filepath.Abs(expandHome(env, pluginDir))
		if err != nil {
			return Paths{}, err
		}
		if d == "/" || d == root || d == own || d == filepath.Dir(root) {
			return Paths{}, fmt.Errorf("--dir %s: expected a directory of its own for the plugin, not %s", pluginDir, d)
		}
		p.PluginDir = d
	}
	return p, nil
}

func expandHome(env Env, p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := env.HomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

// Record is the install record: what install did, so that uninstall can
// take exactly that back.
type Record struct {
	// Root is the OpenClaw root (the state dir OpenClaw's CLI is run on).
	Root string `json:"openclaw_root"`
	// PluginDir, KeyFile, ConfigPath and BackupPath are the paths used.
	PluginDir  string `json:"plugin_dir"`
	KeyFile    string `json:"key_file"`
	ConfigPath string `json:"config_path"`
	BackupPath string `json:"backup_path,omitempty"`
	// KeyCreated says install created the key file (uninstall removes
	// only such a key).
	KeyCreated bool `json:"key_created"`
	// PluginVersion is the version written.
	PluginVersion string `json:"plugin_version"`
	// Files are the files written to PluginDir (slash-separated paths
	// relative to it); uninstall removes only these, then the dir if it
	// is empty.
	Files []string `json:"files,omitempty"`
	// DaemonURL is the daemonUrl configured or printed.
	DaemonURL string `json:"daemon_url"`
	// Linked says OpenClaw's config was changed through its CLI.
	Linked bool `json:"linked"`
	// ConfigMissing says there was no config before linking (uninstall
	// then removes the file instead of restoring it).
	ConfigMissing bool `json:"config_missing,omitempty"`
	// ConfigSHA256Before and ConfigSHA256After are the config's sha256
	// before linking and after it ("" for a missing file).
	ConfigSHA256Before string `json:"config_sha256_before,omitempty"`
	ConfigSHA256After  string `json:"config_sha256_after,omitempty"`
	// ConfigMode is the config file's permission bits before linking.
	ConfigMode uint32 `json:"config_mode,omitempty"`
	// BackupRestorable is false when the backup no longer describes the
	// config but for our entries (the config changed between two
	// installs); uninstall then removes only our entries.
	BackupRestorable bool `json:"backup_restorable,omitempty"`
	// Commands are the OpenClaw commands run.
	Commands []string `json:"commands,omitempty"`
	// OpenClaw is the openclaw executable install ran; uninstall uses it
	// when none is given and PATH has none.
	OpenClaw string `json:"openclaw,omitempty"`
	// Engine says install selected the plugin's context engine
	// (plugins.slots.contextEngine "brainsurgeon") through OpenClaw's CLI,
	// and EnginePrevious is the slot's value before that ("" when it was
	// not set); uninstall puts that value back.
	Engine         bool   `json:"engine,omitempty"`
	EnginePrevious string `json:"engine_previous_slot,omitempty"`
	// InstalledAt is when.
	InstalledAt time.Time `json:"installed_at"`
}

// ReadRecord reads the install record at path; ok is false when there is
// none.
func ReadRecord(path string) (rec Record, ok bool, err error) {
	if ok, err = ReadRecordFile(path, "install", &rec); !ok || err != nil {
		return Record{}, false, err
	}
	if rec.PluginDir == "" || !filepath.IsAbs(rec.PluginDir) || rec.KeyFile == "" || !filepath.IsAbs(rec.KeyFile) {
		return Record{}, false, fmt.Errorf("install record %s: expected absolute plugin_dir and key_file, found %q and %q", path, rec.PluginDir, rec.KeyFile)
	}
	if (rec.Linked && !filepath.IsAbs(rec.ConfigPath)) || (rec.BackupPath != "" && !filepath.IsAbs(rec.BackupPath)) {
		return Record{}, false, fmt.Errorf("install record %s: expected absolute config_path and backup_path, found %q and %q", path, rec.ConfigPath, rec.BackupPath)
	}
	return rec, true, nil
}

func writeRecord(path string, rec Record) error { return WriteRecordFile(path, rec) }

// ReadRecordFile decodes the install record at path into v; ok is false
// (and err nil) when there is none. by names what writes the record, for
// the error about a file that is not its JSON ("install", "pi install").
func ReadRecordFile(path, by string, v any) (ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("install record %s: expected the JSON %s writes: %v", path, by, err)
	}
	return true, nil
}

// WriteRecordFile writes v as indented JSON to path, an install record:
// atomically, 0600, its directory made (0700) when missing.
func WriteRecordFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// ConfigPatch returns the JSON object that sets the plugin's config: what
// `openclaw config patch` merges into the config after linking. With
// engine it also selects the plugin's context engine
// (plugins.slots.contextEngine).
func ConfigPatch(daemonURL, keyFile string, engine bool) []byte {
	plugins := map[string]any{"entries": map[string]any{
		PluginID: map[string]any{"config": map[string]any{"daemonUrl": daemonURL, "apiKeyFile": keyFile}}}}
	if engine {
		plugins["slots"] = map[string]any{"contextEngine": PluginID}
	}
	b, _ := json.Marshal(map[string]any{"plugins": plugins})
	return b
}

// LinkPatch returns the patch install merges into the config after
// `openclaw plugins install --link`: ConfigPatch, plus what undoes the
// slot selection that command makes for a plugin whose manifest declares
// "kind": "context-engine". OpenClaw then selects the plugin's engine
// (plugins.slots.contextEngine) and 2026.7 also disables the other
// context-engine plugins (plugins.entries.<id>.enabled false). before is
// the config before linking (JSON or JSON5; nil when there was none),
// linked the config after it. Without engine the slot goes back to its
// value in before (deleted when it had none); in every case an entry
// that linking disabled gets its enabled member back. A config that
// cannot be read as JSON leaves the patch as ConfigPatch.
func LinkPatch(daemonURL, keyFile string, engine bool, before, linked []byte) []byte {
	patch := ConfigPatch(daemonURL, keyFile, engine)
	type pluginsJSON struct {
		Slots   map[string]any            `json:"slots"`
		Entries map[string]map[string]any `json:"entries"`
	}
	read := func(b []byte) (pluginsJSON, bool) {
		var c struct {
			Plugins pluginsJSON `json:"plugins"`
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return c.Plugins, true
		}
		j, err := hostconfig.ToJSON(b)
		if err == nil {
			err = json.Unmarshal(j, &c)
		}
		return c.Plugins, err == nil
	}
	was, ok1 := read(before)
	now, ok2 := read(linked)
	if !ok1 || !ok2 {
		return patch
	}
	var p map[string]any
	json.Unmarshal(patch, &p)
	plugins := p["plugins"].(map[string]any)
	if !engine {
		prev, had := was.Slots["contextEngine"]
		if cur, has := now.Slots["contextEngine"]; has != had || cur != prev {
			plugins["slots"] = map[string]any{"contextEngine": prev} // nil deletes
		}
	}
	entries := plugins["entries"].(map[string]any)
	for id, e := range now.Entries {
		if id == PluginID || e["enabled"] != false {
			continue
		}
		old, had := was.Entries[id]
		switch {
		case !had:
			entries[id] = nil
		case old["enabled"] != false:
			entries[id] = map[string]any{"enabled": old["enabled"]} // nil deletes
		}
	}
	b, _ := json.Marshal(p)
	return b
}

// Snippet returns the part of openclaw.json that loads and configures the
// plugin from pluginDir, for a user who edits the config by hand; with
// engine it also selects the plugin's context engine.
func Snippet(pluginDir, daemonURL, keyFile string, engine bool) string {
	type config struct {
		DaemonURL  string `json:"daemonUrl"`
		APIKeyFile string `json:"apiKeyFile"`
	}
	type entry struct {
		Enabled bool   `json:"enabled"`
		Config  config `json:"config"`
	}
	type slots struct {
		ContextEngine string `json:"contextEngine"`
	}
	type plugins struct {
		Load struct {
			Paths []string `json:"paths"`
		} `json:"load"`
		Slots   *slots           `json:"slots,omitempty"`
		Entries map[string]entry `json:"entries"`
	}
	v := struct {
		Plugins plugins `json:"plugins"`
	}{}
	v.Plugins.Load.Paths = []string{pluginDir}
	v.Plugins.Entries = map[string]entry{PluginID: {Enabled: true, Config: config{daemonURL, keyFile}}}
	if engine {
		v.Plugins.Slots = &slots{ContextEngine: PluginID}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(v)
	return buf.String()
}

var slotRE = regexp.MustCompile(`["']?contextEngine["']?\s*:\s*["']([^"']*)["']`)

// configEngineSlot returns the config's plugins.slots.contextEngine ("" when
// it is not set). A config that is not plain JSON (OpenClaw reads JSON5) is
// searched for a contextEngine member instead.
func configEngineSlot(cfg []byte) string {
	var c struct {
		Plugins struct {
			Slots struct {
				ContextEngine any `json:"contextEngine"`
			} `json:"slots"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(cfg, &c); err != nil {
		if m := slotRE.FindSubmatch(cfg); m != nil {
			return strings.TrimSpace(string(m[1]))
		}
		return ""
	}
	s, _ := c.Plugins.Slots.ContextEngine.(string)
	return strings.TrimSpace(s)
}

// CheckDaemonURL checks that u is a loopback http URL, the only kind the
// plugin accepts.
func CheckDaemonURL(u string) error {
	for _, p := range []string{"http://127.0.0.1", "http://localhost", "http://[::1]"} {
		if rest, ok := strings.CutPrefix(u, p); ok && (rest == "" || rest[0] == ':' || rest[0] == '/') {
			return nil
		}
	}
	return fmt.Errorf("daemon URL %q: expected http://127.0.0.1…, http://localhost… or http://[::1]… (the plugin calls only a daemon on this machine)", u)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readConfig returns the config's bytes; missing is true when there is no
// file.
func readConfig(path string) (b []byte, mode fs.FileMode, missing bool, err error) {
	return ReadRegular(path, "OpenClaw config ")
}

// ReadRegular returns the bytes and permission bits of the regular file at
// path; missing is true (and err nil) when there is no file. what names the
// file in the error about something else than a regular file being there
// ("OpenClaw config ", or "").
func ReadRegular(path, what string) (b []byte, mode fs.FileMode, missing bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, true, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, false, fmt.Errorf("%s%s: expected a regular file, found %s", what, path, fi.Mode().Type())
	}
	b, err = os.ReadFile(path)
	return b, fi.Mode().Perm(), false, err
}

// OpenClawVersion is a release of OpenClaw, from `openclaw --version`.
type OpenClawVersion struct {
	Year, Month, Day int
}

// String returns "2026.9.6".
func (v OpenClawVersion) String() string { return fmt.Sprintf("%d.%d.%d", v.Year, v.Month, v.Day) }

// Before reports whether v is older than year.month.
func (v OpenClawVersion) Before(year, month int) bool {
	return v.Year < year || (v.Year == year && v.Month < month)
}

var versionRE = regexp.MustCompile(`\b(20\d\d)\.(\d{1,2})\.(\d{1,3})\b`)

// ParseOpenClawVersion reads the release from `openclaw --version` output
// ("OpenClaw 2026.9.6 (eb377ac)").
func ParseOpenClawVersion(out string) (OpenClawVersion, bool) {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return OpenClawVersion{}, false
	}
	y, _ := strconv.Atoi(m[1])
	mo, _ := strconv.Atoi(m[2])
	d, _ := strconv.Atoi(m[3])
	return OpenClawVersion{y, mo, d}, true
}

// openclaw is the OpenClaw CLI found for a command, run on one state dir
// and config (env).
type openclaw struct {
	path    string
	env     []string
	version OpenClawVersion
	known   bool
	run     Runner
	ran     []string
}

// LocateOpenClaw returns the path of OpenClaw's CLI: explicit when not
// empty (it must be an executable file), else "openclaw" on PATH. It runs
// nothing.
func LocateOpenClaw(env Env, explicit string) (string, error) {
	env = env.withDefaults()
	p := explicit
	if explicit != "" {
		fi, err := os.Stat(explicit)
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("--openclaw %s: expected the openclaw executable, found %v", explicit, describeFile(fi, err))
		}
	} else {
		var err error
		if p, err = env.LookPath("openclaw"); err != nil {
			return "", fmt.Errorf("the openclaw command is not on PATH (%v): install OpenClaw, pass --openclaw PATH, or run without --link and add the printed config yourself", err)
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, nil
}

// findOpenClaw locates the CLI (LocateOpenClaw) and asks its version. It
// will run on the state dir root and the config cfg, whatever the
// environment says, so that it edits the config that was backed up.
func findOpenClaw(ctx context.Context, env Env, explicit, root, cfg string) (*openclaw, error) {
	p, err := LocateOpenClaw(env, explicit)
	if err != nil {
		return nil, err
	}
	oc := &openclaw{path: p, run: env.Run, env: []string{"OPENCLAW_STATE_DIR=" + root, "OPENCLAW_CONFIG_PATH=" + cfg}}
	out, errOut, err := env.Run(ctx, p, []string{"--version"}, oc.env, nil)
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v: %s", p, err, strings.TrimSpace(string(errOut)))
	}
	oc.version, oc.known = ParseOpenClawVersion(string(out))
	return oc, nil
}

func describeFile(fi fs.FileInfo, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case fi.IsDir():
		return "a directory"
	default:
		return "a file that is not executable"
	}
}

// exec runs the CLI with args and stdin.
func (oc *openclaw) exec(ctx context.Context, stdin []byte, args ...string) error {
	oc.ran = append(oc.ran, "openclaw "+strings.Join(args, " "))
	out, errOut, err := oc.run(ctx, oc.path, args, oc.env, stdin)
	if err != nil {
		msg := strings.TrimSpace(string(errOut))
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		return fmt.Errorf("openclaw %s: %v: %s", strings.Join(args, " "), err, lastLines(msg, 6))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// linkArgs returns the arguments that link dir: releases before 2026.8
// know neither --accept-capabilities nor --force with --link.
func (oc *openclaw) linkArgs(dir string) []string {
	if oc.known && oc.version.Before(2026, 8) {
		return []string{"plugins", "install", "--link", dir}
	}
	return []string{"plugins", "install", "--link", dir, "--force", "--accept-capabilities"}
}

// LinkCommand returns the command a user runs to link pluginDir into
// OpenClaw 2026.8 or later by hand.
func LinkCommand(pluginDir string) string {
	return "openclaw plugins install --link " + shellQuote(pluginDir) + " --force --accept-capabilities"
}

func shellQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
