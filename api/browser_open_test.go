package api_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/chromedp/chromedp"
)

// testOpenNotice opens the UI of a server whose key file does not exist
// yet: the page shows the server's "API is open" notice. Once the file is
// written, the next refresh is refused: the notice goes, and the key
// dialog opens.
func testOpenNotice(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	keyFile := filepath.Join(f.root, ".brainsurgeon", "api.key")
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, UI: ui.Handler(), KeyFile: keyFile, KeyFileInterval: -1, AutoRefreshMS: 1000})
	ctx, problems := newTab(t, browserCtx)
	do(t, ctx, "open the sessions list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`tr[data-session] a.session-link`))
	banner := `document.getElementById('open-banner').hidden ? '' : document.getElementById('open-banner').textContent`
	if got := eval[string](t, ctx, banner); got != api.OpenNotice(keyFile) {
		t.Errorf("open banner %q, want the server's notice %q", got, api.OpenNotice(keyFile))
	}
	if eval[bool](t, ctx, `document.getElementById('key-dialog').open`) {
		t.Error("the key dialog is open on an open API")
	}
	writeKey(t, keyFile, "the-new-key", false)
	waitFor(t, ctx, "the key dialog", `document.getElementById('key-dialog').open`)
	if got := eval[string](t, ctx, banner); got != "" {
		t.Errorf("open banner %q once a key is required, want it hidden", got)
	}
	if eval[bool](t, ctx, `document.getElementById('key-button').hidden`) {
		t.Error("the key button is hidden once a key is required")
	}
	for _, p := range problems() {
		if !strings.Contains(p, "401") {
			t.Errorf("the page reported an error: %s", p)
		}
	}
}
