// Package testcorpus gives tests the real transcripts of the shared corpus
// (../shared/corpus/openclaw beside the module) and copies of them in fresh
// agents dirs. The corpus is read in place and never copied into the
// repository; a missing corpus fails the test.
package testcorpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/oracle"
)

// Transcripts returns every transcript file (live and archived) of the
// corpus, sorted.
func Transcripts(tb testing.TB) []string {
	tb.Helper()
	shared, err := oracle.SharedDir()
	if err != nil {
		tb.Fatalf("shared dir: %v", err)
	}
	root := filepath.Join(shared, "corpus", "openclaw")
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(d.Name(), ".jsonl") && !strings.HasSuffix(d.Name(), ".lock") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("walk corpus %s: %v", root, err)
	}
	if len(files) < 18 {
		tb.Fatalf("corpus %s: found %d transcripts, want at least 18", root, len(files))
	}
	sort.Strings(files)
	return files
}

// Name returns a short name of a corpus file for subtest names.
func Name(p string) string {
	if i := strings.Index(p, "corpus/openclaw/"); i >= 0 {
		return p[i+len("corpus/openclaw/"):]
	}
	return filepath.Base(p)
}

// Copy copies src into a fresh agents dir as main/sessions/<id>.jsonl and
// returns the agents dir and the copy's path.
func Copy(tb testing.TB, src, id string) (agentsDir, path string) {
	tb.Helper()
	agentsDir = filepath.Join(tb.TempDir(), "agents")
	dir := filepath.Join(agentsDir, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	path = filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return agentsDir, path
}

// StoreFile is where an OpenClaw ≥ 2026.8 agent keeps its SQLite store,
// relative to the agent's dir (session/sqlite.StoreFile; not imported
// here so that session/sqlite's own tests may use this package).
const StoreFile = "agent/openclaw-agent.sqlite"

// CopyStore copies the main agent's SQLite store of one corpus install
// (openclawlaw-cpu__OpenClawLog) into a fresh agents dir and returns it.
// The corpus is read, never written.
func CopyStore(tb testing.TB) (agentsDir string) {
	tb.Helper()
	shared, err := oracle.SharedDir()
	if err != nil {
		tb.Fatalf("shared dir: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(shared, "corpus", "openclaw-sqlite", "openclawlaw-cpu__OpenClawLog", "agents", "main", StoreFile))
	if err != nil {
		tb.Fatal(err)
	}
	agentsDir = filepath.Join(tb.TempDir(), "agents")
	db := filepath.Join(agentsDir, "main", StoreFile)
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(db, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return agentsDir
}
