package extract_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// TestMain stops the pi oracle process after the tests, names the oracle
// tests that were skipped and removes the benchmarks' generated inputs.
func TestMain(m *testing.M) {
	oracle.Main(m)
	for _, p := range benchSrc {
		os.RemoveAll(filepath.Dir(p))
	}
}

// TestSetup says, as a skip, when the shared corpus or the oracle is
// missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared|oracle.NeedOracle) }
