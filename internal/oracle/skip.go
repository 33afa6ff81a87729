package oracle

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// skips records the tests that skipped oracle checks in this test binary, by top-level test name.
var skips struct {
	sync.Mutex
	tests []string
	err   error // why the oracle was unavailable
}

func recordSkip(tb testing.TB, err error) {
	name, _, _ := strings.Cut(tb.Name(), "/")
	skips.Lock()
	defer skips.Unlock()
	if !slices.Contains(skips.tests, name) {
		skips.tests = append(skips.tests, name)
	}
	skips.err = err
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

// Main runs the tests of m, stops the oracle process and, when tests skipped oracle checks because the oracle
// is missing, prints one line naming them and saying how to install the oracle. A package whose tests use the
// oracle calls it from its own TestMain:
//
//	func TestMain(m *testing.M) { oracle.Main(m) }
//
// It returns, and the testing package then exits with the tests' status.
//
// `go test` shows the output of a passing package only with -v, -json or without package arguments, so without
// -v the line goes to the terminal (/dev/tty) when there is one, else to stdout.
func Main(m *testing.M) {
	m.Run()
	_ = Close()
	if line := SkipLine(); line != "" {
		announce(line)
	}
}

// SkipLine returns the line Main prints: which tests of this test binary skipped oracle checks and how to
// install the oracle, or "" when none did.
func SkipLine() string {
	skips.Lock()
	defer skips.Unlock()
	if len(skips.tests) == 0 {
		return ""
	}
	names := skips.tests
	more := ""
	if len(names) > 6 {
		more = fmt.Sprintf(" and %d more", len(names)-6)
		names = names[:6]
	}
	pkg := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe"), ".test")
	why := "pi oracle unavailable"
	if skips.err != nil && strings.Contains(skips.err.Error(), "not installed") {
		why = "pi oracle not installed"
	}
	return fmt.Sprintf("%s: %s: skipped the oracle checks of %d tests (%s%s); install it with `bash .ci/install-oracle.sh`, "+
		"and set BRAINSURGEON_REQUIRE_ORACLE=1 to make a missing oracle fail", pkg, why, len(skips.tests), strings.Join(names, ", "), more)
}

func announce(line string) {
	if !testing.Verbose() {
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			_, werr := fmt.Fprintln(tty, line)
			_ = tty.Close()
			if werr == nil {
				return
			}
		}
	}
	fmt.Println(line)
}
