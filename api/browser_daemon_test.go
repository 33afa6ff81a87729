package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
)

// TestUIInBrowserDaemon drives the parts of the web UI that show the
// daemon's own state in a real headless Chromium: the key dialog names
// the key file, the banner names the plugin's failed calls with the fix,
// and the page waits for the agents dir.
func TestUIInBrowserDaemon(t *testing.T) {
	t.Parallel()
	b := browser(t)
	inTabs(t, b, []browserTest{
		{"KeyDialogAndPluginBanner", testKeyDialogAndPluginBanner},
		{"Waiting", testWaiting},
	})
}

func testKeyDialogAndPluginBanner(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	keyFile := filepath.Join(f.root, ".brainsurgeon", "api.key")
	const key = "0123456789abcdef0123456789abcdef"
	writeKey(t, keyFile, key, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), UI: ui.Handler(),
		KeyFile: keyFile, AutoRefreshMS: 1000})
	ctx, problems := newTab(t, browserCtx)

	do(t, ctx, "open the UI", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "the key dialog", `document.getElementById('key-dialog').open`)
	waitFor(t, ctx, "the key file in the dialog", `document.getElementById('key-where').textContent.includes(`+jsString("cat "+keyFile)+`)`)
	text := eval[string](t, ctx, `document.getElementById('key-dialog').textContent`)
	if !strings.Contains(text, "The key is the first line of "+keyFile) || strings.Contains(text, "BRAINSURGEON_API_KEYS") {
		t.Errorf("the key dialog says %q, want the key file and how to read it", text)
	}
	if strings.Contains(text, key) {
		t.Errorf("the key dialog shows the key: %q", text)
	}
	screenshot(t, ctx, "ui-key-file.png", false)
	do(t, ctx, "enter the key", chromedp.SetValue(`#key-input`, key), chromedp.Click(`#key-form button[type=submit]`))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('key-dialog').open`)
	if !eval[bool](t, ctx, `document.getElementById('plugin-banner').hidden`) {
		t.Error("the plugin banner shows before any plugin call")
	}

	// The plugin calls with a stale key: the banner names the failure and
	// the fix at the next refresh.
	stale := &client{tb: t, srv: srv, key: "a-stale-key"}
	stale.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 403, nil)
	waitFor(t, ctx, "the plugin banner", `!document.getElementById('plugin-banner').hidden`)
	banner := eval[string](t, ctx, `document.getElementById('plugin-banner').textContent`)
	for _, want := range []string{"The plugin's last calls failed: invalid API key (HTTP 403",
		"Fix: the plugin's key does not match the daemon's: run brainsurgeon openclaw status."} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner says %q, want %q", banner, want)
		}
	}
	screenshot(t, ctx, "ui-plugin-banner.png", false)
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// testWaiting opens the UI while the daemon waits for the agents dir,
// then swaps in the API as serve does: the page shows the sessions by
// itself.
func testWaiting(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	var cur atomic.Pointer[http.Handler]
	set := func(h http.Handler) { cur.Store(&h) }
	set(api.Waiting(api.WaitingOptions{AgentsDir: f.agents, UI: ui.Handler()}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*cur.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	ctx, problems := newTab(t, browserCtx)

	do(t, ctx, "open the UI", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "the waiting page", `document.getElementById('waiting')`)
	if text := eval[string](t, ctx, `document.getElementById('waiting').textContent`); !strings.Contains(text, "waiting for OpenClaw to create the agents dir "+f.agents+" (it does at the first turn)") {
		t.Errorf("the waiting page says %q, want the agents dir %s", text, f.agents)
	}
	screenshot(t, ctx, "ui-waiting.png", false)
	h, err := api.New(api.Options{Installation: f.set.Installation, Backend: f.set, UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	set(h)
	do(t, ctx, "see the sessions", chromedp.WaitVisible(`tr[data-session="`+f.synthIDs[0]+`"]`))
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}
