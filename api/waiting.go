package api

import (
	"fmt"
	"net/http"
	"os"
	"strings"
)

// WaitingOptions configure Waiting.
type WaitingOptions struct {
	// AgentsDir is the agents dir waited for.
	AgentsDir string
	// KeyFile is the key file the API will use (Options.KeyFile), "" for
	// none; its path is reported, never a key.
	KeyFile string
	// AuthRequired says whether the API will need a key (APIKeys are
	// set); it will also when KeyFile exists, which is checked at each
	// health request.
	AuthRequired bool
	// ReadOnly and Version are reported as by the API.
	ReadOnly bool
	Version  string
	// UI, when not nil, serves every path outside /api/ (the web UI, which
	// shows the waiting message).
	UI http.Handler
}

// WaitingFor is the "waiting_for" of GET /api/health while a daemon waits
// for the agents dir dir.
func WaitingFor(dir string) string {
	return fmt.Sprintf("the agents dir %s: OpenClaw creates it at the first turn", dir)
}

// Waiting returns the handler a daemon serves while the agents dir does
// not exist yet (a fresh OpenClaw creates it at the first turn): GET
// /api/health answers 200 with "status": "waiting" and what it waits for;
// every other /api/ path answers 503 {"error": "…", "waiting": true}, which
// the plugin passes through (it fails open); other paths go to opts.UI.
// The caller replaces it by New's handler once the dir exists.
func Waiting(opts WaitingOptions) http.Handler {
	msg := fmt.Sprintf("BrainSurgeon is waiting for OpenClaw to create the agents dir %s (at the first turn): nothing is served before it exists", opts.AgentsDir)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api := strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" || r.URL.Path == "/auth-info"
		switch {
		case r.URL.Path == "/api/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			auth := opts.AuthRequired
			if _, err := os.Stat(opts.KeyFile); opts.KeyFile != "" && err == nil {
				auth = true
			}
			writeJSON(w, http.StatusOK, map[string]any{"status": "waiting", "waiting_for": WaitingFor(opts.AgentsDir),
				"version": opts.Version, "agents_dir": opts.AgentsDir, "key_file": opts.KeyFile,
				"auth_required": auth, "open": !auth, "read_only": opts.ReadOnly, "backends": []string{},
				"plugin": PluginHealth{RecentFailures: []PluginFailure{}}})
		case api || opts.UI == nil:
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": msg, "waiting": true})
		default:
			opts.UI.ServeHTTP(w, r)
		}
	})
}
