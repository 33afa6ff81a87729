package engine

import (
	"context"
	"os"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TestStatusCacheSameStamp: the state file is replaced by a rename, so two
// writes of the same size within the clock's resolution have the same
// stamp; the second must still be seen (the file is another file).
func TestStatusCacheSameStamp(t *testing.T) {
	e := &Engine{StateDir: t.TempDir()}
	ref := bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: "0badc0de-0000-4000-8000-0000000000c1"}
	path, err := e.statePath(ref)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	stamp := time.Date(2026, 3, 1, 10, 0, 1, 0, time.UTC)
	for _, predicted := range []int{1111, 2222} {
		st := newState()
		st.Turns = []Turn{{N: 1, At: at, Predicted: predicted}}
		if err := e.saveState(ref, st); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, stamp, stamp); err != nil {
			t.Fatal(err)
		}
		got, err := e.Status(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.View == nil || got.View.PredictedTokens != predicted {
			t.Fatalf("after the write of %d predicted tokens, Status says %+v", predicted, got.View)
		}
	}
}
