package restore

import (
	"context"
	"fmt"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// statStore is a store whose Stat answers err for every ref of another
// backend than its own.
type statStore struct {
	bs.Store // nil: only Name and Stat are called
	name     string
	err      error
}

func (s statStore) Name() string { return s.name }
func (s statStore) Stat(_ context.Context, ref bs.SessionRef) (bs.SessionStat, error) {
	if ref.Backend != s.name {
		return bs.SessionStat{}, fmt.Errorf("session %s: %w", ref, s.err)
	}
	return bs.SessionStat{}, nil
}

// TestServes checks which queued write-backs ApplyPending takes up: those
// of the store's own backend, and of a backend a store over several
// backends does not refuse; a ref refused as unsupported (no store for
// its backend, or a store of one backend given another's ref) stays
// queued, and one whose Stat fails otherwise (invalid, gone) is taken up.
func TestServes(t *testing.T) {
	ctx := context.Background()
	jsonl := bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: "s1"}
	db := bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "s2"}
	for _, tc := range []struct {
		name string
		st   bs.Store
		ref  bs.SessionRef
		want bool
	}{
		{"OwnBackend", statStore{name: bs.BackendJSONL, err: bs.ErrInvalid}, jsonl, true},
		{"OtherBackend", statStore{name: bs.BackendJSONL, err: bs.ErrUnsupported}, db, false},
		{"StatInvalid", statStore{name: "jsonl+sqlite", err: bs.ErrInvalid}, db, true},
		{"NoStoreForIt", statStore{name: "jsonl+other", err: bs.ErrUnsupported}, db, false},
		{"StatNotFound", statStore{name: "jsonl+sqlite", err: bs.ErrNotFound}, db, true},
	} {
		if got := serves(ctx, tc.st, tc.ref); got != tc.want {
			t.Errorf("%s: serves = %v, want %v", tc.name, got, tc.want)
		}
	}
}
