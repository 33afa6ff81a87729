package api_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
)

// testDoctorHealth opens the sessions page over a session with a tool call
// without result and checks its "broken" pill (the title names the
// problem), the healthy session's "ok" pill, then opens the broken
// session and checks that its problem is listed with the tool call.
func testDoctorHealth(t *testing.T, browserCtx context.Context) {
	set, ids, _ := doctorFixture(t)
	srv := serve(t, api.Options{Installation: set.Installation, Backend: set, Daemon: newDaemon(t, set), UI: ui.Handler(), AutoRefreshMS: 60000})
	tab, problems := newTab(t, browserCtx)
	pill := func(id string) string {
		return `document.querySelector('tr[data-session=` + jsString(id) + `] .pill.health')`
	}
	do(t, tab, "open the sessions page", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`tr[data-session="`+ids[0]+`"] .pill.health`))
	if got := eval[string](t, tab, pill(ids[0])+`.dataset.health + ' ' + `+pill(ids[0])+`.textContent`); got != "broken broken" {
		t.Errorf("the broken session's pill is %q, want broken", got)
	}
	if got := eval[string](t, tab, pill(ids[0])+`.title`); !strings.Contains(got, "1 tool call without result") {
		t.Errorf("the broken pill's title %q does not list its problem", got)
	}
	if got := eval[string](t, tab, pill(ids[1])+`.title`); !strings.Contains(got, "1 tool result without call") {
		t.Errorf("the orphan's pill title %q does not list its problem", got)
	}
	if got := eval[string](t, tab, pill(ids[2])+`.dataset.health`); got != "ok" {
		t.Errorf("the healthy session's pill is %q, want ok", got)
	}
	screenshot(t, tab, "ui-health-column.png", false)

	do(t, tab, "open the broken session", chromedp.Navigate(srv.URL+"/#/session/alpha/"+ids[0]),
		chromedp.WaitVisible(`#doctor-panel li.problem`))
	if got := eval[string](t, tab, `document.querySelector('#doctor-panel .pill.health').dataset.health`); got != "broken" {
		t.Errorf("the session view's health is %q, want broken", got)
	}
	item := eval[string](t, tab, `document.querySelector('#doctor-panel li.problem[data-kind="missing_tool_result"]').textContent`)
	for _, want := range []string{"tool call without result", "call_lost", "dd000001"} {
		if !strings.Contains(item, want) {
			t.Errorf("the problem shown %q lacks %q", item, want)
		}
	}
	if got := eval[string](t, tab, `document.querySelector('#doctor-panel').textContent`); !strings.Contains(got, "brainsurgeon doctor --fix --session alpha/"+ids[0]) {
		t.Errorf("the doctor panel %q does not say how to repair", got)
	}
	do(t, tab, "scroll to the problems", chromedp.ScrollIntoView(`#doctor-panel`))
	screenshot(t, tab, "ui-session-problems.png", false)
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}
