package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// TestPiSessionsServed serves a pi sessions dir beside the agents dir: the
// health answer names it, its session is listed under its project as the
// agent, a pass extracts from it and its value is served exactly.
func TestPiSessionsServed(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	agents := filepath.Join(root, "openclaw", "agents")
	alpha := filepath.Join(agents, "alpha", "sessions")
	if err := os.MkdirAll(alpha, 0o700); err != nil {
		t.Fatal(err)
	}
	writeSynth(t, alpha, "00000000-0000-4000-8000-000000000001", synth.Options{Size: 60 << 10, Seed: 1, MinResult: 1000, MaxResult: 4000})
	writeSessionsJSON(t, alpha, "alpha", []string{"00000000-0000-4000-8000-000000000001"})
	pi := filepath.Join(root, "pi", "agent", "sessions")
	const project, piID = "--home-me-app--", "019ad000-0000-7000-8000-0000000000b2"
	dir := filepath.Join(pi, project)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeSynth(t, dir, "2026-11-29T07-00-00-000Z_"+piID, synth.Options{Size: 60 << 10, Seed: 2, MinResult: 1000, MaxResult: 4000})
	set, err := backend.Open(ctx, agents, backend.Options{PiSessionsDir: pi})
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(ctx, refs); err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	var health struct {
		PiSessionsDir string   `json:"pi_sessions_dir"`
		Backends      []string `json:"backends"`
	}
	c.json("GET", "/api/health", "", 200, &health)
	if health.PiSessionsDir != pi || fmt.Sprint(health.Backends) != "[jsonl jsonl (pi)]" {
		t.Errorf("health: pi_sessions_dir %q, backends %v", health.PiSessionsDir, health.Backends)
	}
	var list struct {
		Sessions []api.SessionInfo `json:"sessions"`
	}
	c.json("GET", "/api/sessions", "", 200, &list)
	found := false
	for _, s := range list.Sessions {
		found = found || (s.Agent == project && s.SessionID == piID)
	}
	if !found || len(list.Sessions) != 2 {
		t.Fatalf("sessions %+v: want alpha's and the pi session under %s", list.Sessions, project)
	}
	e := firstExtracted(t, c, project, piID)
	var x extractedAnswer
	c.json("GET", "/api/sessions/"+project+"/"+piID+"/entries/"+e.ID+"/extracted", "", 200, &x)
	if len(x.Values) == 0 {
		t.Fatalf("no value served for the pi session's entry %s", e.ID)
	}
}
