package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// testEngineLine opens a session the context engine served and checks
// the session view's engine line and its warning, the size of the view
// sent to the model beside the stored transcript's, the engine's
// compactions in the counts and the timeline, the layers offered (prune
// only: /compact is the engine's), the usage chart (no stray text under
// it, round y ticks) and the entries heading; a session it never served
// has no such line.
func testEngineLine(t *testing.T, browserCtx context.Context) {
	f := newPlugFixture(t)
	eng := &fakeEngine{status: engine.Status{Active: true, Collapsed: 4, CollapsedChars: 123456, Summaries: 3, TopSummaries: 1, Levels: 2,
		Compactions: 5, Risk: "high", Warning: "BrainSurgeon: earlier parts of this conversation were summarized 5 times; details may be missing.",
		Turns: 9, View: &engine.ViewSize{Turn: 9, At: time.Now().Add(-time.Minute), PredictedTokens: 21000, MeasuredTokens: 20480, MeasuredTurn: 8,
			Chars: 51000, HostChars: 281000, Messages: 12, HostMessages: 40},
		LastViews: []engine.Turn{
			{N: 9, At: time.Now().Add(-time.Minute), Messages: 40, ViewMessages: 12, Layers: []string{"collapse", "summarize"}, Chars: 51000, HostChars: 281000,
				Changed: true, ElapsedMS: 12.345},
			{N: 8, At: time.Now().Add(-2 * time.Minute), Messages: 38, ViewMessages: 38, HostChars: 270000, Chars: 270000,
				Passthrough: "none of the host's 38 messages matched", ElapsedMS: 3.2},
		}}}
	h, err := api.NewWithEngine(api.Options{Installation: f.set.Installation, Backend: f.set, UI: ui.Handler(), AutoRefreshMS: 60000}, eng)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tab, problems := newTab(t, browserCtx)
	do(t, tab, "open the session", chromedp.Navigate(srv.URL+"/#/session/main/"+plugSessA), chromedp.WaitVisible(`#engine-status`))
	text := eval[string](t, tab, `document.getElementById('engine-status').innerText`)
	for _, want := range []string{"Context engine: 4 values collapsed (123,456 chars), 3 summaries (levels 2), 5 compactions", "risk high", "summarized 5 times"} {
		if !strings.Contains(text, want) {
			t.Errorf("engine line %q lacks %q", text, want)
		}
	}
	view := eval[string](t, tab, `document.getElementById('engine-view').innerText`)
	for _, want := range []string{"Sent to the model (last view): 21,000 tokens predicted, 20,480 measured (view 8)",
		"12 of the host's 40 messages, 51,000 of their 281,000 characters"} {
		if !strings.Contains(view, want) {
			t.Errorf("engine view line %q lacks %q", view, want)
		}
	}
	// The last views, newest first.
	rows := eval[[]string](t, tab, `[...document.querySelectorAll('#engine-views tbody tr')].map((r) => [...r.cells].map((c) => c.innerText).join(' | '))`)
	wantRows := []string{"view 9 | 40 → 12 | collapse, summarize | 281,000 → 51,000 | changed | 12.3 | –",
		"view 8 | 38 | – | 270,000 → 270,000 | kept | 3.2 | none of the host's 38 messages matched"}
	if len(rows) != len(wantRows) {
		t.Errorf("last views table rows %q, want %d", rows, len(wantRows))
	}
	for i := range min(len(rows), len(wantRows)) {
		if !strings.Contains(rows[i], wantRows[i]) {
			t.Errorf("last views row %d %q lacks %q", i, rows[i], wantRows[i])
		}
	}
	meta := eval[string](t, tab, `document.querySelector('dl.meta').textContent`)
	for _, want := range []string{"Sent to the model (last view)", "21,000 tokens (predicted)", "Stored transcript (next turn, estimated)", "Last turn's recorded usage"} {
		if !strings.Contains(meta, want) {
			t.Errorf("session figures %q lack %q", meta, want)
		}
	}
	do(t, tab, "wait for the context panel and the chart", chromedp.WaitVisible(`#token-gauge[data-source="view"]`), chromedp.WaitVisible(`#usage-chart`))
	if got := eval[string](t, tab, `document.getElementById('token-gauge').dataset.tokens`); got != "21000" {
		t.Errorf("the gauge shows %s tokens, want the view's 21000", got)
	}
	gauge := eval[string](t, tab, `document.querySelector('#context-panel .gauge-text').textContent`)
	for _, want := range []string{"Sent to the model (last view): 21,000 / ", "measured 20,480 tokens (view 8)", "stored transcript: ",
		"5 compactions (5 by the context engine, 0 in the transcript)"} {
		if !strings.Contains(gauge, want) {
			t.Errorf("gauge text %q lacks %q", gauge, want)
		}
	}
	if got := eval[string](t, tab, `document.getElementById('compaction-empty').innerText`); got != "No compaction entry in the stored transcript." {
		t.Errorf("timeline says %q", got)
	}
	if got := eval[string](t, tab, `document.getElementById('engine-compactions').innerText`); !strings.Contains(got, "compacted the model's view 5 times") {
		t.Errorf("the timeline's engine note %q", got)
	}
	if got := eval[string](t, tab, `[...document.querySelectorAll('#compact-layer option')].map((o) => o.value).join(',')`); got != "prune" {
		t.Errorf("layers offered %q, want prune only (the engine answers /compact)", got)
	}
	hint := eval[string](t, tab, `document.getElementById('compact-refusal').innerText`)
	if !strings.Contains(hint, "/compact in the chat is answered by it") || strings.Contains(hint, "Only the prune layer can run here") || strings.Contains(hint, "host's own /compact") {
		t.Errorf("compaction hint %q", hint)
	}
	// The chart of a session without markers: nothing but nodes under it,
	// and round y ticks.
	if stray := eval[string](t, tab, `[...document.querySelector('#usage-panel .panel-body').childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('|')`); stray != "" {
		t.Errorf("stray text under the usage chart: %q", stray)
	}
	ticks := eval[[]string](t, tab, `[...document.querySelectorAll('#usage-chart text.y-tick')].map((e) => e.dataset.tokens + '=' + e.textContent)`)
	if len(ticks) < 3 || ticks[0] != "0=0" || ticks[len(ticks)-1] != "10=10" {
		t.Errorf("y ticks %q; want 0 to 10 in round steps", ticks)
	}
	if got := eval[string](t, tab, `document.getElementById('entries-heading').innerText`); got != "Lines 1–5 of 5 (4 entries, the session header)" {
		t.Errorf("entries heading %q", got)
	}
	screenshot(t, tab, "ui-engine-line.png", false)
	// The engine no longer serves the session (its last view is two days
	// old): the gauge shows the stored transcript, not the old view.
	eng.mu.Lock()
	old := eng.status
	old.View = &engine.ViewSize{Turn: 9, At: time.Now().Add(-48 * time.Hour), PredictedTokens: 21000, Messages: 12, HostMessages: 40}
	eng.status = old
	eng.mu.Unlock()
	do(t, tab, "reopen the session", chromedp.Navigate(srv.URL+"/#/session/main/"+plugSessB), chromedp.WaitVisible(`dl.meta`),
		chromedp.Navigate(srv.URL+"/#/session/main/"+plugSessA), chromedp.WaitVisible(`#token-gauge`))
	waitFor(t, tab, "the gauge of the stored transcript", `document.getElementById('token-gauge')?.dataset.source === 'transcript'`)
	if gauge := eval[string](t, tab, `document.querySelector('#context-panel .gauge-text').textContent`); strings.Contains(gauge, "Sent to the model") || !strings.Contains(gauge, "Next turn's context (estimated): ") {
		t.Errorf("gauge text of a session the engine no longer serves %q; want the stored transcript's figures", gauge)
	}
	eng.mu.Lock()
	eng.status = engine.Status{}
	eng.mu.Unlock()
	do(t, tab, "open the other session", chromedp.Navigate(srv.URL+"/#/session/main/"+plugSessB), chromedp.WaitVisible(`dl.meta`))
	if n := eval[int](t, tab, `document.querySelectorAll('#engine-status').length`); n != 0 {
		t.Errorf("a session the engine never served shows %d engine lines", n)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("page problems: %v", p)
	}
}
