package api_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// testEngineLine opens a session the context engine served and checks
// the session view's engine line and its warning; a session it never
// served has no such line.
func testEngineLine(t *testing.T, browserCtx context.Context) {
	f := newPlugFixture(t)
	eng := &fakeEngine{status: engine.Status{Active: true, Collapsed: 4, CollapsedChars: 123456, Summaries: 3, TopSummaries: 1, Levels: 2,
		Compactions: 5, Risk: "high", Warning: "BrainSurgeon: earlier parts of this conversation were summarized 5 times; details may be missing."}}
	h, err := api.NewWithEngine(api.Options{Stores: stores(f.set), UI: ui.Handler(), AutoRefreshMS: 60000}, eng)
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
	screenshot(t, tab, "ui-engine-line.png", false)
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
