// Package piinstall installs BrainSurgeon's pi extension (pi.js of the
// plugin this binary carries) for the pi coding agent, and takes it back.
//
// Install writes the plugin's files to a directory of their own, <pi
// dir>/brainsurgeon (the pi dir is $PI_CODING_AGENT_DIR or ~/.pi/agent, or
// a project's .pi), outside the extensions/ directory pi discovers by
// itself, so that the extension loads once, from the one place
// settings.json names. Beside the files it writes brainsurgeon.json, the
// extension's config (daemonUrl, apiKeyFile), and it creates the daemon's
// API key file unless it exists. With Link it adds the directory to the
// "extensions" of pi's settings.json (the global one, or the project's),
// after keeping the file's bytes in the install record, so that Uninstall
// gives them back byte for byte when nothing else changed them since;
// when something did, Uninstall takes out only its own entry.
//
// Status checks the running system as the OpenClaw plugin's status does:
// the files, the settings, the daemon, that it serves pi's sessions, and
// that it accepts the extension's key.
package piinstall

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
)

// The names of what install writes.
const (
	// DirName is the extension's directory in the pi dir.
	DirName = "brainsurgeon"
	// ConfigName is the extension's config beside pi.js (pi.js reads it).
	ConfigName = "brainsurgeon.json"
	// RecordName is the install record in the pi dir.
	RecordName = "brainsurgeon-install.json"
)

// Env is what the package reads from its surroundings (the environment,
// the home directory, the random source of the key, the files to write
// and the daemon's HTTP client); the zero value uses the process's.
type Env = openclawinstall.Env

// Paths are the files install writes and reads.
type Paths struct {
	// Scope is "global" (pi's agent dir) or "project" (Project's .pi).
	Scope   string `json:"scope"`
	Project string `json:"project,omitempty"`
	// PiDir is pi's agent dir, or the project's .pi dir.
	PiDir string `json:"pi_dir"`
	// Dir is where the extension is written.
	Dir string `json:"extension_dir"`
	// Settings is the settings.json that names Dir.
	Settings string `json:"settings"`
	// Record is the install record.
	Record string `json:"record"`
	// PiSessions is pi's sessions dir (the global one: a project's
	// sessions are kept there too).
	PiSessions string `json:"pi_sessions_dir"`
	// AgentsDir is the agents dir of the daemon the extension calls
	// (OpenClaw's when it exists, else PiSessions), and KeyFile that
	// daemon's key file (<agents dir>/../.brainsurgeon/api.key).
	AgentsDir string `json:"agents_dir"`
	KeyFile   string `json:"key_file"`
}

// ResolvePaths returns the paths of an install into project ("" for pi's
// global agent dir) for the daemon of agentsDir ("" for OpenClaw's default
// agents dir when it exists, else pi's sessions dir).
func ResolvePaths(env Env, project, agentsDir string) (Paths, error) {
	env = withDefaults(env)
	agentDir := strings.TrimSpace(env.Getenv("PI_CODING_AGENT_DIR"))
	if agentDir == "" {
		home, err := env.HomeDir()
		if err != nil || home == "" {
			return Paths{}, errors.Join(errors.New("pi's agent dir: no PI_CODING_AGENT_DIR and no home directory for ~/.pi/agent"), err)
		}
		agentDir = filepath.Join(home, ".pi", "agent")
	}
	agentDir, err := abs(env, agentDir)
	if err != nil {
		return Paths{}, err
	}
	p := Paths{Scope: "global", PiDir: agentDir, PiSessions: filepath.Join(agentDir, "sessions")}
	if project != "" {
		proj, err := abs(env, project)
		if err != nil {
			return Paths{}, err
		}
		if fi, err := os.Stat(proj); err != nil || !fi.IsDir() {
			return Paths{}, fmt.Errorf("--project %s: expected a project directory, found %s", project, describe(fi, err))
		}
		p.Scope, p.Project, p.PiDir = "project", proj, filepath.Join(proj, ".pi")
	}
	p.Dir = filepath.Join(p.PiDir, DirName)
	p.Settings = filepath.Join(p.PiDir, "settings.json")
	p.Record = filepath.Join(p.PiDir, RecordName)
	agents := strings.TrimSpace(agentsDir)
	if agents == "" {
		if d, err := config.DefaultAgentsDirFrom(env.Getenv, env.HomeDir); err == nil && isDir(d) {
			agents = d
		} else {
			agents = p.PiSessions
		}
	}
	if p.AgentsDir, err = abs(env, agents); err != nil {
		return Paths{}, err
	}
	p.KeyFile = filepath.Join(config.StateDir(p.AgentsDir), "api.key")
	return p, nil
}

// withDefaults fills what Env leaves nil.
func withDefaults(env Env) Env {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.HomeDir == nil {
		env.HomeDir = os.UserHomeDir
	}
	return env
}

// abs expands "~/" and makes p absolute.
func abs(env Env, p string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := env.HomeDir()
		if err != nil || home == "" {
			return "", errors.Join(fmt.Errorf("no home directory to expand %s", p), err)
		}
		p = filepath.Join(home, p[1:])
	}
	return filepath.Abs(p)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func describe(fi fs.FileInfo, err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "nothing there"
	case err != nil:
		return err.Error()
	case !fi.IsDir():
		return "a file"
	}
	return "a directory"
}

// Record is what install did, kept in the pi dir for uninstall.
type Record struct {
	Version   string   `json:"version"`
	Dir       string   `json:"extension_dir"`
	Files     []string `json:"files"`
	DaemonURL string   `json:"daemon_url"`
	KeyFile   string   `json:"key_file"`
	// KeyCreated says install created the key file (uninstall removes it
	// then, unless the OpenClaw plugin's install uses it too).
	KeyCreated bool `json:"key_created"`
	// Linked says install added Dir to Settings' "extensions".
	Linked   bool   `json:"linked"`
	Settings string `json:"settings,omitempty"`
	// SettingsBefore holds the settings' bytes before install changed
	// them (SettingsExisted false: there was no file); SettingsAfter the
	// SHA-256 of the bytes install left.
	SettingsExisted bool   `json:"settings_existed,omitempty"`
	SettingsBefore  []byte `json:"settings_before,omitempty"`
	SettingsAfter   string `json:"settings_after_sha256,omitempty"`
}

// ReadRecord reads the install record; ok is false when there is none.
func ReadRecord(path string) (rec Record, ok bool, err error) {
	if ok, err = openclawinstall.ReadRecordFile(path, "brainsurgeon pi install", &rec); !ok || err != nil {
		return Record{}, false, err
	}
	return rec, true, nil
}

func writeRecord(path string, rec Record) error { return openclawinstall.WriteRecordFile(path, rec) }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// extensionsOf returns the "extensions" list of settings.json's bytes
// (nil when it has none), checking that the file is a JSON object whose
// "extensions", when there, is an array of strings.
func extensionsOf(settings []byte) ([]string, bool, error) {
	if len(bytes.TrimSpace(settings)) == 0 {
		return nil, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(settings, &obj); err != nil || obj == nil {
		return nil, false, fmt.Errorf("expected a JSON object, as pi writes it: %v", err)
	}
	raw, ok := obj["extensions"]
	if !ok {
		return nil, false, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, true, fmt.Errorf(`"extensions": expected an array of paths, found %.60s`, raw)
	}
	return list, true, nil
}

// withExtension returns settings with dir added to its "extensions" (the
// member made when missing; a missing or empty file becomes an object of
// that member alone). Bytes outside the member are kept.
func withExtension(settings []byte, dir string) ([]byte, error) {
	list, has, err := extensionsOf(settings)
	if err != nil {
		return nil, err
	}
	value, err := json.Marshal(append(slices.Clone(list), dir))
	if err != nil {
		return nil, err
	}
	switch {
	case len(bytes.TrimSpace(settings)) == 0:
		return []byte("{\n  \"extensions\": " + string(value) + "\n}\n"), nil
	case has:
		sp, err := jsonedit.Replace(settings, "/extensions", value)
		if err != nil {
			return nil, err
		}
		return jsonedit.Apply(settings, sp), nil
	}
	sp, err := jsonedit.Insert(settings, "", "extensions", value)
	if err != nil {
		return nil, err
	}
	return jsonedit.Apply(settings, sp), nil
}

// withoutExtension returns settings with dir taken out of its
// "extensions" (the rest of the file as it is), and whether it was there.
func withoutExtension(settings []byte, dir string) ([]byte, bool, error) {
	list, has, err := extensionsOf(settings)
	if err != nil || !has || !slices.Contains(list, dir) {
		return settings, false, err
	}
	list = slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == dir })
	value, err := json.Marshal(list)
	if err != nil {
		return nil, false, err
	}
	sp, err := jsonedit.Replace(settings, "/extensions", value)
	if err != nil {
		return nil, false, err
	}
	return jsonedit.Apply(settings, sp), true, nil
}

// readFile returns a file's bytes and mode; missing is true when there is
// no file (not an error).
func readFile(path string) (b []byte, mode fs.FileMode, missing bool, err error) {
	b, mode, missing, err = openclawinstall.ReadRegular(path, "")
	if missing {
		mode = 0o644
	}
	return b, mode, missing, err
}

// piConfig is the extension's config file (brainsurgeon.json).
type piConfig struct {
	DaemonURL  string `json:"daemonUrl"`
	APIKeyFile string `json:"apiKeyFile"`
}

// readPiConfig reads the extension's config in dir.
func readPiConfig(dir string) (piConfig, error) {
	var c piConfig
	b, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: expected {\"daemonUrl\", \"apiKeyFile\"}: %w", filepath.Join(dir, ConfigName), err)
	}
	return c, nil
}
