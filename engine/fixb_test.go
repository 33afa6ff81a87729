package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// gated is a summarizer that answers once release is closed, or fails when
// its context ends first; it counts its calls.
type gated struct {
	release chan struct{}
	calls   atomic.Int32
}

func newGated(t *testing.T) *gated {
	g := &gated{release: make(chan struct{})}
	return g
}

func (g *gated) Summarize(ctx context.Context, _ [][]byte, _ string) (compact.Summary, error) {
	g.calls.Add(1)
	select {
	case <-g.release:
		return compact.Summary{Text: "## Goal\n- gated summary", Method: "gated"}, nil
	case <-ctx.Done():
		return compact.Summary{}, ctx.Err()
	}
}

// planIn runs planSummaries as one Assemble would, with the given window,
// wait and context, and returns the plan and how long it took.
func planIn(t *testing.T, ctx context.Context, e *Engine, ref bs.SessionRef, tr bs.Transcript, msgs []viewMsg, st *State, window int, wait time.Duration) (summaryPlan, time.Duration) {
	t.Helper()
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	start := time.Now()
	p, err := e.planSummaries(ctx, summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: window, Tokens: sumTokens(msgs), State: st, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	return p, time.Since(start)
}

// count returns how many logged lines hold s.
func (l *logs) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, x := range l.lines {
		if strings.Contains(x, s) {
			n++
		}
	}
	return n
}

// TestReadOnlyMakesNoSummary proves that a read-only engine neither starts
// nor writes a summary (not even the urgent deterministic one), serves the
// summaries of the saved state, whose ids Describe and Expand find, and
// answers Compact with nothing made.
func TestReadOnlyMakesNoSummary(t *testing.T) {
	b := newTranscript()
	for i := range 12 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	m := newModel(t, "ok")
	e, _ := newEngine(t, st, m.client())
	e.ReadOnly = true
	tr, msgs := viewOf(t, e, ref)
	total := sumTokens(msgs)
	for _, tc := range []struct {
		name   string
		window int
	}{
		{"above the summarize threshold", total * 10 / 7},
		{"above the window: urgent", total * 5 / 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := &State{Version: 1}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			p, _ := planIn(t, ctx, e, ref, tr, msgs, state, tc.window, 0)
			if p.Summary != nil || len(state.Summaries) != 0 || state.Compactions != 0 || len(p.Layers) != 0 {
				t.Fatalf("read-only plan %+v, %d summaries: want none", p, len(state.Summaries))
			}
			if e.session(ref).job != nil || len(e.bg.running()) != 0 || m.calls.Load() != 0 {
				t.Fatalf("read-only plan started a job (model calls %d)", m.calls.Load())
			}
		})
	}
	res, err := e.Compact(context.Background(), ref, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted || res.Reason != "read-only: nothing is written" || res.Summary != nil || res.TokensBefore == 0 || res.TokensAfter != res.TokensBefore {
		t.Fatalf("read-only compact %+v", res)
	}
	if _, err := os.Stat(e.StateDir + "/engine"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only engine wrote its state directory: %v", err)
	}

	// A summary saved before the engine turned read-only is still served,
	// and what the view shows can be described and expanded.
	e.ReadOnly = false
	if _, err := e.Compact(context.Background(), ref, CompactOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	e.ReadOnly = true
	saved, err := e.loadState(ref)
	if err != nil || len(saved.Summaries) != 1 {
		t.Fatalf("saved state: %v, %+v", err, saved)
	}
	p, _ := planIn(t, context.Background(), e, ref, tr, msgs, saved, total*10/7, 0)
	if p.Summary == nil || p.Summary.ID != saved.Summaries[0].ID || len(saved.Summaries) != 1 {
		t.Fatalf("read-only plan %+v: want the saved summary %s and no other", p, saved.Summaries[0].ID)
	}
	if r, err := e.Describe(context.Background(), ref, p.Summary.ID); err != nil || r.ID != p.Summary.ID {
		t.Fatalf("describe %s: %+v, %v", p.Summary.ID, r, err)
	}
	if lines, err := e.Expand(context.Background(), ref, p.Summary.ID); err != nil || len(lines) != len(saved.Summaries[0].Entries) {
		t.Fatalf("expand %s: %d lines, %v", p.Summary.ID, len(lines), err)
	}
}

// TestAssembleWaitsOnlyForItsOwnJob proves that a view waits for the
// summary it started, but not for one an earlier view started (it takes
// it once done), unless the view is above the full threshold.
func TestAssembleWaitsOnlyForItsOwnJob(t *testing.T) {
	b := newTranscript()
	for i := range 12 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	g := newGated(t)
	e, _ := newEngine(t, st, g)
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	const wait = 250 * time.Millisecond
	tr, msgs := viewOf(t, e, ref)
	total := sumTokens(msgs)
	calm := total * 10 / 7 // above 50 %, below 95 %: not urgent
	state := &State{Version: 1}

	p, took := planIn(t, context.Background(), e, ref, tr, msgs, state, calm, wait)
	if p.Summary != nil || e.session(ref).job == nil || took < wait {
		t.Fatalf("first view: plan %+v in %s: want it to wait %s for the job it started, then serve without it", p, took, wait)
	}
	for i := range 3 {
		p, took = planIn(t, context.Background(), e, ref, tr, msgs, state, calm, wait)
		if p.Summary != nil || took >= wait/2 || g.calls.Load() != 1 {
			t.Fatalf("view %d: plan %+v in %s, %d model calls: want no wait for the earlier job", i+2, p, took, g.calls.Load())
		}
	}
	close(g.release)
	<-e.session(ref).job.done
	p, took = planIn(t, context.Background(), e, ref, tr, msgs, state, calm, wait)
	if p.Summary == nil || len(state.Summaries) != 1 || state.Summaries[0].Method != "gated" || took >= wait/2 {
		t.Fatalf("view after the job ended: plan %+v in %s, summaries %+v: want the job's summary at once", p, took, state.Summaries)
	}
}

// TestUrgentWaitsForAnEarlierJob proves that above the window a view waits
// for the job an earlier view started, up to its deadline, and then uses
// the deterministic summary.
func TestUrgentWaitsForAnEarlierJob(t *testing.T) {
	b := newTranscript()
	for i := range 12 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	g := newGated(t)
	e, _ := newEngine(t, st, g)
	t.Cleanup(func() { close(g.release) })
	tr, msgs := viewOf(t, e, ref)
	total := sumTokens(msgs)
	state := &State{Version: 1}
	if p, _ := planIn(t, context.Background(), e, ref, tr, msgs, state, total*10/7, -1); p.Summary != nil || e.session(ref).job == nil {
		t.Fatalf("first view: plan %+v: want a job started and no summary", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	p, took := planIn(t, ctx, e, ref, tr, msgs, state, total*5/6, -1)
	if took < 150*time.Millisecond || took > 300*time.Millisecond {
		t.Fatalf("urgent view took %s: want it to wait for the earlier job up to its deadline", took)
	}
	if p.Summary == nil || len(state.Summaries) != 1 || !state.Summaries[0].Degraded || !strings.Contains(state.Summaries[0].Reason, "deadline") {
		t.Fatalf("urgent view: plan %+v, summaries %+v: want the deterministic summary", p, state.Summaries)
	}
}

// TestCloseCancelsJobs proves that Close cancels a summary the model is
// still writing, waits for it, drops what it wrote, and reports a job's
// failure other than its cancellation.
func TestCloseCancelsJobs(t *testing.T) {
	if err := (&Engine{}).Close(); err != nil {
		t.Fatalf("Close with no job: %v", err)
	}
	b := newTranscript()
	for i := range 12 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	g := newGated(t) // never released: only a cancellation ends its call
	e, l := newEngine(t, st, g)
	tr, msgs := viewOf(t, e, ref)
	state := &State{Version: 1}
	if p, _ := planIn(t, context.Background(), e, ref, tr, msgs, state, sumTokens(msgs)*10/7, -1); p.Summary != nil {
		t.Fatalf("plan %+v: want the job running", p)
	}
	sj := e.session(ref).job
	if sj == nil || len(e.bg.running()) != 1 {
		t.Fatal("no job running")
	}
	start := time.Now()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %s: want the job cancelled", took)
	}
	select {
	case <-sj.done:
	default:
		t.Fatal("Close returned before the job ended")
	}
	ss := e.session(ref)
	ss.mu.Lock()
	(&planner{e: e, in: &summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: 4000, State: state}, ss: ss}).harvest(&summaryPlan{})
	ss.mu.Unlock()
	if len(state.Summaries) != 0 || ss.job != nil || len(e.bg.running()) != 0 {
		t.Fatalf("after Close: %d summaries, job %v: want the cancelled job's result dropped", len(state.Summaries), ss.job)
	}
	if l.has("summary made") {
		t.Fatal("a cancelled job's summary was logged as made")
	}

	// A job's own failure is reported.
	e2 := &Engine{}
	j := &summaryJob{done: make(chan struct{})}
	e2.bg.add(j)
	go func() { j.err = errors.New("model down"); close(j.done) }()
	if err := e2.Close(); err == nil || err.Error() != "model down" {
		t.Fatalf("Close: %v, want the job's error", err)
	}
}

// TestCompactRecordsItsLayer proves that a compact call that keeps only
// the last turn records layer "full", which Describe reports.
func TestCompactRecordsItsLayer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current int
		layer   string
	}{
		{"the keep cut suffices", 0, layerManual},
		{"still above the full threshold after the keep cut", 20000, layerFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTranscript()
			for i := range 12 {
				b.turn(i, 1200)
			}
			st, ref := b.store(t)
			e, _ := newEngine(t, st, nil)
			res, err := e.Compact(context.Background(), ref, CompactOptions{CurrentTokens: tc.current})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Compacted || res.Layer != tc.layer || res.Summary.Layer != tc.layer {
				t.Fatalf("result %+v", res)
			}
			r, err := e.Describe(context.Background(), ref, res.Summary.ID)
			if err != nil || r.Layer != tc.layer {
				t.Fatalf("describe: layer %q, %v; want %q", r.Layer, err, tc.layer)
			}
		})
	}
}

// TestStaleSummaryLoggedOnce proves that a summary dropped from the view is
// logged once per session and summary, again only after it applied in
// between, and stays in the state for Describe.
func TestStaleSummaryLoggedOnce(t *testing.T) {
	b := newTranscript()
	for i := range 3 {
		b.turn(i, 100)
	}
	st, ref := b.store(t)
	e, l := newEngine(t, st, nil)
	tr, msgs := viewOf(t, e, ref)
	var first []string
	for _, m := range msgs[:4] {
		first = append(first, m.ID)
	}
	stale := SummaryRecord{ID: "sum-00000000000a", Level: 1, Layer: layerSummarize, Entries: []string{"gone-1", "gone-2"}, Text: "old"}
	other := SummaryRecord{ID: "sum-00000000000b", Level: 1, Layer: layerSummarize, Entries: []string{"gone-3"}, Text: "old too"}
	state := &State{Version: 1, Summaries: []SummaryRecord{stale}}
	const msg = "summary dropped from the view"
	for range 3 {
		plan(t, e, ref, tr, msgs, state)
	}
	if n := l.count(msg); n != 1 {
		t.Fatalf("the stale summary was logged %d times over 3 views, want once", n)
	}
	if r, err := e.Describe(context.Background(), ref, stale.ID); err != nil || r.ID != stale.ID {
		t.Fatalf("describe the stale summary: %+v, %v", r, err)
	}
	// Another stale summary is logged once too.
	state.Summaries = append(state.Summaries, other)
	for range 2 {
		plan(t, e, ref, tr, msgs, state)
	}
	if n := l.count(msg); n != 2 {
		t.Fatalf("two stale summaries logged %d times, want 2", n)
	}
	// The same summary id in another session is that session's.
	if !e.bg.firstDrop(bs.SessionRef{Agent: "main", ID: "other"}.Identity(), stale.ID) {
		t.Fatal("a drop in another session counted as logged")
	}
	// A summary that applies again and then drops again is logged again.
	state.Summaries = []SummaryRecord{{ID: stale.ID, Level: 1, Layer: layerSummarize, Entries: first, Text: "kept"}}
	if p := plan(t, e, ref, tr, msgs, state); p.Summary == nil || p.Summary.ID != stale.ID {
		t.Fatalf("plan %+v: want %s applied", p, stale.ID)
	}
	state.Summaries = []SummaryRecord{stale}
	plan(t, e, ref, tr, msgs, state)
	plan(t, e, ref, tr, msgs, state)
	if n := l.count(msg); n != 3 {
		t.Fatalf("logged %d times, want 3 (once more after it applied in between)", n)
	}
}
