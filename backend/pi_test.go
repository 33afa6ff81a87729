package backend_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// piDir writes a pi sessions dir holding one project with the self-made
// transcript src as session id, and returns the dir and the session's
// path.
func piDir(t *testing.T, src, id string) (dir, path string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "pi", "agent", "sessions")
	project := filepath.Join(dir, "--work-demo--")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(project, "2026-11-29T07-00-00-000Z_"+id+".jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// TestPiSessionsBeside serves a pi sessions dir beside an OpenClaw agents
// dir: both are listed, each session is read and written through its own
// store, an extraction pass over the pi session keeps its values beside
// it and restores them byte for byte, and the OpenClaw session is not
// touched.
func TestPiSessionsBeside(t *testing.T) {
	ctx := context.Background()
	src := testcorpus.RealOrSelfMade(t, crossSource, crossSelfMade)
	agents, ocPath := testcorpus.Copy(t, src, "00000000-0000-4000-8000-0000000000a1")
	const piID = "019ad000-0000-7000-8000-0000000000b2"
	pi, piPath := piDir(t, src, piID)
	cfg := crossConfig()
	opts := backend.FromConfig(cfg, nil)
	opts.PiSessionsDir = pi
	set, err := backend.Open(ctx, agents, opts)
	if err != nil {
		t.Fatal(err)
	}
	if set.PiSessionsDir != pi || len(set.Backends) == 0 || set.Backends[len(set.Backends)-1] != "jsonl (pi)" {
		t.Fatalf("set: pi dir %q, backends %v", set.PiSessionsDir, set.Backends)
	}
	refs, skipped, err := set.Store.Sessions(ctx)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("Sessions: %v, skipped %v", err, skipped)
	}
	var piRef, ocRef bs.SessionRef
	for _, r := range refs {
		switch r.Path {
		case piPath:
			piRef = r
		case ocPath:
			ocRef = r
		}
	}
	if piRef.ID != piID || piRef.Agent != "" || piRef.Label != "--work-demo--" || ocRef.Agent != "main" {
		t.Fatalf("refs %+v: want the pi session (id %s, project label) and the OpenClaw one", refs, piID)
	}
	if r, err := set.Store.Resolve(ctx, piID); err != nil || r.Path != piPath {
		t.Fatalf("Resolve(%s) = %+v, %v", piID, r, err)
	}
	dir, err := set.SideDir(piRef)
	if err != nil || !strings.HasPrefix(dir, filepath.Join(pi, "--work-demo--")) {
		t.Fatalf("SideDir(pi) = %q, %v: want a dir beside the pi transcript", dir, err)
	}
	before, _ := os.ReadFile(piPath)
	ocBefore, _ := os.ReadFile(ocPath)
	rep := pass(t, set, cfg, piRef, false)
	if rep.Result == nil || rep.Result.Values == 0 {
		t.Fatalf("the pass over the pi session extracted nothing: %+v", rep)
	}
	after, _ := os.ReadFile(piPath)
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte("[[extracted-")) {
		t.Fatal("the pi transcript holds no placeholder after the pass")
	}
	if oc, _ := os.ReadFile(ocPath); !bytes.Equal(oc, ocBefore) {
		t.Fatal("a pass over the pi session changed the OpenClaw session")
	}
	r := restore.New(set.Store, set.Side, set.StateDir)
	if _, err := r.RestoreAll(ctx, piRef, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(piPath); !bytes.Equal(got, before) {
		t.Fatal("restoring every value did not give the pi transcript back byte for byte")
	}
}

// TestPiSessionsDirChecked refuses a pi sessions dir that is missing or a
// file, and serves the agents dir once when the pi dir is the agents dir.
func TestPiSessionsDirChecked(t *testing.T) {
	ctx := context.Background()
	src := testcorpus.RealOrSelfMade(t, crossSource, crossSelfMade)
	agents, _ := testcorpus.Copy(t, src, "00000000-0000-4000-8000-0000000000a1")
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		want error
	}{
		{filepath.Join(t.TempDir(), "missing"), bs.ErrNotFound},
		{file, bs.ErrInvalid},
	} {
		_, err := backend.Open(ctx, agents, backend.Options{PiSessionsDir: tc.dir})
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "pi sessions directory "+tc.dir) {
			t.Errorf("Open with pi dir %s: %v, want an error naming it and wrapping %v", tc.dir, err, tc.want)
		}
	}
	set, err := backend.Open(ctx, agents, backend.Options{PiSessionsDir: agents})
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil || len(refs) != 1 || set.PiSessionsDir != "" {
		t.Fatalf("the agents dir as its own pi dir: %d sessions, pi dir %q, %v; want it served once", len(refs), set.PiSessionsDir, err)
	}
}
