package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// TestDiskUse checks GET /api/disk on an agent whose sessions directory
// holds transcripts, side storage after a pass, and the host's leftovers
// (a lock, reset and deleted archives, a backup, a trajectory trace, an
// import archive directory): each byte is in the part it belongs to, and
// the parts add up to the total.
func TestDiskUse(t *testing.T) {
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "alpha", "sessions")
	if err := os.MkdirAll(filepath.Join(dir, "session-sqlite-import-archive"), 0o700); err != nil {
		t.Fatal(err)
	}
	ids := []string{"7a1b2c3d-0000-4000-8000-000000000001", "7a1b2c3d-0000-4000-8000-000000000002"}
	for i, id := range ids {
		o := syntheticThinking()
		o.Seed = uint64(i + 5)
		writeSynth(t, dir, id, o)
	}
	writeSessionsJSON(t, dir, "alpha", ids)
	leftovers := map[string]string{
		ids[0] + ".jsonl.lock":                               "lock",
		ids[0] + ".jsonl.reset.2026-03-01T10-00-00.000Z":     "reset-archive",
		ids[1] + ".jsonl.deleted.2026-03-02T10-00-00.000Z":   "deleted-archive",
		ids[1] + ".jsonl.bak-4242-1767225600000":             "backup",
		ids[0] + ".trajectory.jsonl":                         "trajectory",
		"session-sqlite-import-archive/" + ids[0] + ".jsonl": "dir:session-sqlite-import-archive",
	}
	for name := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", 100+len(name))), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	set, err := backend.Open(context.Background(), agents, backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var transcripts, side int64
	for _, id := range ids {
		transcripts += size(filepath.Join(dir, id+".jsonl"))
	}
	_ = filepath.Walk(filepath.Join(dir, "extracted"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			side += fi.Size()
		}
		return nil
	})
	if side == 0 {
		t.Fatal("the pass wrote no side storage")
	}
	wantKinds := map[string]int64{}
	for name, kind := range leftovers {
		wantKinds[kind] += size(filepath.Join(dir, name))
	}

	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	var got api.DiskUse
	c.json("GET", "/api/disk", "", 200, &got)
	if len(got.Agents) != 1 || got.Agents[0].Agent != "alpha" {
		t.Fatalf("agents %+v, want alpha alone", got.Agents)
	}
	a := got.Agents[0]
	if a.Transcripts.Bytes != transcripts || a.Transcripts.Files != 2 {
		t.Errorf("transcripts %+v, want 2 files of %d bytes", a.Transcripts, transcripts)
	}
	if a.Side.Bytes != side {
		t.Errorf("side %+v, want %d bytes", a.Side, side)
	}
	var leftBytes int64
	for _, k := range a.Leftovers.Kinds {
		if k.Bytes != wantKinds[k.Kind] {
			t.Errorf("leftover %s: %d bytes, want %d", k.Kind, k.Bytes, wantKinds[k.Kind])
		}
		leftBytes += k.Bytes
		delete(wantKinds, k.Kind)
	}
	if len(wantKinds) > 0 {
		t.Errorf("leftover kinds missing: %v (got %+v)", wantKinds, a.Leftovers.Kinds)
	}
	if leftBytes != a.Leftovers.Bytes {
		t.Errorf("leftover kinds add up to %d, the part says %d", leftBytes, a.Leftovers.Bytes)
	}
	if a.Other.Bytes != size(filepath.Join(dir, "sessions.json")) {
		t.Errorf("other %+v, want sessions.json alone", a.Other)
	}
	if a.Total != a.Transcripts.Bytes+a.Side.Bytes+a.Leftovers.Bytes+a.Other.Bytes || got.Total != a.Total {
		t.Errorf("totals %d / %d do not add up: %+v", a.Total, got.Total, a)
	}
}
