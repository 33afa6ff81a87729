package oracle

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// skips records, per test binary and by top-level test name, the tests that skipped checks because the pi oracle
// or the shared corpus is missing, and the tests that ran on the self-made corpus only.
var skips struct {
	sync.Mutex
	oracle    []string // skipped their oracle checks (or all of them)
	oracleErr error    // why the oracle was unavailable
	shared    []string // skipped: they need files of the real corpus
	reduced   []string // ran on the self-made corpus only
	sharedErr error    // why the shared directory was unavailable
}

func addName(list *[]string, tb testing.TB) {
	name, _, _ := strings.Cut(tb.Name(), "/")
	if !slices.Contains(*list, name) {
		*list = append(*list, name)
	}
}

func recordSkip(tb testing.TB, err error) {
	skips.Lock()
	defer skips.Unlock()
	addName(&skips.oracle, tb)
	skips.oracleErr = err
}

func recordShared(tb testing.TB, err error, skipped bool) {
	skips.Lock()
	defer skips.Unlock()
	if skipped {
		addName(&skips.shared, tb)
	} else {
		addName(&skips.reduced, tb)
	}
	skips.sharedErr = err
}

// Optional reports whether the oracle can run, for a test that uses it for some of its checks only. When the
// oracle is missing it fails tb if the environment requires the oracle (see [Require]); otherwise it records that
// tb skipped its oracle checks (see [Main]) and returns false.
func Optional(tb testing.TB) bool {
	tb.Helper()
	err := Available()
	if err == nil {
		return true
	}
	if Required() {
		tb.Fatalf("pi oracle required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q) but unavailable: %v",
			os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), err)
		return false
	}
	recordSkip(tb, err)
	return false
}

// Shared returns the shared directory for a test that needs files of the real corpus. When the directory is
// missing it fails tb if the environment requires everything (see [Required]: CI must never silently skip);
// otherwise it records the skip for [Main]'s closing line and skips tb.
func Shared(tb testing.TB) string {
	tb.Helper()
	dir, err := SharedDir()
	if err == nil {
		return dir
	}
	if Required() {
		tb.Fatalf("shared corpus required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q) but missing: %v",
			os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), err)
		return ""
	}
	recordShared(tb, err, true)
	tb.Skipf("needs the real corpus of the shared directory, which is missing (set BRAINSURGEON_SHARED; "+
		"BRAINSURGEON_REQUIRE_ORACLE=1 makes this fail): %v", err)
	return ""
}

// SharedOptional returns the shared directory and true, for a test that runs on the self-made corpus and adds the
// real one when it is there. When the directory is missing it fails tb if the environment requires everything
// (see [Required]); otherwise it records that tb ran on the self-made corpus only (see [Main]) and returns "" and
// false.
func SharedOptional(tb testing.TB) (string, bool) {
	tb.Helper()
	dir, err := SharedDir()
	if err == nil {
		return dir, true
	}
	if Required() {
		tb.Fatalf("shared corpus required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q) but missing: %v",
			os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), err)
		return "", false
	}
	recordShared(tb, err, false)
	return "", false
}

// Needs names what a package's tests use beyond the repository, for [Setup].
type Needs int

const (
	// NeedShared: the real corpus of the shared directory.
	NeedShared Needs = 1 << iota
	// NeedOracle: the pi oracle.
	NeedOracle
)

// Setup is the body of the one test every package that uses the shared corpus or the oracle keeps (by
// convention TestSetup), so that `go test -v` and `go test -json` show a `--- SKIP` line for the package when
// something is missing. It passes when everything in needs is there; when something is missing it fails t if
// the environment requires everything (see [Required]), else skips t saying what is missing and how to get it.
func Setup(t *testing.T, needs Needs) {
	t.Helper()
	var missing []string
	if needs&NeedShared != 0 {
		if _, err := SharedDir(); err != nil {
			missing = append(missing, fmt.Sprintf("the shared directory with the real corpus (%v); tests that need real "+
				"files are skipped and the corpus tests run on the self-made corpus only", err))
		}
	}
	if needs&NeedOracle != 0 {
		if err := Available(); err != nil {
			missing = append(missing, fmt.Sprintf("the pi oracle (%v); its checks are skipped", err))
		}
	}
	if len(missing) == 0 {
		return
	}
	if Required() {
		t.Fatalf("required (CI=%q, BRAINSURGEON_REQUIRE_ORACLE=%q) but missing: %s",
			os.Getenv("CI"), os.Getenv("BRAINSURGEON_REQUIRE_ORACLE"), strings.Join(missing, "; "))
	}
	t.Skipf("missing: %s", strings.Join(missing, "; "))
}

// Main runs the tests of m, stops the oracle process and, when tests skipped checks because the oracle or the
// shared corpus is missing, prints one line naming them and saying how to get what is missing. A package whose
// tests use the oracle or the shared corpus calls it from its own TestMain:
//
//	func TestMain(m *testing.M) { oracle.Main(m) }
//
// It returns, and the testing package then exits with the tests' status. [Run] is the same for a TestMain that
// has more to do.
//
// `go test` in package-list mode (`go test ./...`) keeps the output of a test binary to itself unless the package
// fails or -v or -json is given. Without -v, when the test binary's parent is the go command (Linux: the name of
// /proc/<ppid>/exe is go), the line is therefore appended to the go command's standard error, which is the user's
// terminal, pipe or CI log; it goes to standard output otherwise, and when that standard error is a regular file
// opened without O_APPEND (the go command would write over the line). A result that go test replays from its
// cache (ok … (cached)) does not show the line.
func Main(m *testing.M) {
	Run(m)
}

// Run is [Main] for a TestMain that does more after the tests (or hands m to another runner, such as
// testscript.Main): it runs m, stops the oracle process, announces the skips and returns m's exit code.
func Run(m interface{ Run() int }) int {
	code := m.Run()
	_ = Close()
	if line := SkipLine(); line != "" {
		announce(line)
	}
	return code
}

// SkipLine returns the line [Main] prints: which tests of this test binary skipped checks because the shared
// corpus or the oracle is missing, and how to get them, or "" when none did.
func SkipLine() string {
	skips.Lock()
	defer skips.Unlock()
	var parts []string
	if len(skips.shared)+len(skips.reduced) > 0 {
		where := "shared corpus missing"
		if skips.sharedErr != nil {
			where = skips.sharedErr.Error()
			where = strings.TrimPrefix(where, "oracle: ")
		}
		p := fmt.Sprintf("%s: ", where)
		if len(skips.shared) > 0 {
			p += fmt.Sprintf("skipped %s that %s real files (%s)", plural.Count(len(skips.shared), "test", "tests"), plural.Noun(len(skips.shared), "needs", "need"), names(skips.shared))
		}
		if len(skips.reduced) > 0 {
			if len(skips.shared) > 0 {
				p += ", "
			}
			p += fmt.Sprintf("ran %s on the self-made corpus only (%s)", plural.Count(len(skips.reduced), "corpus test", "corpus tests"), names(skips.reduced))
		}
		parts = append(parts, p)
	}
	if len(skips.oracle) > 0 {
		why := "pi oracle unavailable"
		if skips.oracleErr != nil && strings.Contains(skips.oracleErr.Error(), "not installed") {
			why = "pi oracle not installed"
		}
		parts = append(parts, fmt.Sprintf("%s: skipped the oracle checks of %s (%s); install it with `bash .ci/install-oracle.sh`",
			why, plural.Count(len(skips.oracle), "test", "tests"), names(skips.oracle)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s; set BRAINSURGEON_REQUIRE_ORACLE=1 to make these fail", packageName(), strings.Join(parts, "; "))
}

// names lists up to six test names.
func names(list []string) string {
	if len(list) <= 6 {
		return strings.Join(list, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(list[:6], ", "), len(list)-6)
}

// packageName returns the package under test as a path from the module root (go test runs a test binary in its
// package's directory), else the test binary's name.
func packageName() string {
	if root, err := ModuleRoot(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil && !strings.HasPrefix(rel, "..") {
				if rel == "." {
					return "brainsurgeon"
				}
				return filepath.ToSlash(rel)
			}
		}
	}
	return strings.TrimSuffix(strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"), ".test")
}

// announce prints line where the user sees it. `go test` in package-list mode (`go test ./...`) buffers the
// output of a test binary and shows it only when the package fails, or with -v or -json. So without -v, when the
// test binary's parent process is the go command (on Linux: /proc/<ppid>/exe is named go), the line is appended
// to the go command's own standard error, which is the user's terminal, pipe or CI log; otherwise, or when that
// is a regular file opened without O_APPEND (where the go command would write over the line), it goes to
// standard output.
func announce(line string) {
	if !testing.Verbose() {
		if f := goStderr(); f != nil {
			_, err := fmt.Fprintln(f, line)
			_ = f.Close()
			if err == nil {
				return
			}
		}
	}
	_, _ = fmt.Fprintln(Output, line)
}

// Output is where announce writes when the go command's standard error is
// not reachable: the test binary's standard output, which `go test` shows
// with -v, -json or a failure. Tests of the harness may point it elsewhere.
var Output io.Writer = os.Stdout

// goStderr opens the standard error of the go command that runs this test binary, or returns nil.
func goStderr() *os.File {
	if runtime.GOOS != "linux" {
		return nil
	}
	ppid := strconv.Itoa(os.Getppid())
	exe, err := os.Readlink("/proc/" + ppid + "/exe")
	if err != nil || strings.TrimSuffix(filepath.Base(exe), " (deleted)") != "go" {
		return nil
	}
	fd := "/proc/" + ppid + "/fd/2"
	fi, err := os.Stat(fd)
	if err != nil {
		return nil
	}
	if fi.Mode().IsRegular() && !appendMode("/proc/"+ppid+"/fdinfo/2") {
		return nil
	}
	f, err := os.OpenFile(fd, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}

// appendMode reports whether an fdinfo file shows the descriptor opened with O_APPEND.
func appendMode(fdinfo string) bool {
	b, err := os.ReadFile(fdinfo)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_APPEND != 0
		}
	}
	return false
}
