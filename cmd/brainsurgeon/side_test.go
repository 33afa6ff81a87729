package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/sidemigrate"
)

// TestSideCommands: side status and side migrate, from the local pack
// store to an S3 server and back, as a user runs them; verify and a
// pristine restore work through the new store.
func TestSideCommands(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	agents, path := demoCopy(t)
	saveConfig(t, agents, noIdle)
	orig := readFile(t, path)
	extractAll(t, path, 1)

	code, out, errs := run(t, "side", "status", "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var st sideStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Store != "local" || st.Migration != nil {
		t.Fatalf("status before: %+v %v\n%s", st, err, out)
	}
	target := srv.URL("cli")
	code, out, errs = run(t, "side", "migrate", "--to", target, "--agents-dir", agents, "--json")
	wantCode(t, code, 0, out, errs)
	var rep sidemigrate.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Phase != "switched" || rep.PacksCopied == 0 {
		t.Fatalf("migrate: %+v %v\n%s", rep, err, out)
	}
	for _, key := range []string{`"packs_copied"`, `"bytes_copied"`, `"source_kept"`, `"converted_files"`} {
		if !strings.Contains(out, key) {
			t.Errorf("migrate --json lacks %s:\n%s", key, out)
		}
	}
	code, out, errs = run(t, "side", "status", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "Values are in   s3://bs-test/cli?") || !strings.Contains(out, "Config names    "+target) {
		t.Fatalf("status after:\n%s", out)
	}
	code, out, errs = run(t, "verify", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	code, out, errs = run(t, "side", "migrate", "--to", "local", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if !strings.Contains(out, "Moved the values of") || !strings.Contains(out, "The old copy stays in "+rep.To) {
		t.Fatalf("migrate back:\n%s", out)
	}
	code, out, errs = run(t, "restore", "--all", "--pristine", "main:main", "--agents-dir", agents)
	wantCode(t, code, 0, out, errs)
	if hash(readFile(t, path)) != hash(orig) {
		t.Fatal("the transcript is not byte-identical after S3 and back")
	}
	if c, err := config.Load(t.Context(), agents, nil); err != nil || c.SideStore != "local" {
		t.Fatalf("config after: %q %v", c.SideStore, err)
	}

	// Bad input: a usage error (2) naming the problem; nothing changes.
	for _, tt := range []struct {
		args []string
		code int
		say  string
	}{
		{[]string{"side", "migrate"}, 2, "side migrate needs --to"},
		{[]string{"side", "migrate", "--to", "gs://x"}, 2, "expected the scheme s3://"},
		{[]string{"side", "migrate", "--to", "s3://bucket?secret=abc"}, 2, "credentials never go in the config"},
		{[]string{"side", "nope"}, 2, `unknown side subcommand "nope"`},
		{[]string{"side", "migrate", "--to", "s3://no-such-bucket/p?endpoint=" + srv.Endpoint + "&host=h"}, 1, `the bucket "no-such-bucket" does not exist`},
	} {
		code, out, errs := run(t, append(tt.args, "--agents-dir", agents)...)
		if code != tt.code || !strings.Contains(out+errs, tt.say) || strings.Contains(out+errs, "abc") {
			t.Errorf("%v: exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", tt.args, code, tt.code, out, errs, tt.say)
		}
	}
}
