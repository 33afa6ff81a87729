// Package testcorpus gives tests the transcripts to run on: the self-made corpus, which this package generates
// (see [SelfMadeFiles]) and which every clone has, and the real transcripts of the shared corpus
// (../shared/corpus/openclaw beside the module, or $BRAINSURGEON_SHARED/corpus/openclaw) when the shared directory
// is there. The real corpus is read in place and never copied into the repository.
//
// A test of a property that must hold on every transcript (lossless round trip, pristine undo, crash safety,
// pack and restore, agreement with the oracle) takes [Transcripts]: on a clone without the shared directory it
// runs on the self-made corpus only, and the package's closing line says so (see oracle.Main). A test that needs
// particular real files takes [Real], [RealFile] or [CopyStore], which skip it when the shared directory is
// missing. Both fail instead of skipping when CI is set or BRAINSURGEON_REQUIRE_ORACLE=1.
//
// The self-made corpus is generated at test time into a temporary directory rather than committed: the generator
// is its only source (nothing to keep in sync, no check that committed files match), its CRLF endings, malformed
// lines and lone surrogates never pass through git's text handling, and the repository stays small. What is
// committed is only what cannot be generated: the DDL of OpenClaw's store (testdata, table structure, no rows).
package testcorpus

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// selfDir is the directory name of the self-made corpus, which [Name] shows as its prefix.
const selfDir = "selfmade"

// SelfMade writes the self-made corpus into a fresh temporary directory of tb and returns its files, in the
// order of [SelfMadeFiles].
func SelfMade(tb testing.TB) []string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), selfDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, f := range SelfMadeFiles() {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			tb.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// Transcripts returns the self-made corpus followed by every transcript file (live and archived) of the real
// corpus, sorted. Without the shared directory it returns the self-made corpus only and records that tb ran on
// it alone (or fails tb when the environment requires the shared corpus).
func Transcripts(tb testing.TB) []string {
	tb.Helper()
	files := SelfMade(tb)
	if shared, ok := oracle.SharedOptional(tb); ok {
		files = append(files, realTranscripts(tb, shared)...)
	}
	return files
}

// Real returns every transcript file of the real corpus, sorted; tb is skipped when the shared directory is
// missing (failed when the environment requires it).
func Real(tb testing.TB) []string {
	tb.Helper()
	return realTranscripts(tb, oracle.Shared(tb))
}

// RealFile returns the transcript of the real corpus whose path ends with suffix (a file name, or a tail of its
// path such as "badlogic__pi-mono/session.jsonl"); tb is skipped when the shared directory is missing and fails
// when no file or more than one matches.
func RealFile(tb testing.TB, suffix string) string {
	tb.Helper()
	var found []string
	for _, p := range Real(tb) {
		if strings.HasSuffix(filepath.ToSlash(p), "/"+suffix) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("real corpus: %d transcripts end with %q, want one", len(found), suffix)
	}
	return found[0]
}

// RealOrSelfMade returns the real transcript whose path ends with realSuffix (see [RealFile]) when the shared
// directory is there, else the self-made transcript selfName written into a temporary directory of tb (and records
// that tb ran on the self-made corpus only; fails tb when the environment requires the shared corpus). A test
// whose checks hold for any transcript of the right shape names one of each.
func RealOrSelfMade(tb testing.TB, realSuffix, selfName string) string {
	tb.Helper()
	if _, ok := oracle.SharedOptional(tb); ok {
		return RealFile(tb, realSuffix)
	}
	for _, p := range SelfMade(tb) {
		if filepath.Base(p) == selfName {
			return p
		}
	}
	tb.Fatalf("self-made corpus has no %s", selfName)
	return ""
}

func realTranscripts(tb testing.TB, shared string) []string {
	tb.Helper()
	root := filepath.Join(shared, "corpus", "openclaw")
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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

// HasReal reports whether files hold a file of the real corpus (one under corpus/openclaw of the shared
// directory). A test that wants a number of files of some
// kind asks for the real corpus's number when it is there, and the self-made corpus's otherwise.
func HasReal(files []string) bool {
	for _, f := range files {
		if strings.Contains(filepath.ToSlash(f), "/corpus/openclaw/") {
			return true
		}
	}
	return false
}

// IsFlat reports whether p is the self-made transcript in the flat entry shape ({"__id":…,"type":…}, no parent links)
// ({"__id":…,"type":"tool_result","output":…}), which BrainSurgeon reads and pi does not: an oracle comparison
// does not apply to it.
func IsFlat(p string) bool {
	return IsSelfMade(p) && filepath.Base(p) == flatName
}

// IsSelfMade reports whether p is a file of the self-made corpus (as returned by [SelfMade] or [Transcripts]).
func IsSelfMade(p string) bool {
	return filepath.Base(filepath.Dir(p)) == selfDir
}

// Name returns a short name of a corpus file for subtest names: the path under corpus/openclaw for a real file,
// selfmade/<name> for a self-made one.
func Name(p string) string {
	p = filepath.ToSlash(p)
	if i := strings.Index(p, "corpus/openclaw/"); i >= 0 {
		return p[i+len("corpus/openclaw/"):]
	}
	if IsSelfMade(p) {
		return selfDir + "/" + filepath.Base(p)
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

// Store returns a fresh agents dir whose agent "main" has an OpenClaw SQLite store: a copy of a real one
// ([CopyStore]) when the shared directory is there, else the self-made one ([SelfMadeStore]; and records that tb
// ran on the self-made corpus only, or fails tb when the environment requires the shared corpus).
func Store(tb testing.TB) (agentsDir string) {
	tb.Helper()
	if _, ok := oracle.SharedOptional(tb); ok {
		return CopyStore(tb)
	}
	return SelfMadeStore(tb)
}

// StoreFile is where an OpenClaw ≥ 2026.8 agent keeps its SQLite store,
// relative to the agent's dir (session/sqlite.StoreFile; not imported
// here so that session/sqlite's own tests may use this package).
const StoreFile = "agent/openclaw-agent.sqlite"

// CopyStore copies the main agent's SQLite store of one real corpus install
// (openclawlaw-cpu__OpenClawLog) into a fresh agents dir and returns it; tb
// is skipped when the shared directory is missing (failed when the
// environment requires it). The corpus is read, never written.
func CopyStore(tb testing.TB) (agentsDir string) {
	tb.Helper()
	shared := oracle.Shared(tb)
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
