package openclawinstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/hostconfig"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// The names of the end-to-end checks of CheckSystem, in the order they
// run.
const (
	CheckPluginInstalled   = "plugin_installed"
	CheckConfigLinksPlugin = "config_links_plugin"
	CheckDaemonReachable   = "daemon_reachable"
	CheckDaemonReady       = "daemon_ready"
	CheckKeyAccepted       = "key_accepted"
	CheckEngineSelected    = "engine_selected"
	CheckEngineServing     = "engine_serving"
	CheckPluginCalls       = "plugin_calls"
)

// HealthTimeout bounds each request CheckSystem and ProbeDaemon make to the
// daemon.
const HealthTimeout = 3 * time.Second

// Check is one end-to-end check of the running system: the plugin, its
// config, the daemon it calls, its key, the context engine.
type Check struct {
	// Name is one of the Check… constants.
	Name string `json:"name"`
	// OK says the check passed.
	OK bool `json:"ok"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do when the check failed ("" when it passed).
	Fix string `json:"fix"`
}

// PluginConfig is the plugin's entry in OpenClaw's config
// (plugins.entries.brainsurgeon).
type PluginConfig struct {
	// DaemonURL and APIKeyFile are its config's daemonUrl and apiKeyFile
	// ("" when not set).
	DaemonURL  string `json:"daemon_url,omitempty"`
	APIKeyFile string `json:"api_key_file,omitempty"`
	// Disabled says the entry has "enabled": false.
	Disabled bool `json:"disabled,omitempty"`
}

// ReadPluginConfig reads the plugin's entry from OpenClaw's config at path
// (JSON or JSON5); ok is false when the file or the entry is missing.
func ReadPluginConfig(path string) (pc PluginConfig, ok bool, err error) {
	b, _, missing, err := readConfig(path)
	if err != nil || missing {
		return PluginConfig{}, false, err
	}
	var c struct {
		Plugins struct {
			Entries map[string]struct {
				Enabled *bool `json:"enabled"`
				Config  struct {
					DaemonURL  any `json:"daemonUrl"`
					APIKeyFile any `json:"apiKeyFile"`
				} `json:"config"`
			} `json:"entries"`
		} `json:"plugins"`
	}
	if err := hostconfig.Decode(b, &c); err != nil {
		return PluginConfig{}, false, fmt.Errorf("OpenClaw config %s: %w", path, err)
	}
	e, ok := c.Plugins.Entries[PluginID]
	if !ok {
		return PluginConfig{}, false, nil
	}
	pc.DaemonURL, _ = e.Config.DaemonURL.(string)
	pc.APIKeyFile, _ = e.Config.APIKeyFile.(string)
	pc.DaemonURL, pc.APIKeyFile = strings.TrimSpace(pc.DaemonURL), strings.TrimSpace(pc.APIKeyFile)
	pc.Disabled = e.Enabled != nil && !*e.Enabled
	return pc, true, nil
}

// DaemonHealth is the daemon's answer to GET /api/health (the members
// CheckSystem reads; an older daemon leaves the newer ones empty).
type DaemonHealth struct {
	// Status is "ok", or "waiting" while OpenClaw has not created the
	// agents dir yet (WaitingFor says what for).
	Status     string `json:"status"`
	Version    string `json:"version,omitempty"`
	WaitingFor string `json:"waiting_for,omitempty"`
	// AgentsDir is the agents dir the daemon serves; KeyFile the key
	// file it reads ("" for none; never a key).
	AgentsDir string `json:"agents_dir,omitempty"`
	KeyFile   string `json:"key_file,omitempty"`
	// PiSessionsDir is the pi sessions dir it serves beside AgentsDir
	// ("" for none, or from a daemon older than the member).
	PiSessionsDir string `json:"pi_sessions_dir,omitempty"`
	AuthRequired  *bool  `json:"auth_required,omitempty"`
	// Plugin is what the daemon saw of the plugin's calls.
	Plugin *PluginActivity `json:"plugin,omitempty"`
	// Engine counts the context engine's assemble calls the daemon
	// answered (nil from a daemon older than the count).
	Engine *EngineActivity `json:"engine,omitempty"`
}

// EngineActivity is the daemon's count of the context engine's assemble
// calls since it started, and their latency ("engine" of GET /api/health
// and GET /api/plugin/v1/health).
type EngineActivity engine.Stats

// String returns "12 views, 1 pass-through, 0 failures since the daemon
// started; assemble p50 3.1 ms, p99 40.2 ms, max 51.0 ms" (the latency
// left out before the first call).
func (a *EngineActivity) String() string {
	s := fmt.Sprintf("%s, %s, %s since the daemon started", plural.Count(a.Views, "view", "views"),
		plural.Count(a.Passthroughs, "pass-through", "pass-throughs"), plural.Count(a.Failures, "failure", "failures"))
	if l := a.LatencyMS; l.Count > 0 {
		s += fmt.Sprintf("; assemble p50 %.1f ms, p99 %.1f ms, max %.1f ms", l.P50, l.P99, l.Max)
	}
	return s
}

// PluginActivity is the daemon's record of the plugin's calls since it
// started.
type PluginActivity struct {
	LastCallAt *time.Time `json:"last_call_at"`
	LastOKAt   *time.Time `json:"last_ok_at"`
	// LastViewAt is the last engine assemble answered with a view.
	LastViewAt *time.Time `json:"last_view_at"`
	Views      int        `json:"views"`
	// RecentFailures are the newest failed plugin calls, newest first.
	RecentFailures []PluginFailure `json:"recent_failures"`
	FailuresTotal  int             `json:"failures_total"`
}

// PluginFailure is one failed plugin call.
type PluginFailure struct {
	At     time.Time `json:"at"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Status int       `json:"status"`
	Error  string    `json:"error"`
}

// String returns "POST /api/plugin/v1/assemble → 403 invalid API key at
// 2026-09-07T10:00:00Z".
func (f PluginFailure) String() string {
	return fmt.Sprintf("%s %s → %d %s at %s", f.Method, f.Path, f.Status, f.Error, f.At.UTC().Format(time.RFC3339))
}

func (e Env) client() *http.Client {
	if e.HTTP != nil {
		return e.HTTP
	}
	return &http.Client{Timeout: HealthTimeout}
}

// getJSON GETs u with the key (when not "") and decodes a 200 answer into
// v; it returns the status and, for another status, the answer's error
// text.
func getJSON(ctx context.Context, c *http.Client, u, key string, v any) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, "", err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return resp.StatusCode, msg, nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return resp.StatusCode, "", fmt.Errorf("expected BrainSurgeon's JSON answer, found %.80q: %v", body, err)
	}
	return resp.StatusCode, "", nil
}

// PluginHealth asks GET <daemonURL>/api/plugin/v1/health with key (the
// plugins' own check that the daemon accepts their key) and decodes a 200
// answer into v. It returns the status and, for another status, the
// answer's error text; err is set when no answer could be read.
func PluginHealth(ctx context.Context, env Env, daemonURL, key string, v any) (code int, msg string, err error) {
	return getJSON(ctx, env.client(), strings.TrimRight(daemonURL, "/")+"/api/plugin/v1/health", key, v)
}

// DaemonState is what ProbeDaemon found at a daemon URL.
type DaemonState string

// The states of a daemon.
const (
	DaemonRunning DaemonState = "running"
	DaemonWaiting DaemonState = "waiting"
	DaemonDown    DaemonState = "not_running"
	// DaemonOther: something answered that is not BrainSurgeon's daemon
	// (or not a healthy one).
	DaemonOther DaemonState = "not_brainsurgeon"
)

// ProbeDaemon asks GET <daemonURL>/api/health. detail says what was found
// (the error, the status) when the state is not DaemonRunning.
func ProbeDaemon(ctx context.Context, env Env, daemonURL string) (DaemonState, *DaemonHealth, string) {
	u := strings.TrimRight(daemonURL, "/") + "/api/health"
	var h DaemonHealth
	code, msg, err := getJSON(ctx, env.client(), u, "", &h)
	switch {
	case err != nil && code == 0:
		return DaemonDown, nil, err.Error()
	case err != nil:
		return DaemonOther, nil, fmt.Sprintf("GET %s: %v", u, err)
	case code != http.StatusOK:
		return DaemonOther, nil, fmt.Sprintf("GET %s answered %d: %s", u, code, msg)
	case h.Status == "waiting":
		return DaemonWaiting, &h, h.WaitingFor
	case h.Status != "ok":
		return DaemonOther, &h, fmt.Sprintf("GET %s answered status %q, expected \"ok\"", u, h.Status)
	}
	return DaemonRunning, &h, ""
}

// ServeAddr returns the --addr that makes brainsurgeon serve listen where
// daemonURL points ("" when that is serve's default, 127.0.0.1:8000).
func ServeAddr(daemonURL string) string {
	u, err := url.Parse(daemonURL)
	if err != nil || u.Host == "" {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "80"
	}
	addr := net.JoinHostPort(host, port)
	if addr == "127.0.0.1:8000" {
		return ""
	}
	return addr
}

// StartCommands are the commands that start the daemon for the agents dir
// agentsDirArg ("" for the default) at daemonURL: run in the foreground,
// or as a user service.
func StartCommands(daemonURL, agentsDirArg string) (serve, service string) {
	flags := ""
	if agentsDirArg != "" {
		flags += " --agents-dir " + shellQuote(agentsDirArg)
	}
	if a := ServeAddr(daemonURL); a != "" {
		flags += " --addr " + a
	}
	return "brainsurgeon serve" + flags, "brainsurgeon service install" + flags
}

// Next says what to run after install or uninstall, by what is running.
type Next struct {
	// Daemon is the state of the daemon at the plugin's daemonUrl.
	Daemon DaemonState `json:"daemon"`
	// Commands are the commands to run next, in order.
	Commands []string `json:"next_commands"`
	// Restart names what must be restarted for the change to take
	// effect ("gateway"); the daemon never needs a restart for a key
	// change (it re-reads the key file within seconds).
	Restart []string `json:"restart"`
	// Notes explain the commands, one sentence each.
	Notes []string `json:"notes,omitempty"`
}

// InstallNext returns what to run after an install that wrote the plugin
// for daemonURL: the daemon's start when it is not running, then the
// gateway's restart (linked: it loads the plugin; not linked: after the
// config is added), then the check.
func InstallNext(ctx context.Context, env Env, daemonURL, agentsDirArg string, linked bool) *Next {
	env = env.withDefaults()
	n := &Next{Restart: []string{}}
	state, h, detail := ProbeDaemon(ctx, env, daemonURL)
	n.Daemon = state
	serve, service := StartCommands(daemonURL, agentsDirArg)
	switch state {
	case DaemonRunning:
		n.Notes = append(n.Notes, fmt.Sprintf("The daemon is running at %s (version %s): it reads the key file by itself within seconds, so it needs no restart.", daemonURL, h.Version))
	case DaemonWaiting:
		n.Notes = append(n.Notes, fmt.Sprintf("The daemon at %s is waiting for OpenClaw to create %s: it serves the sessions by itself as soon as they appear, and reads the key file by itself.", daemonURL, h.AgentsDir))
	case DaemonOther:
		n.Notes = append(n.Notes, fmt.Sprintf("Something at %s is not a healthy BrainSurgeon daemon (%s): stop it, or install again with --daemon-url pointing to a free port.", daemonURL, detail))
	default:
		n.Commands = append(n.Commands, serve)
		n.Notes = append(n.Notes, fmt.Sprintf("No daemon answers at %s: start it with %q (or as a user service that starts at login: %q).", daemonURL, serve, service))
	}
	n.Commands = append(n.Commands, "openclaw gateway restart")
	n.Restart = append(n.Restart, "gateway")
	if linked {
		n.Notes = append(n.Notes, "Restart OpenClaw's gateway so that it loads the plugin (a gateway that hot-reloads its config picks it up by itself).")
	} else {
		n.Notes = append(n.Notes, "Once the config names the plugin, restart OpenClaw's gateway so that it loads it.")
	}
	n.Commands = append(n.Commands, "brainsurgeon openclaw status")
	return n
}

// ReadKey returns the first line of the key file, trimmed, as the plugin
// reads it.
func ReadKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("expected a regular file, found %s", fi.Mode().Type())
	}
	if fi.Size() > 4096 {
		return "", fmt.Errorf("expected one key (at most 4096 bytes), found %d bytes", fi.Size())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

// CheckSystem runs the end-to-end checks of the running system on st (from
// Status) and records them in st.Checks and st.Healthy: the plugin is
// installed and linked; the daemon answers at the plugin's daemonUrl,
// serves this OpenClaw root's agents dir and is not waiting; it accepts the
// plugin's key (GET /api/plugin/v1/health); the context engine is selected
// (when install --engine recorded it or the slot names it) and serving (its
// last view is newer than its last failure); the plugin's recent calls
// succeed. A check that needs an earlier one to pass is left out when that
// one failed. The daemon must serve st.AgentsDir; agentsDirArg is the
// --agents-dir to repeat in the commands the fixes name ("" for none). It
// only reads.
func CheckSystem(ctx context.Context, env Env, st *StatusResult, agentsDirArg string) {
	env = env.withDefaults()
	st.Checks = []Check{}
	add := func(c Check) { st.Checks = append(st.Checks, c) }
	defer func() {
		st.Healthy = true
		for _, c := range st.Checks {
			st.Healthy = st.Healthy && c.OK
		}
	}()
	link := "brainsurgeon openclaw install --link"
	if st.EngineByInstall || st.EngineSelected {
		link = "brainsurgeon openclaw install --engine --link"
	}
	if st.Installed {
		d := fmt.Sprintf("version %s in %s", st.InstalledVersion, st.PluginDir)
		if !st.Current {
			d += fmt.Sprintf("; this binary carries %s (brainsurgeon openclaw install updates it)", st.EmbeddedVersion)
		}
		add(Check{Name: CheckPluginInstalled, OK: true, Detail: d})
	} else {
		add(Check{Name: CheckPluginInstalled, Detail: fmt.Sprintf("no copy of the plugin in %s", st.PluginDir), Fix: link})
	}
	pc, hasEntry, perr := ReadPluginConfig(st.ConfigPath)
	st.Plugin = pc
	switch {
	case perr != nil:
		add(Check{Name: CheckConfigLinksPlugin, Detail: perr.Error(), Fix: "fix the config's syntax (openclaw config validate), then " + link})
	case !st.ConfigExists:
		add(Check{Name: CheckConfigLinksPlugin, Detail: fmt.Sprintf("OpenClaw's config %s does not exist", st.ConfigPath), Fix: link})
	case !st.ConfigNamesPlugin || !hasEntry:
		add(Check{Name: CheckConfigLinksPlugin, Detail: fmt.Sprintf("OpenClaw's config %s: names the plugin's dir: %s, has plugins.entries.brainsurgeon: %s", st.ConfigPath, yesNo(st.ConfigNamesPlugin), yesNo(hasEntry)), Fix: link})
	case pc.Disabled:
		add(Check{Name: CheckConfigLinksPlugin, Detail: fmt.Sprintf("OpenClaw's config %s: plugins.entries.brainsurgeon.enabled is false", st.ConfigPath), Fix: "openclaw config set plugins.entries.brainsurgeon.enabled true, then openclaw gateway restart"})
	default:
		add(Check{Name: CheckConfigLinksPlugin, OK: true, Detail: fmt.Sprintf("OpenClaw's config %s loads the plugin from %s", st.ConfigPath, st.PluginDir)})
	}
	if !st.Installed && !hasEntry && !st.ConfigNamesPlugin {
		return // nothing calls a daemon
	}

	st.DaemonURL = pc.DaemonURL
	if st.DaemonURL == "" {
		st.DaemonURL = st.recordDaemonURL
	}
	if st.DaemonURL == "" {
		st.DaemonURL = DefaultDaemonURL
	}
	serve, service := StartCommands(st.DaemonURL, agentsDirArg)
	state, h, detail := ProbeDaemon(ctx, env, st.DaemonURL)
	st.Daemon = h
	switch state {
	case DaemonDown:
		add(Check{Name: CheckDaemonReachable, Detail: "no daemon answers at the plugin's daemonUrl: " + detail + "; the plugin passes every result through and the engine falls back to OpenClaw's own view",
			Fix: fmt.Sprintf("start the daemon: %s (or as a user service: %s)", serve, service)})
		return
	case DaemonOther:
		add(Check{Name: CheckDaemonReachable, Detail: detail, Fix: fmt.Sprintf("stop what listens at %s and start the daemon there (%s), or point the plugin's daemonUrl at the daemon (brainsurgeon openclaw install --link --daemon-url URL)", st.DaemonURL, serve)})
		return
	}
	add(Check{Name: CheckDaemonReachable, OK: true, Detail: fmt.Sprintf("BrainSurgeon %s answers at %s", h.Version, st.DaemonURL)})
	ourAgents := st.AgentsDir
	switch {
	case state == DaemonWaiting:
		add(Check{Name: CheckDaemonReady, Detail: "the daemon is waiting: " + h.WaitingFor,
			Fix: "start OpenClaw's gateway and send the first message (openclaw gateway restart): the daemon serves the sessions as soon as the agents dir appears, without a restart"})
		return
	case h.AgentsDir != "" && !sameFile(h.AgentsDir, ourAgents):
		add(Check{Name: CheckDaemonReady, Detail: fmt.Sprintf("the daemon serves %s, but this OpenClaw root's sessions are in %s", h.AgentsDir, ourAgents),
			Fix: "stop that daemon and start it for these sessions: " + serve})
		return
	}
	add(Check{Name: CheckDaemonReady, OK: true, Detail: "the daemon serves " + orDefault(h.AgentsDir, ourAgents)})

	act, eng := h.Plugin, h.Engine
	key, kerr := "", error(nil)
	if pc.APIKeyFile != "" {
		key, kerr = ReadKey(pc.APIKeyFile)
	}
	keyFix := func() string {
		if h.KeyFile != "" && pc.APIKeyFile != "" && !sameFile(h.KeyFile, pc.APIKeyFile) {
			return fmt.Sprintf("the daemon reads its key from %s, the plugin from %s: start the daemon for this OpenClaw root (%s) or set the plugin's apiKeyFile to %s (openclaw config set plugins.entries.brainsurgeon.config.apiKeyFile %s)", h.KeyFile, pc.APIKeyFile, serve, h.KeyFile, h.KeyFile)
		}
		return "the daemon re-reads its key file within seconds of a change; if it still refuses the key, it was started with other keys (BRAINSURGEON_API_KEYS, or an older brainsurgeon): restart it (" + serve + ", or systemctl --user restart brainsurgeon)"
	}
	switch {
	case kerr != nil:
		add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the plugin's apiKeyFile %s cannot be read: %v", pc.APIKeyFile, kerr), Fix: "brainsurgeon openclaw install (creates the key file), then openclaw gateway restart"})
	default:
		var ans struct {
			OK     bool            `json:"ok"`
			Plugin *PluginActivity `json:"plugin"`
			Engine *EngineActivity `json:"engine"`
		}
		u := strings.TrimRight(st.DaemonURL, "/") + "/api/plugin/v1/health"
		code, msg, err := getJSON(ctx, env.client(), u, key, &ans)
		from := "the key in " + pc.APIKeyFile
		if pc.APIKeyFile == "" {
			from = "no apiKeyFile (the plugin reads $BRAINSURGEON_API_KEY of the gateway)"
		}
		switch {
		case err != nil:
			add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("GET %s: %v", u, err), Fix: "see the daemon's log (<openclaw root>/logs/brainsurgeon.log)"})
		case code == http.StatusOK:
			if ans.Plugin != nil {
				act = ans.Plugin
			}
			if ans.Engine != nil {
				eng = ans.Engine
			}
			d := "the daemon accepts " + from
			if h.AuthRequired != nil && !*h.AuthRequired {
				d = "the daemon requires no key (its API is open to anyone who can reach it)"
			}
			add(Check{Name: CheckKeyAccepted, OK: true, Detail: d})
		case code == http.StatusUnauthorized:
			add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the daemon requires a key, and the plugin has %s: %d %s", from, code, msg),
				Fix: link + " (sets the plugin's apiKeyFile), then openclaw gateway restart"})
		case code == http.StatusForbidden:
			add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the daemon refuses %s: %d %s; every plugin call fails and results are no longer offloaded", from, code, msg), Fix: keyFix()})
		case code == http.StatusNotFound:
			add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("the daemon at %s (version %s) has no GET /api/plugin/v1/health: it is older than this brainsurgeon", st.DaemonURL, h.Version),
				Fix: "restart the daemon with this brainsurgeon: " + serve + " (or systemctl --user restart brainsurgeon)"})
		default:
			add(Check{Name: CheckKeyAccepted, Detail: fmt.Sprintf("GET %s answered %d: %s", u, code, msg), Fix: "see the daemon's log (<openclaw root>/logs/brainsurgeon.log)"})
		}
	}
	st.Activity, st.Engine = act, eng

	if st.EngineByInstall || st.EngineSelected {
		if st.EngineSelected {
			add(Check{Name: CheckEngineSelected, OK: true, Detail: "plugins.slots.contextEngine is \"brainsurgeon\""})
		} else {
			add(Check{Name: CheckEngineSelected, Detail: fmt.Sprintf("install --engine selected BrainSurgeon's context engine, but plugins.slots.contextEngine is now %q", st.EngineSlot),
				Fix: "brainsurgeon openclaw install --engine --link (or: openclaw config set plugins.slots.contextEngine brainsurgeon), then openclaw gateway restart"})
		}
	}
	if act == nil {
		return // a daemon that does not report the plugin's calls
	}
	// A failed GET /api/plugin/v1/health is a status check's own probe
	// (this one's, with a wrong key), not a call of the plugin.
	fails := make([]PluginFailure, 0, len(act.RecentFailures))
	for _, f := range act.RecentFailures {
		if !strings.HasSuffix(f.Path, "/api/plugin/v1/health") {
			fails = append(fails, f)
		}
	}
	if st.EngineSelected {
		var last *PluginFailure
		for i, f := range fails {
			if engineCall(f) {
				last = &fails[i]
				break
			}
		}
		// The engine's figures, when the daemon counts them.
		figures := ""
		if eng != nil {
			figures = " (" + eng.String() + ")"
		}
		switch {
		case last != nil && (act.LastViewAt == nil || last.At.After(*act.LastViewAt)):
			add(Check{Name: CheckEngineServing, Detail: "the engine's last call failed: " + last.String() + "; OpenClaw sends the model its own view (pass-through)" + figures, Fix: failureFix(*last, keyFix)})
		case act.LastViewAt == nil:
			add(Check{Name: CheckEngineServing, OK: true, Detail: "no view since the daemon started: the engine answers at the next turn (if no view appears after a turn, the gateway has not loaded the plugin: openclaw gateway restart)" + figures})
		case eng != nil:
			add(Check{Name: CheckEngineServing, OK: true, Detail: fmt.Sprintf("last view at %s%s", act.LastViewAt.UTC().Format(time.RFC3339), figures)})
		default:
			add(Check{Name: CheckEngineServing, OK: true, Detail: fmt.Sprintf("last view at %s (%d views since the daemon started)", act.LastViewAt.UTC().Format(time.RFC3339), act.Views)})
		}
	}
	switch {
	case len(fails) == 0:
		add(Check{Name: CheckPluginCalls, OK: true, Detail: "no failed plugin calls among the recent ones the daemon keeps"})
	case act.LastOKAt != nil && act.LastOKAt.After(fails[0].At):
		add(Check{Name: CheckPluginCalls, OK: true, Detail: fmt.Sprintf("%s failed, the newest %s; calls succeed again since %s", countCalls(len(fails)), fails[0], act.LastOKAt.UTC().Format(time.RFC3339))})
	default:
		add(Check{Name: CheckPluginCalls, Detail: fmt.Sprintf("the plugin's last calls failed (%s of the recent ones the daemon keeps), the newest: %s", countCalls(len(fails)), fails[0]), Fix: failureFix(fails[0], keyFix)})
	}
}

func countCalls(n int) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}

// engineCall reports whether f is a call of the context engine, or one
// refused before any route (a key), which the engine's calls meet too.
func engineCall(f PluginFailure) bool {
	return strings.HasSuffix(f.Path, "/assemble") || strings.HasSuffix(f.Path, "/compact") ||
		f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden
}

// failureFix says what to do about a failed plugin call.
func failureFix(f PluginFailure, keyFix func() string) string {
	switch {
	case f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden:
		return keyFix()
	case f.Status == http.StatusRequestEntityTooLarge:
		return "the body was larger than the daemon accepts; the plugin passed it through unchanged: nothing is lost, and nothing needs doing"
	case f.Status == http.StatusServiceUnavailable:
		return "the daemon was busy or waiting for OpenClaw's agents dir: see brainsurgeon openclaw status again after the next turn"
	case f.Status >= 500:
		return "see the daemon's log (<openclaw root>/logs/brainsurgeon.log) for the error"
	}
	return "the plugin and the daemon disagree: brainsurgeon openclaw install (updates the plugin to this brainsurgeon's version), then openclaw gateway restart and restart the daemon"
}

// sameFile reports whether a and b name the same file or directory.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// errUnhealthy is wrapped by the error HealthError returns.
var errUnhealthy = errors.New("the running system is not healthy")

// HealthError returns nil when st is healthy, else an error naming each
// failed check and its fix.
func HealthError(st *StatusResult) error {
	if st.Healthy {
		return nil
	}
	var parts []string
	for _, c := range st.Checks {
		if !c.OK {
			parts = append(parts, fmt.Sprintf("%s: %s (fix: %s)", c.Name, c.Detail, c.Fix))
		}
	}
	return fmt.Errorf("%w: %s", errUnhealthy, strings.Join(parts, "; "))
}
