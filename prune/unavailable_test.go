package prune_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidefault"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// TestSideStoreUnavailable takes the side store down while a pass is on
// its second session of four: the first stays written, the second fails,
// the pass stops (one failed call in all: a store that is down is not
// asked again for every session), the last two are not attempted, the
// transcripts of the last three are untouched, Run returns an error
// wrapping ErrUnavailable with its report, and the next pass, with the
// store back, extracts the three.
func TestSideStoreUnavailable(t *testing.T) {
	for _, tt := range []struct {
		name string
		ops  []sidefault.Op // nil: every operation
	}{
		{"every operation", nil},
		{"put", []sidefault.Op{sidefault.Put}},
		{"sync", []sidefault.Op{sidefault.Sync}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			agents := filepath.Join(t.TempDir(), "agents")
			dir := filepath.Join(agents, "main", "sessions")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			ids := []string{"un-0001", "un-0002", "un-0003", "un-0004"}
			for _, id := range ids {
				if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(turns(id, 4)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default()
			cfg.Enabled, cfg.IdleSeconds, cfg.MinValueLength, cfg.KeepRecent = true, 0, 500, 1
			cfg.MinSavingTokens, cfg.AgeThresholdHours = 0, 0
			set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
			if err != nil {
				t.Fatal(err)
			}
			var refs []bs.SessionRef
			for _, id := range ids {
				ref, err := set.Store.Resolve(ctx, "main/"+id)
				if err != nil {
					t.Fatal(err)
				}
				refs = append(refs, ref)
			}
			side := sidefault.New(set.Side)
			pass := prune.New(set.Store, side, set.StateDir, cfg, nil)
			pass.Progress = func(p prune.Progress) {
				if p.Done == 1 && p.Total == len(refs) {
					side.Down(tt.ops...)
				}
			}
			rep, err := pass.Run(ctx, refs)
			if !errors.Is(err, bs.ErrUnavailable) || errors.Is(err, bs.ErrNotFound) || rep == nil {
				t.Fatalf("Run = %+v, %v; want the report and an error wrapping ErrUnavailable", rep, err)
			}
			var se *prune.StoppedError
			if !errors.As(err, &se) || se.Session != "main/un-0002" || se.NotAttempted != 2 || !errors.Is(se.Err, bs.ErrUnavailable) {
				t.Errorf("error %#v: want a *prune.StoppedError at main/un-0002 with 2 sessions not attempted", err)
			}
			if !strings.Contains(err.Error(), "main/un-0002") || !strings.Contains(err.Error(), "2 sessions not attempted") || !strings.Contains(err.Error(), sidefault.Cause) {
				t.Errorf("error %q: want the session, the count not attempted and the cause", err)
			}
			want := []string{prune.StatusExtracted, prune.StatusError, prune.StatusNotAttempted, prune.StatusNotAttempted}
			for i, s := range rep.Sessions {
				if s.Status != want[i] {
					t.Errorf("session %s: %s (%s), want %s", s.Session, s.Status, s.Note, want[i])
				}
				if s.Status == prune.StatusNotAttempted && (s.Reason != "side store unavailable" || s.Result != nil) {
					t.Errorf("session %s: reason %q, result %+v; want %q and no result", s.Session, s.Reason, s.Result, "side store unavailable")
				}
			}
			if len(rep.Sessions) != 4 || rep.Written != 1 || rep.Failed != 1 || rep.NotAttempted != 2 || !strings.Contains(rep.Unavailable, sidefault.Cause) {
				t.Errorf("report: %d sessions, written %d, failed %d, not attempted %d, unavailable %q", len(rep.Sessions), rep.Written, rep.Failed, rep.NotAttempted, rep.Unavailable)
			}
			failed := 0
			for _, op := range sidefault.All {
				failed += side.Failed(op)
			}
			if failed != 1 {
				t.Errorf("%d calls failed on the store that is down, want 1 (the pass stops)", failed)
			}
			b, _ := json.Marshal(rep)
			for _, w := range []string{`"status":"not_attempted"`, `"not_attempted":2`, `"unavailable":"`, `"reason":"side store unavailable"`} {
				if !bytes.Contains(b, []byte(w)) {
					t.Errorf("JSON report lacks %s: %s", w, b)
				}
			}
			for _, id := range ids[1:] {
				if b, _ := os.ReadFile(filepath.Join(dir, id+".jsonl")); string(b) != turns(id, 4) {
					t.Errorf("%s was changed", id)
				}
			}

			side.Up()
			pass.Progress = nil
			rep, err = pass.Run(ctx, refs)
			if err != nil {
				t.Fatal(err)
			}
			want = []string{prune.StatusUnchanged, prune.StatusExtracted, prune.StatusExtracted, prune.StatusExtracted}
			for i, s := range rep.Sessions {
				if s.Status != want[i] {
					t.Errorf("next pass: session %s: %s (%s), want %s", s.Session, s.Status, s.Note, want[i])
				}
			}
			if rep.NotAttempted != 0 || rep.Unavailable != "" {
				t.Errorf("next pass: not attempted %d, unavailable %q", rep.NotAttempted, rep.Unavailable)
			}
		})
	}
}
