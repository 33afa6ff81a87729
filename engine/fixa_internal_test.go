package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TestSessionLockIsProcessWide proves that two Engine values over one
// state directory share a session's lock and summary job (the daemon
// replaces its engine while the old one may still be in a call), and
// that another state directory or session has its own.
func TestSessionLockIsProcessWide(t *testing.T) {
	dir := t.TempDir()
	ref := bs.SessionRef{Agent: "main", ID: "s1"}
	a, b := &Engine{StateDir: dir}, &Engine{StateDir: dir + string(filepath.Separator) + "."}
	if a.session(ref) != b.session(ref) {
		t.Fatalf("two engines over one state directory hold two locks for one session")
	}
	if a.session(ref) == a.session(bs.SessionRef{Agent: "main", ID: "s2"}) {
		t.Fatalf("two sessions share a lock")
	}
	if a.session(ref) == (&Engine{StateDir: t.TempDir()}).session(ref) {
		t.Fatalf("two state directories share a lock")
	}
	// b waits for a's call.
	ss := a.session(ref)
	ss.mu.Lock()
	got := make(chan struct{})
	go func() {
		s := b.session(ref)
		s.mu.Lock()
		s.mu.Unlock() //nolint:staticcheck // an empty critical section: the wait is the point
		close(got)
	}()
	select {
	case <-got:
		t.Fatalf("the second engine entered the session while the first held it")
	case <-time.After(50 * time.Millisecond):
	}
	ss.mu.Unlock()
	<-got
}

// TestStatusTakesNoLock proves that Status answers while a call holds the
// session.
func TestStatusTakesNoLock(t *testing.T) {
	e := &Engine{StateDir: t.TempDir()}
	ref := bs.SessionRef{Agent: "main", ID: "s1"}
	st := newState()
	st.Turns = []Turn{{N: 1}}
	if err := e.saveState(ref, st); err != nil {
		t.Fatal(err)
	}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	done := make(chan Status, 1)
	go func() {
		s, err := e.Status(context.Background(), ref)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	select {
	case s := <-done:
		if !s.Active || s.Turns != 1 {
			t.Fatalf("status %+v", s)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("Status waited for the session's lock")
	}
}

// TestMeasureLastOfSharedAnchor proves that of several turns with the
// same LastEntry only the last is measured.
func TestMeasureLastOfSharedAnchor(t *testing.T) {
	asst := `{"type":"message","id":"b","message":{"role":"assistant","provider":"anthropic","usage":{"input":900,"cacheRead":100,"cacheWrite":0}}}`
	sm := []stored{
		{id: "a", role: "user", e: &bs.Entry{Raw: []byte(`{"type":"message","id":"a","message":{"role":"user"}}`)}},
		{id: "b", role: "assistant", e: &bs.Entry{Raw: []byte(asst)}},
	}
	st := newState()
	st.Turns = []Turn{
		{N: 1, LastEntry: "a", BaseTokens: 500, Messages: 1},
		{N: 2, LastEntry: "a", BaseTokens: 700, Messages: 1}, // the retry after an overflow
	}
	for k := range sm {
		sm[k].usage = recordedInput(&sm[k])
	}
	(&Engine{}).measure(&viewCache{sm: sm, byID: map[string]int{"a": 0, "b": 1}}, st)
	if st.Turns[0].Measured != 0 || st.Turns[1].Measured != 1000 {
		t.Fatalf("measured %d and %d; want 0 and 1000 (the last turn of the anchor)", st.Turns[0].Measured, st.Turns[1].Measured)
	}
	if st.Calibration.Samples != 1 {
		t.Fatalf("calibration %+v: want one sample", st.Calibration)
	}
}

// TestPrefixChangedFirstKeptUnknown proves that a first kept message that
// is not stored (the view's summary covers every stored message) does not
// count as another first kept message once it is.
func TestPrefixChangedFirstKeptUnknown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prev, cur Turn
		want      bool
	}{
		{"kept nothing, then the prompt", Turn{SummaryID: "sum-a", Messages: 10, ViewMessages: 1}, Turn{SummaryID: "sum-a", FirstKeptEntry: "p", Messages: 4, ViewMessages: 4}, false},
		{"unstored first kept, then stored", Turn{SummaryID: "sum-a", Messages: 10, ViewMessages: 3}, Turn{SummaryID: "sum-a", FirstKeptEntry: "p", Messages: 12, ViewMessages: 5}, false},
		{"another stored first kept", Turn{SummaryID: "sum-a", FirstKeptEntry: "x"}, Turn{SummaryID: "sum-a", FirstKeptEntry: "y"}, true},
		{"history gone", Turn{SummaryID: "sum-a", FirstKeptEntry: "x"}, Turn{SummaryID: "sum-a", FirstKeptEntry: "x"}, true},
	} {
		touched := tc.name == "history gone"
		if got := prefixChanged(&tc.prev, &tc.cur, touched); got != tc.want {
			t.Errorf("%s: changed %v, want %v", tc.name, got, tc.want)
		}
	}
}
