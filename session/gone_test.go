package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/session"
)

// TestGoneSessionsLayouts checks which side directories count as gone in
// both layouts: only those that no transcript or other file of their
// directory names (see Store.GoneSessions).
func TestGoneSessionsLayouts(t *testing.T) {
	header := `{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}` + "\n"
	tests := []struct {
		name  string
		dir   string   // transcript dir, relative to the root
		files []string // files in it
		sides []string // side dirs under its extracted/
		gone  []string // the ids that must be gone
		agent string
		label string
	}{
		{
			name:  "openclaw",
			dir:   "main/sessions",
			files: []string{"live.jsonl", "t-topic-2.jsonl", "arch.jsonl.reset.2026-11-01T00-00-00.000Z", "del.jsonl.deleted.1", "bak.jsonl.bak-1-2", "cp.checkpoint.0f.jsonl", "tr.trajectory.jsonl"},
			sides: []string{"live", "t", "arch", "del", "bak", "cp", "tr", "never-had-one"},
			gone:  []string{"arch", "del", "never-had-one"},
			agent: "main",
		},
		{
			name:  "pi",
			dir:   "--home-u-proj--",
			files: []string{"2026-11-01T00-00-00-000Z_u1.jsonl", "2026-11-02T00-00-00-000Z_u3.jsonl.lock"},
			sides: []string{"u1", "u2", "u3"},
			gone:  []string{"u2"},
			label: "--home-u-proj--",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, filepath.FromSlash(tc.dir))
			for _, s := range tc.sides {
				if err := os.MkdirAll(filepath.Join(dir, "extracted", s), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(header), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			refs, err := session.NewStore(root).GoneSessions(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range refs {
				ids = append(ids, r.ID)
				if r.Agent != tc.agent || r.Label != tc.label {
					t.Errorf("gone %s: agent %q label %q, want %q %q", r.ID, r.Agent, r.Label, tc.agent, tc.label)
				}
				side, err := session.SideDir(r)
				if err != nil || side != filepath.Join(dir, "extracted", r.ID) {
					t.Errorf("gone %s: side dir %q (%v), want %q", r.ID, side, err, filepath.Join(dir, "extracted", r.ID))
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, tc.gone) {
				t.Errorf("gone %v, want %v", ids, tc.gone)
			}
		})
	}
}
