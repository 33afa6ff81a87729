package doctor_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// oracleTests are the tests that run the hosts' code on fixed transcripts.
var oracleTests = []string{"TestFix", "TestCorpusRoundTrip"}

// TestMain starts the node processes the oracle tests share (pi's
// SessionManager, and OpenClaw's repair of each installed release) once,
// all at the same time, before the tests run, so that their start (about
// two seconds for pi) is paid once per package and by no single test;
// they stop when the tests are done.
func TestMain(m *testing.M) {
	flag.Parse()
	if wanted() {
		warmUp()
	}
	code := oracle.Run(m)
	closeOpenClawRepairs()
	os.Exit(code)
}

// wanted reports whether -run selects an oracle test.
func wanted() bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}
	top, _, _ := strings.Cut(f.Value.String(), "/")
	re, err := regexp.Compile(top)
	if err != nil {
		return false
	}
	for _, n := range oracleTests {
		if re.MatchString(n) {
			return true
		}
	}
	return false
}

// warmUp starts the oracle processes; what fails here is reported by the
// tests that use them.
func warmUp() {
	var wg sync.WaitGroup
	if oracle.Available() == nil {
		wg.Go(func() {
			dir, err := os.MkdirTemp("", "doctor-oracle-")
			if err != nil {
				return
			}
			defer os.RemoveAll(dir)
			f := filepath.Join(dir, "s.jsonl")
			if os.WriteFile(f, []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`+"\n"), 0o600) == nil {
				_, _ = oracle.Summary(context.Background(), f)
			}
		})
	}
	for _, v := range []string{openclaw.V7, openclaw.V9} {
		wg.Go(func() { _, _ = openClawRepair(v).check([][]json.RawMessage{}) })
	}
	wg.Wait()
}
