package doctor_test

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

func TestMain(m *testing.M) { oracle.Main(m) }
