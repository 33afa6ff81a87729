// Package oracle runs the real pi SessionManager (the JSONL-era OpenClaw host) on transcript files, so tests can
// prove that the host still reads what BrainSurgeon writes. It also decides, for every test package, what happens
// when the oracle or the shared corpus is missing.
//
// One Node process per test binary serves every request (server.mjs, embedded; it answers like
// ../shared/oracle/pi-session-oracle.mjs, which is kept as the reference): loading the pi package takes about a
// second, a request on a corpus file a few milliseconds. The process is started by the first request, serves
// requests one at a time, is started again if it dies, and exits with the test binary (or at [Close]).
//
// Requirements: Node >= 20.6 and the npm package @mariozechner/pi-coding-agent@0.70.6. `bash .ci/install-oracle.sh`
// installs it into $HOME/.cache/bs-oracle/pi/node_modules.
//
// The server always works on a private temp copy of each file, so the inputs are never modified.
//
// The shared directory (../shared beside the repository, or $BRAINSURGEON_SHARED) holds the real corpus of
// pi/OpenClaw transcripts and SQLite stores, and the reference oracle script. It is not part of the public
// repository, so a clone runs without it: the corpus tests run on the self-made corpus (internal/testkit/testcorpus), and
// tests that need real files skip.
//
// Missing pieces skip on a developer machine and fail when CI is set (and not "false" or "0") or
// BRAINSURGEON_REQUIRE_ORACLE=1 (see [Required]): CI never skips silently.
//   - [Require] skips a test that needs the oracle; [Optional] lets a test that uses it for some checks go on
//     without them.
//   - [Shared] skips a test that needs files of the real corpus; [SharedOptional] lets a test go on with the
//     self-made corpus alone.
//   - [Setup] is the body of each package's TestSetup: a test that always runs and skips, saying what is missing,
//     so `go test -v` and `go test -json` show a `--- SKIP` line per package.
//   - [Main] (or [Run]) is each package's TestMain: after the tests it stops the oracle process and prints one
//     line naming the tests that skipped something and why. `go test ./...` hides the output of passing test
//     binaries, so the line is appended to the go command's own standard error (see [Main]).
//
// Environment:
//
//	BRAINSURGEON_SHARED          the shared directory with the corpus (default: <module root>/../shared)
//	BRAINSURGEON_REQUIRE_ORACLE  1: a missing oracle or shared corpus fails the tests (as CI does)
//	PI_ORACLE_MODULES            node_modules holding the pi package (default: $ORACLE/pi/node_modules, else
//	                             $HOME/.cache/bs-oracle/pi/node_modules)
//	PI_ORACLE_NODE               the node binary (default: `node` on PATH, else
//	                             $HOME/.cache/bs-oracle/node/package/bin/node)
package oracle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// PiPackage and PiVersion name the oracle: the SessionManager that OpenClaw 2026.4.29 shipped.
	PiPackage = "@mariozechner/pi-coding-agent"
	PiVersion = "0.70.6"

	// InstallHint is the command that installs the oracle (run from the module root).
	InstallHint = "bash .ci/install-oracle.sh   # = mkdir -p ~/.cache/bs-oracle/pi && cd ~/.cache/bs-oracle/pi && " +
		`echo '{"private":true,"type":"module"}' > package.json && ` +
		"npm install --no-audit --no-fund " + PiPackage + "@" + PiVersion

	scriptRel = "oracle/pi-session-oracle.mjs"
)

// Minimum Node version the server needs (import attributes / fs APIs used by pi).
const minNodeMajor, minNodeMinor = 20, 6

// PiMessage describes one LLM-context message as the oracle sees it.
type PiMessage struct {
	I     int    `json:"i"`
	Role  string `json:"role"`
	Bytes int    `json:"bytes"` // byte length of JSON.stringify(message)
	Sha   string `json:"sha"`   // first 16 hex digits of sha256(JSON.stringify(message))
	// Blocks lists content block types; ["string"] for string content, nil when content is neither a string nor
	// an array. A block without a type shows as "".
	Blocks     []string `json:"blocks"`
	ToolCallID string   `json:"toolCallId,omitempty"`
	ToolName   string   `json:"toolName,omitempty"`
}

// PiSummary is the oracle's `summary` of one file.
type PiSummary struct {
	Oracle              string          `json:"oracle"` // "@mariozechner/pi-coding-agent@0.70.6"
	File                string          `json:"file"`   // the path as passed
	HeaderVersion       *int            `json:"headerVersion"`
	SessionID           string          `json:"sessionId"`
	MigratedOnOpen      bool            `json:"migratedOnOpen"` // pi rewrote (its copy of) the file on open
	EntryCount          int             `json:"entryCount"`
	EntryTypes          map[string]int  `json:"entryTypes"`
	LeafID              *string         `json:"leafId"`
	BranchPoints        int             `json:"branchPoints"`
	ThinkingLevel       json.RawMessage `json:"thinkingLevel,omitempty"`
	Model               json.RawMessage `json:"model,omitempty"`
	ContextMessageCount int             `json:"contextMessageCount"`
	ContextBytes        int             `json:"contextBytes"`
	ContextSha          string          `json:"contextSha"`
	// LLMMessageCount is a number, or the error convertToLlm threw ({"error": "..."}); see LLMCount. Raw JSON
	// fields are compacted.
	LLMMessageCount json.RawMessage `json:"llmMessageCount"`
	Messages        []PiMessage     `json:"messages"`
}

// LLMCount returns llmMessageCount when it is a number.
func (s *PiSummary) LLMCount() (int, bool) {
	n, err := strconv.Atoi(string(bytes.TrimSpace(s.LLMMessageCount)))
	return n, err == nil
}

// Leaf returns the leaf id, "" when null.
func (s *PiSummary) Leaf() string {
	if s.LeafID == nil {
		return ""
	}
	return *s.LeafID
}

// PiDiff is one context message that differs between before and after; Before or After is nil when that side
// has fewer messages.
type PiDiff struct {
	I      int        `json:"i"`
	Before *PiMessage `json:"before"`
	After  *PiMessage `json:"after"`
}

// PiCompare is the oracle's `compare` of two files.
//
// Caution: pi assigns random entry ids when it migrates a v1/v2 file on open, so for such files LeafID, SameLeaf,
// MissingIDsInAfter and NewIDsInAfter differ even between two opens of the same file; the context messages
// (DifferingMessages, Diffs, ContextBytes) do not carry ids and stay comparable.
type PiCompare struct {
	Oracle              string             `json:"oracle"`
	EntryCount          [2]int             `json:"entryCount"`
	LeafID              [2]*string         `json:"leafId"`
	SameLeaf            bool               `json:"sameLeaf"`
	MissingIDsInAfter   []string           `json:"missingIdsInAfter"`
	NewIDsInAfter       []string           `json:"newIdsInAfter"`
	ThinkingLevel       [2]json.RawMessage `json:"thinkingLevel"`
	Model               [2]json.RawMessage `json:"model"`
	ContextMessageCount [2]int             `json:"contextMessageCount"`
	ContextBytes        [2]int             `json:"contextBytes"`
	DifferingMessages   int                `json:"differingMessages"`
	Diffs               []PiDiff           `json:"diffs"`
}

// PiContext is the oracle's `context` of one file: the full messages pi would send (before convertToLlm). Each
// message is compact JSON, byte for byte JSON.stringify(message) (so len == PiMessage.Bytes).
type PiContext struct {
	Oracle        string            `json:"oracle"`
	LeafID        *string           `json:"leafId"`
	EntryCount    int               `json:"entryCount"`
	ThinkingLevel json.RawMessage   `json:"thinkingLevel,omitempty"`
	Model         json.RawMessage   `json:"model,omitempty"`
	Messages      []json.RawMessage `json:"messages"`
}

// Summary loads each file with pi's SessionManager and returns one summary per file, in order. An error names
// the file pi failed on.
func Summary(ctx context.Context, files ...string) ([]PiSummary, error) {
	if len(files) == 0 {
		return nil, nil
	}
	env, err := resolve()
	if err != nil {
		return nil, err
	}
	if err := statAll(files); err != nil {
		return nil, err
	}
	out := make([]PiSummary, len(files))
	for i, f := range files {
		raw, err := call(ctx, env, "summary", f)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("oracle: decoding summary of %s: %w", f, err)
		}
		s := &out[i]
		compact(&s.ThinkingLevel, &s.Model, &s.LLMMessageCount)
		if s.File != f {
			return nil, fmt.Errorf("oracle: summary %d is for %q, want %q", i, s.File, f)
		}
	}
	return out, nil
}

// Compare loads both files and diffs the LLM context pi builds from each.
func Compare(ctx context.Context, before, after string) (PiCompare, error) {
	var c PiCompare
	if err := runJSON(ctx, &c, "compare", before, after); err != nil {
		return PiCompare{}, err
	}
	compact(&c.ThinkingLevel[0], &c.ThinkingLevel[1], &c.Model[0], &c.Model[1])
	return c, nil
}

// Context returns the full context messages pi builds from file.
func Context(ctx context.Context, file string) (PiContext, error) {
	var c PiContext
	if err := runJSON(ctx, &c, "context", file); err != nil {
		return PiContext{}, err
	}
	compact(&c.ThinkingLevel, &c.Model)
	for i := range c.Messages {
		compact(&c.Messages[i])
	}
	return c, nil
}

// compact strips the script's pretty-printing from raw JSON values, so they compare equal across calls and equal
// JSON.stringify's own output byte for byte.
func compact(raws ...*json.RawMessage) {
	for _, r := range raws {
		if len(*r) == 0 {
			continue
		}
		var b bytes.Buffer
		if json.Compact(&b, *r) == nil {
			*r = b.Bytes()
		}
	}
}

func runJSON(ctx context.Context, v any, mode string, files ...string) error {
	env, err := resolve()
	if err != nil {
		return err
	}
	if err := statAll(files); err != nil {
		return err
	}
	raw, err := call(ctx, env, mode, files...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("oracle: decoding %s of %s: %w", mode, strings.Join(files, " "), err)
	}
	return nil
}

func statAll(files []string) error {
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("oracle: %w", err)
		}
	}
	return nil
}

// Available reports whether the oracle can run: nil when Node >= 20.6 and the pi package are both there, otherwise an error naming everything that is missing and how to install it.
func Available() error {
	_, err := resolve()
	return err
}

// Node returns the node binary and the node_modules dir holding the pi package that the oracle runs with, for a
// test that runs pi itself; the error is [Available]'s.
func Node() (node, modules string, err error) {
	e, err := resolve()
	if err != nil {
		return "", "", err
	}
	return e.node, e.modules, nil
}

// Require skips tb when the oracle is unavailable, or fails it when the environment demands the oracle
// (CI set and not "false"/"0", or BRAINSURGEON_REQUIRE_ORACLE=1): CI must never silently skip oracle tests.
// A skip is recorded for [Main]'s closing line.
func Require(tb testing.TB) {
	tb.Helper()
	err := Available()
	if err == nil {
		return
	}
	if Required() {
		tb.Fatalf("pi oracle required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q) but unavailable: %v",
			os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), err)
		return
	}
	recordSkip(tb, err)
	tb.Skipf("pi oracle unavailable (set BRAINSURGEON_REQUIRE_ORACLE=1 to fail instead): %v", err)
}

// Required reports whether the environment demands the oracle (see Require).
func Required() bool {
	if os.Getenv("BRAINSURGEON_REQUIRE_ORACLE") == "1" {
		return true
	}
	ci := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return ci != "" && ci != "false" && ci != "0"
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("oracle: no go.mod in the working directory or above")
		}
		dir = parent
	}
}

// SharedDir returns $BRAINSURGEON_SHARED, else <module root>/../shared; it must exist.
func SharedDir() (string, error) {
	dir := os.Getenv("BRAINSURGEON_SHARED")
	if dir == "" {
		root, err := ModuleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(filepath.Dir(root), "shared")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("oracle: shared directory %s not found (set BRAINSURGEON_SHARED)", abs)
	}
	return abs, nil
}

// ScriptPath returns <shared>/oracle/pi-session-oracle.mjs, the reference script the embedded server answers
// like. The oracle does not need it to run.
func ScriptPath() (string, error) {
	shared, err := SharedDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(shared, filepath.FromSlash(scriptRel)), nil
}

// oracleHome is $HOME/.cache/bs-oracle, where .ci/install-oracle.sh installs.
func oracleHome() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.Getenv("HOME")
	}
	return filepath.Join(home, ".cache", "bs-oracle")
}

// ModulesDir returns $PI_ORACLE_MODULES, else $ORACLE/pi/node_modules, else $HOME/.cache/bs-oracle/pi/node_modules.
func ModulesDir() string {
	if d := os.Getenv("PI_ORACLE_MODULES"); d != "" {
		return d
	}
	if o := os.Getenv("ORACLE"); o != "" {
		return filepath.Join(o, "pi", "node_modules")
	}
	return filepath.Join(oracleHome(), "pi", "node_modules")
}

// env is a resolved, checked oracle setup.
type env struct {
	node, modules string
}

// resolve finds and checks everything; its error lists every missing piece.
func resolve() (*env, error) {
	var problems []string
	e := &env{}

	node, nerr := findNode()
	if nerr != nil {
		problems = append(problems, nerr.Error())
	}
	e.node = node

	modules, err := filepath.Abs(ModulesDir())
	if err != nil {
		modules = ModulesDir()
	}
	e.modules = modules
	pkgJSON := filepath.Join(modules, filepath.FromSlash(PiPackage), "package.json")
	if b, err := os.ReadFile(pkgJSON); err != nil {
		problems = append(problems, fmt.Sprintf("npm package %s@%s not installed in %s (no %s; set PI_ORACLE_MODULES to its node_modules)",
			PiPackage, PiVersion, modules, pkgJSON))
	} else {
		var p struct{ Version string }
		if err := json.Unmarshal(b, &p); err != nil || p.Version != PiVersion {
			problems = append(problems, fmt.Sprintf("%s has version %q, want %s", pkgJSON, p.Version, PiVersion))
		}
	}

	if len(problems) > 0 {
		return nil, fmt.Errorf("oracle unavailable: %s; install with: %s", strings.Join(problems, "; "), InstallHint)
	}
	return e, nil
}

var nodeVersions sync.Map // node path -> nodeCheck

type nodeCheck struct {
	version string
	err     error
}

// findNode returns $PI_ORACLE_NODE, else the first of `node` on PATH and the install script's fallback
// ($HOME/.cache/bs-oracle/node/package/bin/node) that is >= 20.6.
func findNode() (string, error) {
	var candidates []string
	if n := os.Getenv("PI_ORACLE_NODE"); n != "" {
		candidates = []string{n}
	} else {
		if p, err := exec.LookPath("node"); err == nil {
			candidates = append(candidates, p)
		}
		fallback := filepath.Join(oracleHome(), "node", "package", "bin", "node")
		if _, err := os.Stat(fallback); err == nil {
			candidates = append(candidates, fallback)
		}
	}
	if len(candidates) == 0 {
		return "", fmt.Errorf("node (>= %d.%d) not found on PATH", minNodeMajor, minNodeMinor)
	}
	var errs []string
	for _, c := range candidates {
		if err := checkNode(c); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		return c, nil
	}
	return "", errors.New(strings.Join(errs, "; "))
}

func checkNode(path string) error {
	if v, ok := nodeVersions.Load(path); ok {
		return v.(nodeCheck).err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-p", "process.versions.node").Output()
	var res nodeCheck
	if err != nil {
		res.err = fmt.Errorf("node %s does not run: %v", path, err)
	} else {
		res.version = strings.TrimSpace(string(out))
		var major, minor int
		if _, err := fmt.Sscanf(res.version, "%d.%d", &major, &minor); err != nil {
			res.err = fmt.Errorf("node %s: unreadable version %q", path, res.version)
		} else if major < minNodeMajor || (major == minNodeMajor && minor < minNodeMinor) {
			res.err = fmt.Errorf("node %s is v%s, need >= %d.%d", path, res.version, minNodeMajor, minNodeMinor)
		}
	}
	nodeVersions.Store(path, res)
	return res.err
}
