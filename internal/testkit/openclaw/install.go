// Package openclaw runs real OpenClaw hosts for end-to-end tests: a loopback mock of Ollama's API
// (../shared/oracle/mock-ollama.mjs) that logs exactly what the model receives and can hold a model call open, a
// real gateway (`openclaw gateway run --bind loopback`) in a private state dir whose config points the ollama
// provider at the mock, agent turns through the real CLI or, for tests with many turns, through one long-lived
// Node process per gateway that runs the release's own gateway client ([Gateway.AgentCall], [Gateway.Call]),
// `sessions.list`, and two SQLite-era oracles (OpenClaw's own importer, and its SessionManager on a copy of a state
// dir).
//
// It is test support: nothing here is used by the product. Every address is 127.0.0.1; every process is started in
// its own process group, carries a marker in its environment, and is stopped (group SIGTERM, then SIGKILL) within
// bounded time; [Leftovers] finds any that escaped.
//
// Installs (bash .ci/install-openclaw.sh puts them where the defaults look):
//
//	BRAINSURGEON_NODE24      node binary, Node >= 24.16 (default $ORACLE/node24/package/bin/node)
//	BRAINSURGEON_OPENCLAW9   install dir of openclaw@2026.9.6 (default $ORACLE/oc)
//	BRAINSURGEON_OPENCLAW7   install dir of openclaw@2026.7.35 (default $ORACLE/oc7)
//	ORACLE                   default $HOME/.cache/bs-oracle
//	BRAINSURGEON_SHARED      the shared directory (default <module root>/../shared)
//
// An install dir is the directory holding node_modules/openclaw (the package dir itself is accepted too).
package openclaw

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

const (
	// V9 is the SQLite-era release the tests use.
	V9 = "2026.9.6"
	// V7 is the last JSONL-era release.
	V7 = "2026.7.35"
	// NodeVersion is the Node the install script unpacks.
	NodeVersion = "24.21.0"
	// InstallHint is the command that installs Node 24 and both OpenClaw releases (run from the module root).
	InstallHint = "bash .ci/install-openclaw.sh"
)

// Install is one OpenClaw release and the Node that runs it.
type Install struct {
	Version string // "2026.7.35"
	Node    string // node binary
	Package string // the openclaw package dir (holds openclaw.mjs and dist/)
}

// Entry returns the CLI entry point, <Package>/openclaw.mjs.
func (in Install) Entry() string { return filepath.Join(in.Package, "openclaw.mjs") }

// OracleHome returns $ORACLE, else $HOME/.cache/bs-oracle.
func OracleHome() string {
	if d := os.Getenv("ORACLE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.Getenv("HOME")
	}
	return filepath.Join(home, ".cache", "bs-oracle")
}

func missing(what string, err error) error {
	return fmt.Errorf("openclaw: %s: %v; install with `%s`", what, err, InstallHint)
}

// Node24 returns the Node 24 binary: $BRAINSURGEON_NODE24, else $ORACLE/node24/package/bin/node. It checks that it
// runs and is >= 24.16.
func Node24() (string, error) {
	p := os.Getenv("BRAINSURGEON_NODE24")
	if p == "" {
		p = filepath.Join(OracleHome(), "node24", "package", "bin", "node")
	}
	out, err := exec.Command(p, "-p", "process.versions.node").Output()
	if err != nil {
		return "", missing("Node 24 at "+p+" (BRAINSURGEON_NODE24)", err)
	}
	v := strings.TrimSpace(string(out))
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil || major < 24 || (major == 24 && minor < 16) {
		return "", missing("Node at "+p+" is v"+v+", need >= 24.16 (BRAINSURGEON_NODE24)", fmt.Errorf("too old"))
	}
	return p, nil
}

// Locate finds the install of version (V9 or V7).
func Locate(version string) (Install, error) {
	var env, sub string
	switch version {
	case V9:
		env, sub = "BRAINSURGEON_OPENCLAW9", "oc"
	case V7:
		env, sub = "BRAINSURGEON_OPENCLAW7", "oc7"
	default:
		return Install{}, fmt.Errorf("openclaw: unknown release %q (want %s or %s)", version, V9, V7)
	}
	node, err := Node24()
	if err != nil {
		return Install{}, err
	}
	dir := os.Getenv(env)
	if dir == "" {
		dir = filepath.Join(OracleHome(), sub)
	}
	pkg := filepath.Join(dir, "node_modules", "openclaw")
	if _, err := os.Stat(filepath.Join(dir, "openclaw.mjs")); err == nil {
		pkg = dir
	}
	b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err != nil {
		return Install{}, missing(fmt.Sprintf("openclaw@%s not found in %s (%s)", version, dir, env), err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil || p.Version != version {
		return Install{}, missing(fmt.Sprintf("%s holds openclaw@%s, want %s (%s)", pkg, p.Version, version, env), err)
	}
	if _, err := os.Stat(filepath.Join(pkg, "openclaw.mjs")); err != nil {
		return Install{}, missing("incomplete install in "+pkg, err)
	}
	return Install{Version: version, Node: node, Package: pkg}, nil
}

// SharedScript returns <shared>/oracle/<name> (shared located like internal/testkit/oracle does).
func SharedScript(name string) (string, error) {
	shared, err := oracle.SharedDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(shared, "oracle", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("openclaw: %w", err)
	}
	return p, nil
}
