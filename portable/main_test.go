package portable_test

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// TestMain stops the pi oracle process after the tests and names the
// oracle tests that were skipped.
func TestMain(m *testing.M) { oracle.Main(m) }

// TestSetup says, as a skip, when the shared corpus or the oracle is
// missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared|oracle.NeedOracle) }
