package main

import (
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/clitest"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run purge_control in-process: testscript puts
// a "purge_control" on PATH that is this test binary calling main.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"purge_control": main})
}

// TestScripts runs testdata/script/*.txtar on a copy of
// testdata/demo/agents. The command "prune" runs one extraction pass over
// $AGENTS with the library (brainsurgeon prune is another binary).
func TestScripts(t *testing.T) {
	testscript.Run(t, clitest.Params("testdata/script", "../../testdata/demo/agents",
		map[string]func(ts *testscript.TestScript, neg bool, args []string){"prune": runPrune}))
}

func runPrune(ts *testscript.TestScript, neg bool, args []string) {
	ctx := context.Background()
	agents := ts.Getenv("AGENTS")
	cfg, err := config.Load(ctx, agents, nil)
	ts.Check(err)
	set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
	ts.Check(err)
	rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
	ts.Check(err)
	if (rep.Failed > 0) != neg {
		ts.Fatalf("prune: %d sessions failed", rep.Failed)
	}
}
