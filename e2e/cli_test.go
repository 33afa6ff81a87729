//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// bsBin and pcBin are the brainsurgeon and purge_control binaries built by TestMain from ./cmd.
var bsBin, pcBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "bs-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := oracle.ModuleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bsBin = filepath.Join(dir, "brainsurgeon")
	pcBin = filepath.Join(dir, "purge_control")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir, "./cmd/brainsurgeon", "./cmd/purge_control")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/brainsurgeon ./cmd/purge_control: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s and %s in %s\n", bsBin, pcBin, time.Since(start).Round(time.Millisecond))
	return m.Run()
}

// cliResult is one run of a CLI.
type cliResult struct {
	bin            string
	args           []string
	stdout, stderr string
	code           int
}

func (r cliResult) String() string {
	return fmt.Sprintf("%s %s: exit %d\nstdout: %s\nstderr: %s", filepath.Base(r.bin), strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// bs runs the brainsurgeon CLI as a user would (a subprocess, bounded to 2 minutes).
func bs(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runBin(t, bsBin, args...)
}

// runBin runs one of the binaries TestMain built (a subprocess, bounded to 2 minutes).
func runBin(t *testing.T, bin string, args ...string) cliResult {
	t.Helper()
	return runBinEnv(t, bin, os.Environ(), args...)
}

// runBinEnv is runBin in the environment env (BRAINSURGEON_LOG emptied).
func runBinEnv(t *testing.T, bin string, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(slices.Clone(env), "BRAINSURGEON_LOG=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cliResult{bin: bin, args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", filepath.Base(bin), args, err)
	}
	return r
}

// pruneReport is one session of `brainsurgeon prune --json`.
type pruneReport struct {
	Session string `json:"session"`
	Status  string `json:"status"`
	Note    string `json:"note"`
	Result  *struct {
		Entries    int   `json:"entries"`
		BytesSaved int64 `json:"bytes_saved"`
	} `json:"result"`
}

// prune runs `brainsurgeon prune --agents-dir D --json` and returns the report of the session named sessionID.
func prune(t *testing.T, agentsDir, sessionID string) (pruneReport, cliResult) {
	t.Helper()
	r := bs(t, "prune", "--agents-dir", agentsDir, "--json")
	if r.code != 0 {
		t.Fatalf("prune failed: %s", r)
	}
	var out struct {
		Sessions []pruneReport `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("prune --json: %v\n%s", err, r)
	}
	for _, rep := range out.Sessions {
		if strings.Contains(rep.Session, sessionID) {
			return rep, r
		}
	}
	t.Fatalf("prune reported no session %s: %s", sessionID, r)
	return pruneReport{}, r
}

// restoreEntry writes entry back with `brainsurgeon restore SESSION ENTRY --agents-dir D --json`, the CLI's one
// shape (cmd/brainsurgeon/restore.go): a usage error (exit 2) fails the test like any other.
func restoreEntry(t *testing.T, agentsDir, session, entry string) cliResult {
	t.Helper()
	r := bs(t, "restore", session, entry, "--agents-dir", agentsDir, "--json")
	if r.code != 0 {
		t.Fatalf("restore: %s", r)
	}
	return r
}

// writeConfig writes .brainsurgeon/config.json beside agentsDir.
func writeConfig(t *testing.T, agentsDir string, cfg map[string]any) {
	t.Helper()
	dir := filepath.Join(filepath.Dir(agentsDir), ".brainsurgeon")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// corpusFile returns the corpus transcript whose name is base.
func corpusFile(t *testing.T, base string) string {
	t.Helper()
	for _, p := range testcorpus.Real(t) {
		if filepath.Base(p) == base {
			return p
		}
	}
	t.Fatalf("corpus transcript %s not found", base)
	return ""
}

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func mtime(t *testing.T, p string) time.Time {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

var placeholderRE = regexp.MustCompile(`\[\[extracted-([^\]]+)\]\]`)

// placeholders returns the entry ids of the placeholders in the file, in order, without repeats.
func placeholders(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	seen := map[string]bool{}
	for _, m := range placeholderRE.FindAllSubmatch(b, -1) {
		if id := string(m[1]); !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
