package main

import (
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/clitest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run brainsurgeon in-process: testscript puts
// a "brainsurgeon" on PATH that is this test binary calling main.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"brainsurgeon": main})
}

// TestScripts runs testdata/script/*.txtar: each subcommand's success
// path and --help, bad input, exit statuses and the JSON shape of every
// --json output, on a copy of testdata/demo/agents.
func TestScripts(t *testing.T) {
	testscript.Run(t, clitest.Params("testdata/script", "../../testdata/demo/agents", nil))
}
