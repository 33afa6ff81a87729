package brainsurgeon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// listStore is a store that lists fixed refs and skipped parts, and
// stats every session one by one.
type listStore struct {
	bs.Store // nil: only Sessions and Stat are called
	refs     []bs.SessionRef
	skipped  []error
	stats    *int
}

func (s listStore) Sessions(context.Context) ([]bs.SessionRef, []error, error) {
	return s.refs, s.skipped, nil
}

func (s listStore) Stat(_ context.Context, ref bs.SessionRef) (bs.SessionStat, error) {
	*s.stats++
	if ref.ID == "gone" {
		return bs.SessionStat{}, fmt.Errorf("session %s: %w", ref, bs.ErrNotFound)
	}
	return bs.SessionStat{Version: bs.NewVersion("test", ref.ID, 1)}, nil
}

// batchStore is a listStore that stats many sessions at once.
type batchStore struct {
	listStore
	batches *int
}

func (s batchStore) StatMany(_ context.Context, refs []bs.SessionRef) []bs.StatResult {
	*s.batches++
	out := make([]bs.StatResult, len(refs))
	for i, r := range refs {
		out[i].Stat.Version = bs.NewVersion("test", r.ID, 1)
	}
	return out
}

func TestStatMany(t *testing.T) {
	ctx := context.Background()
	refs := []bs.SessionRef{{ID: "a"}, {ID: "gone"}, {ID: "b"}}
	var stats, batches int
	plain := listStore{stats: &stats}
	got := bs.StatMany(ctx, plain, refs)
	if len(got) != 3 || stats != 3 || got[0].Err != nil || !errors.Is(got[1].Err, bs.ErrNotFound) ||
		!got[2].Stat.Version.Equal(bs.NewVersion("test", "b", 1)) {
		t.Errorf("fallback: %+v after %d stats, want one Stat each, in order", got, stats)
	}
	stats = 0
	got = bs.StatMany(ctx, batchStore{listStore{stats: &stats}, &batches}, refs)
	if len(got) != 3 || batches != 1 || stats != 0 || !got[0].Stat.Version.Equal(bs.NewVersion("test", "a", 1)) {
		t.Errorf("batch: %+v after %d batches and %d stats, want one batch", got, batches, stats)
	}
}

func TestListSessions(t *testing.T) {
	ctx := context.Background()
	locked := fmt.Errorf("the sessions of agent %q are not listed: database is locked: %w", "main", bs.ErrBusy)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	refs, err := bs.ListSessions(ctx, listStore{refs: []bs.SessionRef{{ID: "a"}}, skipped: []error{locked}}, log)
	if err != nil || len(refs) != 1 || !strings.Contains(logs.String(), "database is locked") {
		t.Errorf("some listed: %v, %v, log %q; want the refs and the skipped part logged", refs, err, logs.String())
	}
	refs, err = bs.ListSessions(ctx, listStore{skipped: []error{locked}}, nil)
	if !errors.Is(err, bs.ErrBusy) || refs != nil {
		t.Errorf("none listed: %v, %v; want the skipped part as the error", refs, err)
	}
	refs, err = bs.ListSessions(ctx, listStore{}, nil)
	if err != nil || len(refs) != 0 {
		t.Errorf("empty store: %v, %v; want no sessions and no error", refs, err)
	}
}
