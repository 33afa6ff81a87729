package entry

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// TestMain runs the tests and then names, in one line, the tests that
// skipped checks for want of the shared corpus.
func TestMain(m *testing.M) { oracle.Main(m) }

// TestSetup says, as a skip, when the shared corpus is missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared) }
