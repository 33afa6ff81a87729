package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/clitest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the scripts run brainsurgeon in-process: testscript puts
// a "brainsurgeon" on PATH that is this test binary calling main. The
// tests themselves run through oracle.Run, which says which of them
// skipped checks for want of the shared corpus.
func TestMain(m *testing.M) {
	testscript.Main(announcingM{m}, map[string]func(){"brainsurgeon": main})
}

// announcingM runs the tests through oracle.Run.
type announcingM struct{ m *testing.M }

func (a announcingM) Run() int { return oracle.Run(a.m) }

// TestSetup says, as a skip, when the shared corpus is missing.
func TestSetup(t *testing.T) { oracle.Setup(t, oracle.NeedShared) }

// TestScripts runs testdata/script/*.txtar: each subcommand's success
// path and --help, bad input, exit statuses and the JSON shape of every
// --json output, on a copy of testdata/demo/agents.
func TestScripts(t *testing.T) {
	testscript.Run(t, clitest.Params("testdata/script", "../../testdata/demo/agents", map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"freeport":    freeport,
		"httpwait":    httpwait,
		"prunecounts": prunecounts,
	}))
}

// freeport VAR sets VAR to a free TCP port on 127.0.0.1.
func freeport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ts.Check(ln.Close())
	ts.Setenv(args[0], strconv.Itoa(port))
}

// httpwait URL SUBSTRING polls URL (for up to 30 s) until a GET answers
// 200 with a body containing SUBSTRING.
func httpwait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: httpwait URL SUBSTRING")
	}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		resp, err := http.Get(args[0])
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), args[1]) {
				return
			}
			last = resp.Status + " " + string(body)
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("%s did not answer %q within 30 s; last: %s", args[0], args[1], last)
}

// prunecounts DRY REAL checks that two prune --json reports agree: the
// same sessions with, for each, the same entries, values and bytes saved
// (what the dry run would write and what the real run wrote) and the same
// bytes before. With !, they differ.
func prunecounts(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: prunecounts DRY.json REAL.json")
	}
	type report struct {
		Sessions []struct {
			Session string `json:"session"`
			Status  string `json:"status"`
			Result  struct {
				Entries     int   `json:"entries"`
				Values      int   `json:"values"`
				BytesBefore int64 `json:"bytes_before"`
				BytesSaved  int64 `json:"bytes_saved"`
			} `json:"result"`
		} `json:"sessions"`
	}
	var reps [2]report
	for i, f := range args {
		if err := json.Unmarshal([]byte(ts.ReadFile(f)), &reps[i]); err != nil {
			ts.Fatalf("%s: %v", f, err)
		}
	}
	var diffs []string
	d, r := reps[0].Sessions, reps[1].Sessions
	if len(d) != len(r) {
		diffs = append(diffs, fmt.Sprintf("%d sessions in the dry run, %d in the real run", len(d), len(r)))
	}
	for i := range min(len(d), len(r)) {
		if d[i].Session != r[i].Session || d[i].Result != r[i].Result {
			diffs = append(diffs, fmt.Sprintf("%s %s %+v; real run %s %s %+v", d[i].Session, d[i].Status, d[i].Result, r[i].Session, r[i].Status, r[i].Result))
		}
	}
	switch {
	case len(diffs) > 0 && !neg:
		ts.Fatalf("the dry run and the real run disagree:\n  %s", strings.Join(diffs, "\n  "))
	case len(diffs) == 0 && neg:
		ts.Fatalf("the dry run and the real run agree")
	}
	ts.Logf("%d sessions: the dry run's counts are the real run's", len(d))
}
