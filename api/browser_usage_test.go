package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// testUsageAndDisk opens the sessions page and checks the disk panel's
// stacked bar against GET /api/disk (one segment per part that has bytes,
// the bytes the API counts, host leftovers included), then opens a session
// that was pruned, had an entry restored and was compacted, and checks the
// usage chart against GET …/usage: one point per recorded turn, one marker
// per step. It saves screenshots of both.
func testUsageAndDisk(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	id := f.synthIDs[1]
	dir := filepath.Join(f.agents, "alpha", "sessions")
	for _, name := range []string{id + ".jsonl.reset.2026-03-01T10-00-00.000Z", id + ".jsonl.bak-4242-1767225600000", id + ".trajectory.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", 20000)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), UI: ui.Handler(), Compaction: smallWindow(f), AutoRefreshMS: 60000})
	c := &client{tb: t, srv: srv}
	base := "/api/sessions/alpha/" + id

	data, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	m := placeholderRE.FindSubmatch(data)
	if m == nil {
		t.Fatal("no placeholder in the demo session")
	}
	c.json("POST", base+"/entries/"+string(m[1])+"/restore", "", 200, nil)
	var comp compact.Result
	c.json("POST", base+"/context/compact", `{"layer":"summarize"}`, 200, &comp)

	var disk api.DiskUse
	c.json("GET", "/api/disk", "", 200, &disk)
	var usage api.UsageSeries
	c.json("GET", base+"/usage", "", 200, &usage)
	if len(usage.Points) == 0 || len(usage.Markers) < 3 {
		t.Fatalf("usage: %d points, markers %+v; want points and an extraction, a restore and a compaction", len(usage.Points), usage.Markers)
	}

	tab, problems := newTab(t, browserCtx)
	do(t, tab, "open the sessions page", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`#disk-panel .disk-row[data-agent="alpha"] svg.disk-bar rect`))
	a := disk.Agents[0]
	for _, part := range []struct {
		name  string
		bytes int64
	}{{"transcripts", a.Transcripts.Bytes}, {"side", a.Side.Bytes}, {"leftovers", a.Leftovers.Bytes}, {"other", a.Other.Bytes}} {
		sel := `document.querySelector('#disk-panel .disk-row[data-agent="alpha"] rect[data-part="` + part.name + `"]')`
		shown := eval[string](t, tab, `(`+sel+` || {getAttribute: () => ''}).getAttribute('data-bytes')`)
		if part.bytes == 0 {
			if shown != "" {
				t.Errorf("disk bar: a %s segment of %s bytes, the API counts none", part.name, shown)
			}
			continue
		}
		if shown != strconv.FormatInt(part.bytes, 10) {
			t.Errorf("disk bar: %s segment of %q bytes, want the API's %d", part.name, shown, part.bytes)
		}
	}
	if a.Leftovers.Bytes < 60000 {
		t.Errorf("leftovers %+v: want the three host files of 20,000 bytes", a.Leftovers)
	}
	do(t, tab, "scroll to the disk panel", chromedp.ScrollIntoView(`#disk-panel`))
	screenshot(t, tab, "ui-disk.png", false)

	do(t, tab, "open the session", chromedp.Navigate(srv.URL+"/#/session/alpha/"+id),
		chromedp.WaitVisible(`#usage-chart circle.usage-point`))
	if n := eval[int](t, tab, `document.querySelectorAll('#usage-chart circle.usage-point').length`); n != len(usage.Points) {
		t.Errorf("the chart has %d points, the API %d recorded turns", n, len(usage.Points))
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#usage-chart g.marker').length`); n != len(usage.Markers) {
		t.Errorf("the chart has %d markers, the API %d", n, len(usage.Markers))
	}
	for _, kind := range []string{"compaction", "extraction", "restore"} {
		if !eval[bool](t, tab, `!!document.querySelector('#usage-chart g.marker[data-kind="`+kind+`"] title')`) {
			t.Errorf("no %s marker with its tooltip on the chart", kind)
		}
	}
	last := usage.Points[len(usage.Points)-1]
	if got := eval[string](t, tab, `document.querySelector('#usage-chart circle.usage-point:last-of-type').dataset.tokens`); got != strconv.FormatInt(last.Tokens, 10) {
		t.Errorf("last point shows %s tokens, the API %d", got, last.Tokens)
	}
	do(t, tab, "scroll to the chart", chromedp.ScrollIntoView(`#usage-panel`))
	screenshot(t, tab, "ui-usage-chart.png", false)
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}
