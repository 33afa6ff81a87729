package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/atonce"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

// inCI reports whether the test runs in CI, where a missing browser is a
// failure and not a skip.
func inCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// chromiumPath finds the browser: $BRAINSURGEON_CHROMIUM, else Debian's
// chromium (installed by .ci/run), else another Chromium or Chrome on
// PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("BRAINSURGEON_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("BRAINSURGEON_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (looked for /usr/bin/chromium, chromium, chromium-browser, google-chrome on PATH, and $BRAINSURGEON_CHROMIUM); install it with: apt-get install -y chromium"
	if inCI() {
		t.Fatal(msg + " (CI is set: the browser test must run)")
	}
	t.Skip(msg)
	return ""
}

// demoFixture is a demo-like agents dir: two synthetic OpenClaw sessions
// of agent "alpha" with large tool results and thinking, a sessions.json,
// idle, pruned once so that they hold placeholders and side values.
func demoFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{root: root, agents: filepath.Join(root, "agents"), originals: map[string][]byte{}}
	alpha := filepath.Join(f.agents, "alpha", "sessions")
	if err := os.MkdirAll(alpha, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := []synth.Options{
		syntheticThinking(),
		{Size: 40 << 10, Seed: 7, MinResult: 1500, MaxResult: 5000, MinThinking: 800, MaxThinking: 2000},
	}
	for i, o := range opts {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		writeSynth(t, alpha, id, o)
		f.synthIDs = append(f.synthIDs, id)
	}
	writeSessionsJSON(t, alpha, "alpha", f.synthIDs)
	set, err := backend.Open(context.Background(), f.agents, backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	f.set = set
	rep, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("first pass: %v", err)
	}
	for _, s := range rep.Sessions {
		if s.Status != prune.StatusExtracted {
			t.Fatalf("first pass: %s: status %s (%s), want extracted", s.Session, s.Status, s.Note)
		}
	}
	return f
}

// browser starts a headless Chromium with the flags that work on a
// closed network (machine notes) and a fresh profile. Its context is the
// parent of the tabs (newTab).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	// A cap on the whole test, whose tabs share it, not a timing check.
	ctx, cancelTimeout := context.WithTimeout(ctx, 180*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return ctx
}

// newTab opens a tab of the browser for one subtest. The tab collects the
// page's uncaught exceptions and console errors; the returned function
// lists them.
func newTab(t *testing.T, browserCtx context.Context) (context.Context, func() []string) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			msg = "uncaught exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			msg = "console.error:"
			for _, a := range ev.Args {
				msg += " " + string(a.Value) + a.Description
			}
		default:
			return
		}
		mu.Lock()
		problems = append(problems, msg)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// do runs browser steps and fails the test with what was being done.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// openSession clicks the sessions list's link to session id and waits
// until the session view shows want. The list refreshes itself, and a
// click that lands while its rows are drawn again is lost: the click is
// repeated, up to three times, while the list still shows the link.
func openSession(t *testing.T, ctx context.Context, id, want string) {
	t.Helper()
	link := `tr[data-session="` + id + `"] a.session-link`
	var err error
	for range 3 {
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err = chromedp.Do(tctx, chromedp.Click(link), chromedp.WaitVisible(want))
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		if !eval[bool](t, ctx, `!!document.querySelector(`+jsString(link)+`)`) {
			break
		}
		t.Logf("open session %s: the click was lost (%v); clicking again", id, err)
	}
	if err != nil {
		t.Fatalf("browser: open session %s and see %s: %v", id, want, err)
	}
}

// eval evaluates a JavaScript expression and decodes its value.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it is truthy.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("browser: waiting for %s (%s): %v", what, expr, err)
	}
}

// screenshot saves a full-page PNG to $BRAINSURGEON_UI_SCREENSHOTS (a
// directory) or to the test's temp dir.
// A full screenshot covers the whole page, else the viewport.
func screenshot(t *testing.T, ctx context.Context, name string, full bool) string {
	t.Helper()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv("BRAINSURGEON_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", p, len(png))
	return p
}

// jsString quotes s for JavaScript (JSON strings are JavaScript strings).
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// extractedValue is one value of GET …/extracted.
type extractedValue struct {
	Path      string `json:"path"`
	Size      int    `json:"size"`
	Chars     int    `json:"chars"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated"`
}

// TestUIInBrowser drives the web UI in a real headless Chromium against real
// servers on loopback, one tab per subtest.
func TestUIInBrowser(t *testing.T) {
	t.Parallel()
	b := browser(t)
	inTabs(t, b, []browserTest{
		{"ValueRestoreSettings", testValueRestoreSettings},
		{"KeyExtractableRefreshTrash", testKeyExtractableRefreshTrash},
		{"Errors", testErrors},
		{"ReadOnly", testReadOnly},
		{"OpenNotice", testOpenNotice},
		{"LostValues", testLostValues},
		{"DemoDaemon", testDemoDaemon},
		{"Compaction", testCompaction},
		{"UsageAndDisk", testUsageAndDisk},
		{"EngineLine", testEngineLine},
		{"DoctorHealth", testDoctorHealth},
	})
}

// browserTest is a subtest that drives its own fixture, server and tab of
// a shared browser.
type browserTest struct {
	name string
	run  func(t *testing.T, browserCtx context.Context)
}

// inTabs runs the subtests four at a time, each in its own tab of the
// browser of browserCtx: they mostly wait for the browser and the pages'
// timers, not for a CPU.
func inTabs(t *testing.T, browserCtx context.Context, tests []browserTest) {
	var cases []atonce.Case
	for _, tt := range tests {
		cases = append(cases, atonce.Case{Name: tt.name, Run: func(t *testing.T) { tt.run(t, browserCtx) }})
	}
	atonce.Run(t, 4, cases)
}

// testValueRestoreSettings opens an extracted badge and sees the value
// (preview, then all of it), restores the entry and checks that the bytes
// are back in the transcript, changes a setting and sees it saved,
// triggers a validation error and sees the field's message, and saves
// screenshots.
func testValueRestoreSettings(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f), UI: ui.Handler(), AutoRefreshMS: 1000, Version: "test"})
	c := &client{tb: t, srv: srv}
	ctx, problems := newTab(t, browserCtx)
	id := f.synthIDs[0] // the session with large thinking blocks

	// The sessions list shows both sessions with their size and tokens.
	do(t, ctx, "open the sessions list", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`tr[data-session="`+id+`"] a.session-link`))
	rowText := eval[string](t, ctx, `document.querySelector('tr[data-session="`+id+`"]').innerText`)
	if !strings.Contains(rowText, "KB") || !strings.Contains(rowText, "alpha") && !strings.Contains(rowText, id) {
		t.Errorf("session row %q: want its size in KB and its name", rowText)
	}

	screenshot(t, ctx, "ui-sessions.png", false)
	// Find: only the matching session stays.
	do(t, ctx, "filter the sessions", chromedp.SendKeys(`#session-filter`, id[len(id)-4:]))
	waitFor(t, ctx, "one row", `document.querySelectorAll('tr[data-session]').length === 1`)
	do(t, ctx, "clear the filter", chromedp.Evaluate[chromedp.Void](
		`(() => { const i = document.getElementById('session-filter'); i.value = ''; i.dispatchEvent(new Event('input')); })()`))
	waitFor(t, ctx, "both rows", `document.querySelectorAll('tr[data-session]').length === 2`)

	// The session view shows extracted badges.
	openSession(t, ctx, id, `button.badge-extracted`)
	screenshot(t, ctx, "ui-session-top.png", false)
	// The header's context tokens are the context panel's: one figure,
	// and the last recorded usage is labelled as such.
	var st compact.StatusReport
	c.json("GET", "/api/sessions/alpha/"+id+"/context/status", "", 200, &st)
	waitFor(t, ctx, "the token gauge", `document.getElementById('token-gauge') !== null`)
	head := eval[map[string]string](t, ctx, `(() => { const out = {};
		for (const dt of document.querySelectorAll('dl.meta dt')) out[dt.textContent] = dt.nextElementSibling.textContent;
		out.gauge = document.getElementById('token-gauge').dataset.tokens; return out; })()`)
	if head["Next turn's context (estimated)"] != commas(st.Tokens)+" tokens" || head["gauge"] != fmt.Sprint(st.Tokens) || head["Last turn's recorded usage"] == "" || head["Tokens"] != "" {
		t.Errorf("session header %v, want the next turn's context %s tokens (the gauge's) and the last turn's recorded usage", head, commas(st.Tokens))
	}
	type badgeInfo struct {
		Path  string `json:"path"`
		Entry string `json:"entry"`
		Count int    `json:"count"`
	}
	// A thinking value, if any (the session was made for them).
	badge := eval[badgeInfo](t, ctx, `(() => {
		const all = [...document.querySelectorAll('button.badge-extracted')];
		const b = all.find((x) => x.dataset.path.endsWith('/thinking')) || all[0];
		return {path: b.dataset.path, entry: b.closest('li.entry').dataset.entryId, count: all.length};
	})()`)
	if badge.Entry == "" || badge.Path == "" {
		t.Fatalf("badge without entry or path: %+v", badge)
	}
	t.Logf("%d extracted badges; opening %s %s", badge.Count, badge.Entry, badge.Path)
	base := "/api/sessions/alpha/" + id + "/entries/" + badge.Entry + "/extracted?key=" + url.QueryEscape(badge.Path)
	var preview, full struct {
		Values []extractedValue `json:"values"`
	}
	c.json("GET", base+"&preview=200", "", 200, &preview)
	c.json("GET", base, "", 200, &full)
	if len(preview.Values) != 1 || len(full.Values) != 1 || !preview.Values[0].Truncated {
		t.Fatalf("API: want one truncated preview and one full value, got %+v / %d values", preview.Values, len(full.Values))
	}
	_, rawValue, _ := c.do("GET", base+"&raw=true", "")

	entrySel := `li.entry[data-entry-id=` + jsString(badge.Entry) + `]`
	badgeSel := entrySel + ` button.badge-extracted[data-path=` + jsString(badge.Path) + `]`
	panel := `document.getElementById(document.querySelector(` + jsString(badgeSel) + `).getAttribute('aria-controls'))`
	do(t, ctx, "open the badge", chromedp.Click(badgeSel))
	waitFor(t, ctx, "the value's preview", panel+`.querySelector('.value-text')`)
	got := eval[string](t, ctx, panel+`.querySelector('.value-text').textContent`)
	if got != preview.Values[0].Content {
		t.Errorf("preview shown:\n%q\nwant the API's first 200 characters:\n%q", got, preview.Values[0].Content)
	}
	if size := eval[string](t, ctx, panel+`.querySelector('.value-size').dataset.bytes`); size != fmt.Sprint(full.Values[0].Size) {
		t.Errorf("value size shown %s bytes, want %d", size, full.Values[0].Size)
	}
	// The rest on demand.
	do(t, ctx, "show the whole value", chromedp.Click(entrySel+` .value-panel:not([hidden]) button.show-all`))
	waitFor(t, ctx, "the whole value", `!`+panel+`.querySelector('button.show-all')`)
	got = eval[string](t, ctx, panel+`.querySelector('.value-text').textContent`)
	if got != full.Values[0].Content {
		t.Errorf("whole value shown (%d chars), want the API's content (%d chars)", len(got), len(full.Values[0].Content))
	}
	do(t, ctx, "scroll to the badge", chromedp.ScrollIntoView(badgeSel),
		chromedp.Evaluate[chromedp.Void](`window.scrollBy(0, -120)`))
	screenshot(t, ctx, "ui-session.png", false)

	// Restore: the bytes come back into the transcript.
	transcript := filepath.Join(f.agents, "alpha", "sessions", id+".jsonl")
	before, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	placeholder := []byte("[[extracted-" + badge.Entry + "]]")
	if !bytes.Contains(before, placeholder) {
		t.Fatalf("transcript has no placeholder of %s before the restore", badge.Entry)
	}
	do(t, ctx, "restore the entry", chromedp.Click(entrySel+` button.restore`))
	waitFor(t, ctx, "the restore note", `document.querySelector(`+jsString(entrySel+` .restore-note`)+`)`)
	note := eval[string](t, ctx, `document.querySelector(`+jsString(entrySel+` .restore-note`)+`).textContent`)
	if !strings.Contains(note, "Restored") {
		t.Errorf("restore note %q: want Restored", note)
	}
	waitFor(t, ctx, "the badge to go", `!document.querySelector(`+jsString(badgeSel)+`)`)
	do(t, ctx, "scroll to the restored entry", chromedp.ScrollIntoView(entrySel),
		chromedp.Evaluate[chromedp.Void](`window.scrollBy(0, -120)`))
	screenshot(t, ctx, "ui-restored.png", false)
	after, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(after, placeholder) {
		t.Errorf("transcript still holds %s after the restore", placeholder)
	}
	if len(rawValue) < 200 || !bytes.Contains(after, rawValue) {
		t.Errorf("transcript does not hold the value's original bytes (%d bytes) after the restore", len(rawValue))
	}

	// Settings: a change is saved.
	do(t, ctx, "open the settings", chromedp.Evaluate[chromedp.Void](`location.hash = '#/settings'`),
		chromedp.WaitVisible(`#cfg-keep_recent`))
	do(t, ctx, "change keep_recent", chromedp.SetValue(`#cfg-keep_recent`, "7"), chromedp.Click(`#settings-form button[type=submit]`))
	waitFor(t, ctx, "the saved message", `document.querySelector('#settings-status.saved')`)
	var cfg struct {
		KeepRecent int    `json:"keep_recent"`
		Retention  string `json:"retention"`
	}
	c.json("GET", "/api/config", "", 200, &cfg)
	if cfg.KeepRecent != 7 {
		t.Errorf("GET /api/config keep_recent = %d after saving 7 in the UI", cfg.KeepRecent)
	}
	retention := cfg.Retention

	// A bad value: the field's message from the 400 answer, nothing saved.
	do(t, ctx, "enter a bad retention", chromedp.SetValue(`#cfg-retention`, "5x"), chromedp.Click(`#settings-form button[type=submit]`))
	waitFor(t, ctx, "the retention message", `document.querySelector('#err-retention').textContent !== ''`)
	msg := eval[string](t, ctx, `document.querySelector('#err-retention').textContent`)
	var bad struct {
		Fields map[string]string `json:"fields"`
	}
	c.json("POST", "/api/config", `{"retention":"5x"}`, 400, &bad)
	if want := bad.Fields["retention"]; want == "" || msg != want {
		t.Errorf("UI shows %q under retention, want the API's message %q", msg, want)
	}
	if inv := eval[string](t, ctx, `document.querySelector('#cfg-retention').getAttribute('aria-invalid') || ''`); inv != "true" {
		t.Errorf("retention input aria-invalid = %q, want true", inv)
	}
	c.json("GET", "/api/config", "", 200, &cfg)
	if cfg.Retention != retention || cfg.KeepRecent != 7 {
		t.Errorf("after the refused save: retention %q keep_recent %d, want %q and 7", cfg.Retention, cfg.KeepRecent, retention)
	}
	do(t, ctx, "scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	screenshot(t, ctx, "ui-settings.png", true)

	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// testKeyExtractableRefreshTrash covers the API key dialog (a wrong key
// is refused with the server's message, the right one is kept in
// sessionStorage and sent), the extractable setting, the auto-refresh
// picking up a change made through the API, and the trash (delete,
// restore, delete forever).
func testKeyExtractableRefreshTrash(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	const key = "s3cret-key"
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f), UI: ui.Handler(),
		APIKeys: []string{key}, AutoRefreshMS: 1000})
	c := &client{tb: t, srv: srv, key: key}
	ctx, problems := newTab(t, browserCtx)
	id := f.synthIDs[1]
	transcript := filepath.Join(f.agents, "alpha", "sessions", id+".jsonl")

	// The key dialog: a wrong key, then the right one.
	do(t, ctx, "open the UI", chromedp.Navigate(srv.URL+"/"))
	waitFor(t, ctx, "the key dialog", `document.getElementById('key-dialog').open`)
	do(t, ctx, "enter a wrong key", chromedp.SendKeys(`#key-input`, "wrong"), chromedp.Click(`#key-form button[type=submit]`))
	waitFor(t, ctx, "the refusal", `document.getElementById('key-error').textContent.includes('invalid API key')`)
	screenshot(t, ctx, "ui-key.png", false)
	do(t, ctx, "enter the key", chromedp.SetValue(`#key-input`, key), chromedp.Click(`#key-form button[type=submit]`))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('key-dialog').open`)
	do(t, ctx, "see the sessions", chromedp.WaitVisible(`tr[data-session="`+id+`"] a.session-link`))
	if got := eval[string](t, ctx, `sessionStorage.getItem('brainsurgeon_api_key')`); got != key {
		t.Errorf("sessionStorage key = %q", got)
	}

	// Extractable: "never" is written into the entry.
	openSession(t, ctx, id, `select.extractable`)
	entry := eval[string](t, ctx, `(() => {
		const li = [...document.querySelectorAll('li.entry')].find((li) => li.querySelector('select.extractable') && !li.querySelector('button.badge-extracted'));
		const sel = li.querySelector('select.extractable');
		sel.value = 'false';
		sel.dispatchEvent(new Event('change'));
		return li.dataset.entryId;
	})()`)
	entrySel := `li.entry[data-entry-id=` + jsString(entry) + `]`
	waitFor(t, ctx, "the extractable note", `document.querySelector(`+jsString(entrySel+` .note`)+`)`)
	b, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if line := lineOf(b, entry); !strings.Contains(line, `"_extractable":false`) {
		t.Errorf("entry %s after choosing never: %.200s…, want \"_extractable\":false", entry, line)
	}
	if v := eval[string](t, ctx, `document.querySelector(`+jsString(entrySel+` select.extractable`)+`).value`); v != "false" {
		t.Errorf("the select shows %q after the refresh, want false", v)
	}

	// Auto-refresh: a restore made through the API shows without a reload.
	badgeEntry := eval[string](t, ctx, `document.querySelector('button.badge-extracted').closest('li.entry').dataset.entryId`)
	c.json("POST", "/api/sessions/alpha/"+id+"/entries/"+badgeEntry+"/restore", "{}", 200, nil)
	waitFor(t, ctx, "the refresh to drop the restored badge",
		`!document.querySelector(`+jsString(`li.entry[data-entry-id=`+jsString(badgeEntry)+`] button.badge-extracted`)+`)`)

	// Trash: delete from the session view, restore, delete forever.
	do(t, ctx, "move the session to the trash", chromedp.Click(`.view-head button.danger`))
	waitFor(t, ctx, "the confirm dialog", `document.getElementById('confirm-dialog').open`)
	do(t, ctx, "confirm", chromedp.Click(`#confirm-ok`))
	waitFor(t, ctx, "the trash view", `location.hash === '#/trash' && document.querySelector('tr[data-session="`+id+`"]')`)
	if _, err := os.Stat(transcript); !os.IsNotExist(err) {
		t.Fatalf("transcript after the delete: %v, want it gone", err)
	}
	screenshot(t, ctx, "ui-trash.png", false)
	do(t, ctx, "restore from the trash", chromedp.Click(`tr[data-session="`+id+`"] button.primary`))
	waitFor(t, ctx, "the empty trash", `!document.querySelector('tr[data-session="`+id+`"]')`)
	if _, err := os.Stat(transcript); err != nil {
		t.Fatalf("transcript after the restore from the trash: %v", err)
	}
	c.json("DELETE", "/api/sessions/alpha/"+id, "", 200, nil)
	waitFor(t, ctx, "the refresh to show it again", `document.querySelector('tr[data-session="`+id+`"]')`)
	do(t, ctx, "delete forever", chromedp.Click(`tr[data-session="`+id+`"] button.danger`))
	waitFor(t, ctx, "the confirm dialog", `document.getElementById('confirm-dialog').open`)
	do(t, ctx, "confirm", chromedp.Click(`#confirm-ok`))
	waitFor(t, ctx, "the row to go", `!document.querySelector('tr[data-session="`+id+`"]')`)
	var trash []trashItem
	c.json("GET", "/api/trash", "", 200, &trash)
	if len(trash) != 0 {
		t.Errorf("trash after delete forever: %+v", trash)
	}

	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// testErrors checks that the API's error messages reach the page: a
// server without a Daemon or Trash answers 501, which the settings and
// trash views show with the server's reason; a missing session is a 404.
func testErrors(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, UI: ui.Handler(), AutoRefreshMS: 1000})
	ctx, problems := newTab(t, browserCtx)
	do(t, ctx, "open the settings", chromedp.Navigate(srv.URL+"/#/settings"))
	// The config and the scheduler status both fail; either box may come
	// first.
	configBox := `[...document.querySelectorAll('.error-box')].find((b) => b.textContent.includes('Could not load the config'))`
	waitFor(t, ctx, "the config error", `(`+configBox+`)?.textContent.includes('api.Options.Daemon')`)
	msg := eval[string](t, ctx, `(`+configBox+`).textContent`)
	if !strings.Contains(msg, "HTTP 501") || !strings.Contains(msg, "Could not load the config") {
		t.Errorf("settings error %q: want what failed, the server's reason and HTTP 501", msg)
	}
	do(t, ctx, "open the trash", chromedp.Evaluate[chromedp.Void](`location.hash = '#/trash'`))
	waitFor(t, ctx, "the trash error", `document.querySelector('.error-box') && document.querySelector('.error-box').textContent.includes('api.Options.Trash')`)
	do(t, ctx, "open a missing session", chromedp.Evaluate[chromedp.Void](`location.hash = '#/session/alpha/nope'`))
	waitFor(t, ctx, "the 404", `document.querySelector('.error-box') && document.querySelector('.error-box').textContent.includes('HTTP 404')`)
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// testReadOnly checks that a read-only server's UI says so and offers no
// write: every write button and the settings' save are disabled.
func testReadOnly(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f), UI: ui.Handler(), ReadOnly: true})
	ctx, problems := newTab(t, browserCtx)
	id := f.synthIDs[0]
	do(t, ctx, "open the session", chromedp.Navigate(srv.URL+"/#/session/alpha/"+id), chromedp.WaitVisible(`button.badge-extracted`))
	if banner := eval[string](t, ctx, `document.getElementById('banner').hidden ? '' : document.getElementById('banner').textContent`); !strings.Contains(banner, "Read-only") {
		t.Errorf("banner %q, want the read-only notice", banner)
	}
	enabled := eval[[]string](t, ctx, `[...document.querySelectorAll('button.restore, .view-head button, select.extractable')].filter((b) => !b.disabled).map((b) => b.textContent)`)
	if len(enabled) > 0 {
		t.Errorf("write controls enabled in read-only mode: %q", enabled)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('button.restore').length`); n == 0 {
		t.Error("no restore button shown (disabled) in read-only mode")
	}
	do(t, ctx, "open the settings", chromedp.Evaluate[chromedp.Void](`location.hash = '#/settings'`), chromedp.WaitVisible(`#cfg-keep_recent`))
	if !eval[bool](t, ctx, `document.querySelector('#settings-form button[type=submit]').disabled`) {
		t.Error("settings can be saved in read-only mode")
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// testLostValues runs retention past every value's age: the session view
// says how many values are lost, and opening a badge shows the API's 404
// with its reason instead of a value.
func testLostValues(t *testing.T, browserCtx context.Context) {
	f := demoFixture(t)
	clock := &testClock{}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemonAt(t, f.set, clock), UI: ui.Handler()})
	c := &client{tb: t, srv: srv}
	clock.setNow(func() time.Time { return time.Now().Add(72 * time.Hour) })
	var ret struct {
		Report retentionStats `json:"report"`
	}
	c.json("POST", "/api/retention/run", "", 200, &ret)
	if ret.Report.Cleaned == 0 {
		t.Fatalf("retention deleted nothing: %+v", ret.Report)
	}
	ctx, problems := newTab(t, browserCtx)
	id := f.synthIDs[0]
	do(t, ctx, "open the session", chromedp.Navigate(srv.URL+"/#/session/alpha/"+id), chromedp.WaitVisible(`button.badge-extracted`))
	waitFor(t, ctx, "the lost count", `document.querySelector('.side-line .pill.err')`)
	if got := eval[string](t, ctx, `document.querySelector('.side-line .pill.err').textContent`); !strings.Contains(got, "lost") {
		t.Errorf("lost pill %q", got)
	}
	do(t, ctx, "open a badge", chromedp.Click(`button.badge-extracted`))
	waitFor(t, ctx, "the panel's error", `document.querySelector('.value-panel .error-box')`)
	msg := eval[string](t, ctx, `document.querySelector('.value-panel .error-box').textContent`)
	if !strings.Contains(msg, "HTTP 404") || !strings.Contains(msg, "retention") {
		t.Errorf("panel error %q: want the API's 404 and its reason", msg)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// lineOf returns the transcript line of an entry id.
func lineOf(b []byte, id string) string {
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"id":"`+id+`"`) {
			return l
		}
	}
	return ""
}

// testDemoDaemon drives the UI served the way `brainsurgeon serve --demo`
// serves it: the demo agents dir (internal/demo), the real daemon with
// pruning enabled and a first pass, and its handler (real config service,
// trash and retention). It opens an extracted badge and sees the content,
// restores it, changes a setting and sees it saved, and moves a session
// to the trash and back.
func testDemoDaemon(t *testing.T, browserCtx context.Context) {
	ctx := context.Background()
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Retention: daemon.Retention(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Config().Set(ctx, []byte(`{"enabled": true}`)); err != nil {
		t.Fatal(err)
	}
	if r, err := d.RunPruneNow(ctx); err != nil || r.Values == 0 {
		t.Fatalf("demo: first pass: %+v, %v", r, err)
	}
	srv := httptest.NewServer(daemonHandler(t, d, api.Options{AutoRefreshMS: 1000, UI: ui.Handler()}))
	defer srv.Close()
	c := &client{tb: t, srv: srv}
	tab, problems := newTab(t, browserCtx)
	s := sessions[0]

	do(t, tab, "open the sessions list", chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(`tr[data-session="`+s.ID+`"] a.session-link`))
	openSession(t, tab, s.ID, `button.badge-extracted`)
	entry := eval[string](t, tab, `document.querySelector('button.badge-extracted').closest('li.entry').dataset.entryId`)
	path := eval[string](t, tab, `document.querySelector('button.badge-extracted').dataset.path`)
	entrySel := `li.entry[data-entry-id=` + jsString(entry) + `]`
	badgeSel := entrySel + ` button.badge-extracted[data-path=` + jsString(path) + `]`
	panel := `document.getElementById(document.querySelector(` + jsString(badgeSel) + `).getAttribute('aria-controls'))`
	var preview struct {
		Values []extractedValue `json:"values"`
	}
	c.json("GET", "/api/sessions/"+s.Agent+"/"+s.ID+"/entries/"+entry+"/extracted?preview=200&key="+url.QueryEscape(path), "", 200, &preview)
	do(t, tab, "open the badge", chromedp.Click(badgeSel))
	waitFor(t, tab, "the value's preview", panel+`.querySelector('.value-text')`)
	if got := eval[string](t, tab, panel+`.querySelector('.value-text').textContent`); len(preview.Values) != 1 || got != preview.Values[0].Content {
		t.Errorf("preview shown %q, want the API's %+v", got, preview.Values)
	}
	screenshot(t, tab, "ui-demo-value.png", false)

	before, _ := os.ReadFile(s.Path)
	placeholder := []byte("[[extracted-" + entry + "]]")
	if !bytes.Contains(before, placeholder) {
		t.Fatalf("the demo transcript has no placeholder of %s", entry)
	}
	do(t, tab, "restore the entry", chromedp.Click(entrySel+` button.restore`))
	waitFor(t, tab, "the badge to go", `!document.querySelector(`+jsString(badgeSel)+`)`)
	if after, _ := os.ReadFile(s.Path); bytes.Contains(after, placeholder) {
		t.Errorf("the transcript still holds %s after the restore", placeholder)
	}

	do(t, tab, "open the settings", chromedp.Evaluate[chromedp.Void](`location.hash = '#/settings'`),
		chromedp.WaitVisible(`#cfg-keep_recent`))
	checkJobsTable(t, tab, d)
	do(t, tab, "change keep_recent", chromedp.SetValue(`#cfg-keep_recent`, "5"), chromedp.Click(`#settings-form button[type=submit]`))
	waitFor(t, tab, "the saved message", `document.querySelector('#settings-status.saved')`)
	if got := d.Config().Get().KeepRecent; got != 5 {
		t.Errorf("the daemon's config has keep_recent %d after saving 5 in the UI", got)
	}

	do(t, tab, "back to the session", chromedp.Evaluate[chromedp.Void](`history.back()`),
		chromedp.WaitVisible(`.view-head button.danger`))
	do(t, tab, "move the session to the trash", chromedp.Click(`.view-head button.danger`))
	waitFor(t, tab, "the confirm dialog", `document.getElementById('confirm-dialog').open`)
	do(t, tab, "confirm", chromedp.Click(`#confirm-ok`))
	waitFor(t, tab, "the trash view", `location.hash === '#/trash' && document.querySelector('tr[data-session="`+s.ID+`"]')`)
	if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("transcript after the delete: %v, want it gone", err)
	}
	screenshot(t, tab, "ui-demo-trash.png", false)
	do(t, tab, "restore from the trash", chromedp.Click(`tr[data-session="`+s.ID+`"] button.primary`))
	waitFor(t, tab, "the empty trash", `!document.querySelector('tr[data-session="`+s.ID+`"]')`)
	if _, err := os.Stat(s.Path); err != nil {
		t.Fatalf("transcript after the restore from the trash: %v", err)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the page reported errors:\n%s", strings.Join(p, "\n"))
	}
}

// checkJobsTable checks the settings' scheduled jobs against the daemon:
// a table with one row per job, its cron text, and the last pruning
// run's result as counts (the first pass ran), not a JSON dump; no field
// for the obsolete scan interval, and the minimum length in bytes.
func checkJobsTable(t *testing.T, tab context.Context, d *daemon.Daemon) {
	t.Helper()
	waitFor(t, tab, "the jobs table", `document.querySelector('table.jobs-table tr[data-job="prune"]')`)
	st := d.Status()
	for _, j := range []daemon.JobStatus{st.Prune, st.Retention} {
		row := `document.querySelector('table.jobs-table tr[data-job=` + jsString(j.Name) + `]')`
		if got := eval[string](t, tab, row+`.querySelector('td.schedule').textContent`); got != j.Cron {
			t.Errorf("job %s: schedule %q, want the config's %q", j.Name, got, j.Cron)
		}
	}
	result := eval[string](t, tab, `document.querySelector('table.jobs-table tr[data-job="prune"] td.last-result').textContent`)
	r, _ := st.Prune.LastResult.(*daemon.PruneResult)
	if r == nil || !strings.HasPrefix(result, "ok") || !strings.Contains(result, commas(r.Values)+" values") {
		t.Errorf("last pruning result shown %q, want ok with the run's %+v", result, r)
	}
	if eval[bool](t, tab, `!!document.querySelector('.jobs-panel pre')`) {
		t.Error("the scheduled jobs are shown as JSON")
	}
	if eval[bool](t, tab, `!!document.querySelector('#cfg-scan_interval_seconds')`) {
		t.Error("the settings still offer the scan interval, which nothing reads")
	}
	if got := eval[string](t, tab, `document.querySelector('label[for="cfg-min_value_length"]').textContent`); !strings.Contains(got, "bytes") {
		t.Errorf("min_value_length label %q, want its unit, bytes", got)
	}
	screenshot(t, tab, "ui-settings-jobs.png", true)
}
