package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxPluginFailures is how many failed plugin calls
// PluginHealth.RecentFailures keeps (the newest).
const MaxPluginFailures = 20

// PluginFailure is one failed call of a plugin route (/api/plugin/…): an
// answer with a status of 400 or more, a refused key included.
type PluginFailure struct {
	// At is when the call was answered.
	At time.Time `json:"at"`
	// Method and Path are the request's.
	Method string `json:"method"`
	Path   string `json:"path"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// Error is the error message answered.
	Error string `json:"error"`
	// Fix says what to do about it.
	Fix string `json:"fix"`
}

// PluginHealth is what the API saw of the OpenClaw plugin's calls since
// it started, as GET /api/health ("plugin") and GET /api/plugin/v1/health
// answer it. Times are null until it happened. The plugin's own health
// checks (GET /api/plugin/v1/health) count only when they fail.
type PluginHealth struct {
	// LastCallAt is when the last plugin call was answered.
	LastCallAt *time.Time `json:"last_call_at"`
	// LastOKAt is when the last plugin call was answered 200.
	LastOKAt *time.Time `json:"last_ok_at"`
	// LastViewAt is when the context engine last answered an assemble
	// with a view (not a pass-through); Views counts those answers.
	LastViewAt *time.Time `json:"last_view_at"`
	Views      int64      `json:"views"`
	// LastPassthroughAt is when the engine last let the host's messages
	// through unchanged, and LastPassthrough says why.
	LastPassthroughAt *time.Time `json:"last_passthrough_at"`
	LastPassthrough   string     `json:"last_passthrough"`
	// Failing is true when the newest plugin call failed (a failure
	// after the last success).
	Failing bool `json:"failing"`
	// RecentFailures are the newest failed calls, newest first, at most
	// MaxPluginFailures; FailuresTotal counts them all.
	RecentFailures []PluginFailure `json:"recent_failures"`
	FailuresTotal  int64           `json:"failures_total"`
}

// pluginMonitor keeps a PluginHealth. Safe for concurrent use.
type pluginMonitor struct {
	mu sync.Mutex
	h  PluginHealth
	// ring holds the recent failures, oldest first.
	ring []PluginFailure
}

func timePtr(t time.Time) *time.Time { return &t }

// call records the answer of a plugin call; check is true for the
// plugin's health checks, which count only when they fail.
func (m *pluginMonitor) call(method, path string, status int, errMsg string, check bool) {
	now := time.Now().UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	if status < 400 {
		if !check {
			m.h.LastCallAt, m.h.LastOKAt = timePtr(now), timePtr(now)
		}
		return
	}
	if !check {
		m.h.LastCallAt = timePtr(now)
	}
	f := PluginFailure{At: now, Method: method, Path: path, Status: status, Error: errMsg, Fix: pluginFix(status, errMsg)}
	if len(m.ring) == MaxPluginFailures {
		m.ring = append(m.ring[:0], m.ring[1:]...)
	}
	m.ring = append(m.ring, f)
	m.h.FailuresTotal++
}

// view records an assemble answered with a view, or with a pass-through
// when why is not "".
func (m *pluginMonitor) view(why string) {
	now := time.Now().UTC()
	m.mu.Lock()
	defer m.mu.Unlock()
	if why != "" {
		m.h.LastPassthroughAt, m.h.LastPassthrough = timePtr(now), why
		return
	}
	m.h.LastViewAt = timePtr(now)
	m.h.Views++
}

// health returns a copy of the PluginHealth.
func (m *pluginMonitor) health() PluginHealth {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.h
	h.RecentFailures = make([]PluginFailure, len(m.ring))
	for i, f := range m.ring {
		h.RecentFailures[len(m.ring)-1-i] = f
	}
	if n := len(m.ring); n > 0 {
		h.Failing = h.LastOKAt == nil || m.ring[n-1].At.After(*h.LastOKAt)
	}
	return h
}

// pluginFix says what to do about a failed plugin call.
func pluginFix(status int, msg string) string {
	const run = "run brainsurgeon openclaw status"
	switch {
	case status == http.StatusUnauthorized:
		return "the plugin sent no key while the daemon requires one (its apiKeyFile is missing or empty): " + run
	case status == http.StatusForbidden && strings.Contains(msg, "API key"):
		return "the plugin's key does not match the daemon's: " + run
	case status == http.StatusForbidden && strings.Contains(msg, "origin"):
		return "the request carried an Origin header: the plugin sends none, so it came from elsewhere (BRAINSURGEON_CORS_ORIGINS lists the origins allowed)"
	case status == http.StatusRequestEntityTooLarge:
		return "the body was larger than the daemon accepts: the plugin passed this call through unchanged"
	case status == http.StatusUnsupportedMediaType:
		return "the caller did not send JSON: the plugin always does, so it came from elsewhere or the plugin is outdated (brainsurgeon openclaw install updates it)"
	case status == http.StatusNotImplemented:
		return "this daemon was started without the part the call needs (see the error)"
	case status >= 500:
		return "the daemon failed: see its log (<openclaw root>/logs/brainsurgeon.log); the plugin passed the call through unchanged"
	}
	return "the daemon refused the call (see the error); if it repeats, " + run
}

// pluginRecorder captures the status and error message of a plugin
// call's answer.
type pluginRecorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer // the start of an error answer
}

func (r *pluginRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *pluginRecorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.status >= 400 && r.body.Len() < 4096 {
		r.body.Write(p[:min(len(p), 4096-r.body.Len())])
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *pluginRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// errorMessage returns the "error" member of the answer, else its start.
func (r *pluginRecorder) errorMessage() string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(r.body.Bytes(), &e) == nil && e.Error != "" {
		return e.Error
	}
	if s := strings.TrimSpace(r.body.String()); s != "" {
		return s
	}
	return http.StatusText(r.status)
}

// needFull reports whether the answer says "need_full": true.
func (r *pluginRecorder) needFull() bool {
	var e struct {
		NeedFull bool `json:"need_full"`
	}
	return json.Unmarshal(r.body.Bytes(), &e) == nil && e.NeedFull
}

// monitorPlugin records every answer of a plugin route in s.plugin.
func (s *server) monitorPlugin(h http.Handler, check bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &pluginRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		msg := ""
		if status >= 400 {
			msg = rec.errorMessage()
		}
		if status == http.StatusConflict && rec.needFull() {
			// The engine asked for the whole list of messages (see
			// engine.ErrNeedFull): a step of the wire, not a failure.
			status, msg = http.StatusOK, ""
		}
		s.plugin.call(r.Method, r.URL.Path, status, msg, check)
	})
}

// pluginHealth answers GET /api/plugin/v1/health: the key was accepted;
// the settings of the store at the source, which the plugin offloads by
// (agenttools.SourceSettings; absent when the config cannot be read); what the plugin's calls got and the
// context engine's views (as GET /api/health).
func (s *server) pluginHealth(r *http.Request) (any, error) {
	out := map[string]any{"ok": true, "plugin": s.plugin.health(), "engine": s.meter.Stats()}
	// Without the settings (the config cannot be read) the plugin passes
	// every result through: the health check itself still answers.
	if settings, err := s.sourceSettings(r.Context()); err != nil {
		s.log.Warn("plugin health: the settings of the store at the source are not shown", "error", err.Error())
	} else {
		out["source_offload_above_chars"], out["source_preview_chars"] = settings.OffloadAboveChars, settings.PreviewChars
	}
	return out, nil
}

// pluginOriginGuard refuses a plugin GET that carries an Origin not
// listed (see pluginGuard; a GET has no body whose type to check).
func (s *server) pluginOriginGuard(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed on the plugin routes (BRAINSURGEON_CORS_ORIGINS); the plugin sends no Origin", origin))
			return
		}
		h.ServeHTTP(w, r)
	}
}
