// Package ui is BrainSurgeon's web UI: a few static files (HTML, CSS and
// JavaScript modules, no front-end build and nothing fetched from elsewhere)
// embedded in the binary with go:embed, served by Handler. Mount it as
// api.Options.UI: the API serves /api/ and hands every other path to the UI.
//
// The UI talks to the API of the same origin only. It shows the sessions
// of each agent with their size and tokens; a session's entries with
// their role and type and an "extracted" badge per extracted value, whose
// preview (the first 200 characters, ?preview=200) and full content are
// fetched on demand; a restore button per entry and for the whole session;
// the entry's "_extractable" setting; the runtime config with the
// validation message of each field; the scheduler's jobs; and the trash.
// It refreshes every auto_refresh_interval_ms (GET /api/config/env, that
// is api.Options.AutoRefreshMS). When GET /api/auth-info says a key is
// required it asks for one, keeps it in the tab's sessionStorage and sends
// it as X-API-Key; its dialog says where the key is (the key file and how to
// read it, from GET /api/auth-info). A banner says when the OpenClaw
// plugin's last calls failed, with the fix (GET /api/health "plugin"), and
// while the daemon waits for OpenClaw to create the agents dir the page says
// so and opens by itself once it exists. Every error the API answers is shown; every value is
// rendered as text (no HTML is built from data), and the pages are served
// with a Content-Security-Policy that allows only the UI's own files.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed static
var static embed.FS

// FS returns the UI's files: index.html at its root, with the scripts,
// the style sheet and the icon beside it.
func FS() fs.FS {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		// "static" is embedded above: fs.Sub only fails on a bad name.
		return static
	}
	return sub
}

// ContentSecurityPolicy is sent with every file of the UI: scripts,
// styles, images and requests only from the UI's own origin, no inline
// script, no frames, no plugins.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler returns the http.Handler that serves the UI: "/" is index.html,
// the other files by name. Only GET and HEAD are answered (405 otherwise,
// with Allow); an unknown path is a 404. Every answer carries
// ContentSecurityPolicy, X-Content-Type-Options: nosniff, no referrer, and
// Cache-Control: no-cache, so that a new binary's UI is used at once; the
// content type of each file comes from its extension, not from the
// system's MIME tables.
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: the web UI only answers GET and HEAD", http.StatusMethodNotAllowed)
			return
		}
		// Directory listings are not part of the UI.
		if r.URL.Path != "/" && strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		// The types are set here, not looked up in the system's MIME
		// tables, which differ between machines (a module script needs
		// a JavaScript type).
		if ct, ok := contentTypes[path.Ext(r.URL.Path)]; ok {
			h.Set("Content-Type", ct)
		}
		files.ServeHTTP(w, r)
	})
}

// contentTypes are the types of the UI's files by extension.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}
