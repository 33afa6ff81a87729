package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// TestStat checks the stat-level change check the daemon uses: a stat is
// stable while nothing changes, moves for the one session the host
// touched, and a session without rows is not found.
func TestStat(t *testing.T) {
	ctx := context.Background()
	var cs corpusStore
	for _, c := range corpusStores(t) {
		if strings.HasPrefix(c.name, "sirdeuce") || c.repo == selfMadeRepo {
			cs = c
		}
	}
	state, path := copyStore(t, cs.path, cs.agent)
	st := sqlite.NewStore(state, sqlite.Options{})
	refs, _, err := st.Sessions(ctx)
	if err != nil || len(refs) < 2 {
		t.Fatalf("Sessions = %d, %v", len(refs), err)
	}
	before := map[string]bs.SessionStat{}
	for _, r := range refs {
		s, err := st.Stat(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if s.Version.IsZero() {
			t.Errorf("%s: zero version", r)
		}
		before[r.ID] = s
	}
	db := rawDB(t, path)
	mustExec(t, db, `UPDATE session_windows SET transcript_updated_at = coalesce(transcript_updated_at, 0) + 1000 WHERE session_id = ?`, refs[0].ID)
	for i, r := range refs {
		s, err := st.Stat(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if changed := !s.Version.Equal(before[r.ID].Version); changed != (i == 0) {
			t.Errorf("%s: version changed = %v, want %v", r, changed, i == 0)
		}
	}
	if s, _ := st.Stat(ctx, refs[0]); !s.ModTime.After(before[refs[0].ID].ModTime) {
		t.Errorf("mod time %v did not move past %v", s.ModTime, before[refs[0].ID].ModTime)
	}
	gone := refs[0]
	gone.ID = "00000000-no-such-session"
	if _, err := st.Stat(ctx, gone); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("Stat of a missing session = %v, want ErrNotFound", err)
	}
}

// TestStatOtherBackend checks that the store refuses a ref of another
// backend as one it cannot take (ErrUnsupported), so that a caller holding
// only this store, such as a Restorer's queue, leaves that ref's work alone.
func TestStatOtherBackend(t *testing.T) {
	st := sqlite.NewStore(t.TempDir(), sqlite.Options{})
	_, err := st.Stat(context.Background(), bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: "s1"})
	if !errors.Is(err, bs.ErrUnsupported) {
		t.Errorf("Stat of a JSONL ref: %v, want ErrUnsupported", err)
	}
}
