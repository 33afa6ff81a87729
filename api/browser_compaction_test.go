package api_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// testCompaction opens a session that has a compaction and checks the
// token gauge (tokens and window as the API says, colored by the
// thresholds) and the timeline (the event with its trigger, layer,
// before → after, degraded mark and focus); then previews a compaction
// in the UI (dry run: the before and after tokens the API computes,
// nothing written) and confirms it (a second event in the timeline, the
// entry appended).
func testCompaction(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), UI: ui.Handler(), Compaction: smallWindow(f), AutoRefreshMS: 60000})
	c := &client{tb: t, srv: srv}
	ctx, problems := newTab(t, browserCtx)
	id := f.synthIDs[1]
	base := "/api/sessions/alpha/" + id + "/context"
	transcript := filepath.Join(f.agents, "alpha", "sessions", id+".jsonl")

	var first compact.Result
	c.json("POST", base+"/compact", `{"layer":"summarize","focus":"the gauge"}`, 200, &first)
	if first.EntryID == "" {
		t.Fatalf("first compaction = %+v", first)
	}
	var st compact.StatusReport
	c.json("GET", base+"/status", "", 200, &st)

	do(t, ctx, "open the session", chromedp.Navigate(srv.URL+"/#/session/alpha/"+id),
		chromedp.WaitVisible(`#token-gauge`), chromedp.WaitVisible(`#compaction-timeline li.compaction-event`))
	type gaugeInfo struct {
		Tokens, Window, Level, Text, Width string
	}
	g := eval[gaugeInfo](t, ctx, `(() => { const g = document.getElementById('token-gauge');
		return {Tokens: g.dataset.tokens, Window: g.dataset.window, Level: g.dataset.level,
			Text: document.querySelector('#context-panel .gauge-text').textContent,
			Width: g.querySelector('.gauge-fill').style.width}; })()`)
	pct := 100 * float64(st.Tokens) / float64(st.Window)
	wantLevel := "ok"
	switch {
	case pct >= 95:
		wantLevel = "full"
	case pct >= 88:
		wantLevel = "summarize"
	case pct >= st.TriggerPercent:
		wantLevel = "prune"
	}
	if g.Tokens != fmt.Sprint(st.Tokens) || g.Window != "8000" || g.Level != wantLevel ||
		!strings.Contains(g.Text, fmt.Sprintf("%s / 8,000 tokens", commas(st.Tokens))) || g.Width == "" ||
		!strings.Contains(g.Text, "window 8,000 (from the host config)") {
		t.Errorf("gauge = %+v, want %d / 8000 tokens at level %s", g, st.Tokens, wantLevel)
	}
	type eventInfo struct {
		ID, Layer, Trigger, Text string
		N                        int
	}
	ev := eval[eventInfo](t, ctx, `(() => { const li = document.querySelectorAll('#compaction-timeline li.compaction-event');
		return {N: li.length, ID: li[0].dataset.id, Layer: li[0].dataset.layer, Trigger: li[0].dataset.trigger, Text: li[0].textContent}; })()`)
	if ev.N != 1 || ev.ID != first.EntryID || ev.Layer != "summarize" || ev.Trigger != "manual" ||
		!strings.Contains(ev.Text, commas(first.TokensBefore)+" → "+commas(first.TokensAfter)+" tokens") ||
		!strings.Contains(ev.Text, "degraded") || !strings.Contains(ev.Text, "focus: the gauge") {
		t.Errorf("timeline event = %+v, want %s summarize manual %d → %d degraded with its focus", ev, first.EntryID, first.TokensBefore, first.TokensAfter)
	}
	// Where the tokens are: the API's inspect report, when opened.
	var in compact.InspectReport
	c.json("GET", base+"/inspect", "", 200, &in)
	do(t, ctx, "open the inspect details", chromedp.Click(`#context-inspect summary`))
	waitFor(t, ctx, "the inspect table", `document.querySelector('#inspect-table tr[data-key="tool_outputs"]')`)
	cell := func(key string) string {
		return eval[string](t, ctx, `document.querySelector('#inspect-table tr[data-key="`+key+`"] td').textContent`)
	}
	if got := cell("tool_outputs"); got != commas(in.Conversation.ToolOutputs.Tokens) {
		t.Errorf("tool outputs shown %q, want %s", got, commas(in.Conversation.ToolOutputs.Tokens))
	}
	if got := cell("conversation"); got != commas(in.Conversation.Tokens) {
		t.Errorf("conversation shown %q, want %s", got, commas(in.Conversation.Tokens))
	}
	if txt := eval[string](t, ctx, `document.getElementById('context-panel').innerText`); strings.Contains(txt, "null") || strings.Contains(txt, "undefined") {
		t.Errorf("the context panel shows null or undefined:\n%s", txt)
	}
	screenshot(t, ctx, "ui-compaction.png", false)

	// Preview (dry run) in the UI: the API's before and after, nothing written.
	before, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	var dry compact.Result
	c.json("POST", base+"/compact", `{"layer":"full","focus":"next steps","dry_run":true}`, 200, &dry)
	do(t, ctx, "fill the compact form", chromedp.SendKeys(`#compact-focus`, "next steps"), chromedp.SetValue(`#compact-layer`, "full"),
		chromedp.Click(`button.compact-preview-button`))
	waitFor(t, ctx, "the dry-run preview", `document.querySelector('#compact-dry-run .after')`)
	type dryInfo struct{ Before, After, Text string }
	d := eval[dryInfo](t, ctx, `(() => { const p = document.getElementById('compact-dry-run');
		return {Before: p.querySelector('.before').dataset.tokens, After: p.querySelector('.after').dataset.tokens, Text: p.textContent}; })()`)
	if d.Before != fmt.Sprint(dry.TokensBefore) || d.After != fmt.Sprint(dry.TokensAfter) || !strings.Contains(d.Text, "Preview (full)") {
		t.Errorf("dry-run preview = %+v, want %d → %d (the API's dry run)", d, dry.TokensBefore, dry.TokensAfter)
	}
	if now, _ := os.ReadFile(transcript); !bytes.Equal(now, before) {
		t.Error("the preview changed the transcript")
	}
	screenshot(t, ctx, "ui-compaction-preview.png", false)

	// Confirm: the compaction is written and shows in the timeline.
	do(t, ctx, "confirm the compaction", chromedp.Click(`#compact-confirm`))
	waitFor(t, ctx, "the second timeline event", `document.querySelectorAll('#compaction-timeline li.compaction-event').length === 2`)
	var h compact.HistoryReport
	c.json("GET", base+"/history", "", 200, &h)
	if h.Compactions != 2 || h.Events[0].Layer != compact.LayerFull || h.Events[0].Focus != "next steps" {
		t.Errorf("history after the UI's compaction = %+v", h)
	}
	if got := eval[string](t, ctx, `document.querySelector('#compaction-timeline li.compaction-event').dataset.id`); got != h.Events[0].ID {
		t.Errorf("newest timeline event %s, want %s", got, h.Events[0].ID)
	}
	if now, _ := os.ReadFile(transcript); !bytes.HasPrefix(now, before) || len(now) == len(before) {
		t.Error("the confirmed compaction was not appended to the transcript")
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// commas renders n as the UI does (en-US thousands separators).
func commas(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
