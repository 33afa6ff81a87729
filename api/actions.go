package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The handlers below return their answer; answer sends it (see answer).

// health answers GET /api/health (public): the server is up, which
// backends, agents dir, pi sessions dir ("" when none) and key file it
// uses (never a key), what the plugin's calls
// got, and the context engine's views served and their latency
// ("engine", an engine.Stats).
func (s *server) health(r *http.Request) (any, error) {
	req := s.keys.required()
	return map[string]any{"status": "ok", "version": s.opts.Version,
		"backends": s.set.Backends, "read_only": s.opts.ReadOnly,
		"uptime_seconds": int64(time.Since(s.started).Seconds()),
		"agents_dir":     s.set.AgentsDir, "pi_sessions_dir": s.set.PiSessionsDir, "key_file": s.opts.KeyFile, "auth_required": req, "open": !req,
		"plugin": s.plugin.health(), "engine": s.meter.Stats()}, nil
}

// authInfo answers GET /api/auth-info (public): whether a key is needed
// (auth_required; open is its negation: no key is required right now),
// where it comes from (key_file, key_hint), never a key, and while the
// API is open the notice the web UI shows (open_notice, "" when closed).
func (s *server) authInfo(r *http.Request) (any, error) {
	req := s.keys.required()
	notice := ""
	if !req {
		notice = OpenNotice(s.opts.KeyFile)
	}
	return map[string]any{"auth_required": req, "open": !req, "open_notice": notice, "read_only": s.opts.ReadOnly,
		"key_file": s.opts.KeyFile, "key_hint": s.keys.hint()}, nil
}

// OpenNotice is the sentence the web UI shows while the API requires no
// key: who can call it, and how to require a key. keyFile is the key file
// the server watches ("" for none).
func OpenNotice(keyFile string) string {
	how := "run brainsurgeon openclaw install or set BRAINSURGEON_API_KEYS and restart"
	if keyFile != "" {
		how = fmt.Sprintf("run brainsurgeon openclaw install (it writes %s, which this server requires from then on, without a restart) or set BRAINSURGEON_API_KEYS and restart", keyFile)
	}
	return "This API is open: anyone who can reach this server can read and change your sessions without a key. To require one, " + how + "."
}

func (s *server) configEnv(r *http.Request) (any, error) {
	ms := s.opts.AutoRefreshMS
	if ms <= 0 {
		ms = 10000
	}
	req := s.keys.required()
	return map[string]any{"auto_refresh_interval_ms": ms, "read_only": s.opts.ReadOnly,
		"auth_required": req, "open": !req, "key_file": s.opts.KeyFile, "key_hint": s.keys.hint()}, nil
}

// daemon returns the Daemon, or an error answered 501 naming what needed
// it.
func (s *server) daemon(what string) (*daemon.Daemon, error) {
	if s.opts.Daemon == nil {
		return nil, notWired{what, "Daemon"}
	}
	return s.opts.Daemon, nil
}

// runtimeConfig returns the Daemon's runtime config, or the defaults
// without a Daemon.
func (s *server) runtimeConfig() config.Config {
	if s.opts.Daemon == nil {
		return config.Default()
	}
	return s.opts.Daemon.Config().Get()
}

// trash returns the Trash, or an error answered 501 naming what needed
// it.
func (s *server) trash(what string) (trashOps, error) {
	if s.opts.Trash == nil {
		return trashOps{}, notWired{what, "Trash"}
	}
	return trashOps{s.opts.Trash}, nil
}

func (s *server) getConfig(r *http.Request) (any, error) {
	d, err := s.daemon("the config service")
	if err != nil {
		return nil, err
	}
	return d.Config().Get(), nil
}

// postConfig merges a partial config; every field is validated by the
// config service, a bad one is a 400 whose "fields" name each bad field.
func (s *server) postConfig(r *http.Request) (any, error) {
	d, err := s.daemon("the config service")
	if err != nil {
		return nil, err
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if trimmed := strings.TrimSpace(string(body)); !json.Valid(body) || trimmed == "" || trimmed[0] != '{' {
		return nil, fmt.Errorf("request body: expected a JSON object of config fields, such as {\"enabled\":true}: %w", bs.ErrInvalid)
	}
	cfg, err := d.Config().Set(r.Context(), body)
	if err != nil {
		return nil, err
	}
	s.log.Info("config updated through the API", "remote", r.RemoteAddr)
	return cfg, nil
}

func (s *server) getContext(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	return s.restorerFor().GetContext(r.Context(), ref)
}

// restoreRequest is the body of an entry restore.
type restoreRequest struct {
	// Keys select values (restore.MatchKey); none selects all.
	Keys []string `json:"keys"`
	// ToolCallID is the restore call to redact, when known.
	ToolCallID string `json:"tool_call_id"`
}

// restoreResponse is a restore.Result with the write-back error, when the
// content is ready but could not be written back.
type restoreResponse struct {
	*restore.Result
	Agent          string `json:"agent"`
	SessionID      string `json:"session_id"`
	WriteBackError string `json:"write_back_error,omitempty"`
}

// entryTarget returns the session and the entry id a request names.
func (s *server) entryTarget(r *http.Request) (bs.SessionRef, string, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return ref, "", err
	}
	entryID, err := param(r, "entryId")
	return ref, entryID, err
}

// restoreEntry answers POST
// /api/sessions/{agent}/{id}/entries/{entryId}/restore: the content at once;
// the write-back now when the session is idle, else queued durably and
// applied once the session is idle.
func (s *server) restoreEntry(r *http.Request) (any, error) {
	ref, entryID, err := s.entryTarget(r)
	if err != nil {
		return nil, err
	}
	var req restoreRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	res, err := s.restorerFor().Restore(r.Context(), ref, entryID, req.Keys, restore.RestoreOptions{ToolCallID: req.ToolCallID})
	if res == nil {
		return nil, err
	}
	out := restoreResponse{Result: res, Agent: agentName(ref), SessionID: ref.ID}
	if err != nil {
		out.WriteBackError = err.Error()
		s.log.Warn("restore: content returned, write-back failed", "session", ref.String(), "entry", entryID, "error", err)
	}
	s.log.Info("restore through the API", "session", ref.String(), "entry", entryID, "applied", res.Applied, "queued", res.Queued, "remote", r.RemoteAddr)
	return out, nil
}

// restoreAll answers POST /api/sessions/{agent}/{id}/restore: every value
// put back; {"pristine": true} also removes BrainSurgeon's own keys, giving
// back the original transcript byte for byte.
func (s *server) restoreAll(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	var req struct {
		Pristine bool `json:"pristine"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	res, err := s.restorerFor().RestoreAll(r.Context(), ref, req.Pristine)
	if err != nil {
		return nil, err
	}
	s.log.Info("restore of a whole session through the API", "session", ref.String(), "pristine", req.Pristine, "remote", r.RemoteAddr)
	return res, nil
}

// setExtractable answers PUT …/entries/{entryId}/meta with
// {"_extractable": true|false|N} (the first BrainSurgeon's body) and POST
// …/entries/{entryId}/extractable with {"value": true|false|N}.
func (s *server) setExtractable(r *http.Request) (any, error) {
	ref, entryID, err := s.entryTarget(r)
	if err != nil {
		return nil, err
	}
	var req struct {
		Extractable json.RawMessage `json:"_extractable"`
		Value       json.RawMessage `json:"value"`
	}
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	raw := req.Extractable
	if raw == nil {
		raw = req.Value
	}
	if raw == nil {
		return nil, fmt.Errorf("request body: expected {\"_extractable\": true, false or a number of messages} (or {\"value\": …}): %w", bs.ErrInvalid)
	}
	v := strings.TrimSpace(string(raw))
	if u, err := strconv.Unquote(v); err == nil {
		v = u // "true", "5" as strings, as the CLI takes them
	}
	res, err := s.restorerFor().SetExtractable(r.Context(), ref, entryID, v)
	if err != nil {
		return nil, err
	}
	s.log.Info("set _extractable through the API", "session", ref.String(), "entry", entryID, "value", res.Value, "remote", r.RemoteAddr)
	return res, nil
}

func (s *server) runPrune(r *http.Request) (any, error) {
	d, err := s.daemon("running a pruning pass")
	if err != nil {
		return nil, err
	}
	rep, err := d.RunPruneNow(r.Context())
	if err != nil {
		return nil, err
	}
	s.log.Info("pruning pass run through the API", "remote", r.RemoteAddr)
	return map[string]any{"job": "auto-trigger", "report": rep}, nil
}

func (s *server) runRetention(r *http.Request) (any, error) {
	d, err := s.daemon("running retention")
	if err != nil {
		return nil, err
	}
	st, err := d.RunRetentionNow(r.Context())
	if err != nil {
		return nil, err
	}
	s.log.Info("retention run through the API", "remote", r.RemoteAddr)
	return map[string]any{"job": "retention-cleanup", "report": st}, nil
}

// runJob answers POST /api/cron/jobs/{name}/run, the first BrainSurgeon's
// path: "auto-trigger" (or "prune") and "retention-cleanup" (or
// "retention").
func (s *server) runJob(r *http.Request) (any, error) {
	name, err := param(r, "name")
	if err != nil {
		return nil, err
	}
	switch name {
	case "auto-trigger", "prune":
		return s.runPrune(r)
	case "retention-cleanup", "retention":
		return s.runRetention(r)
	}
	return nil, fmt.Errorf("job %q: expected auto-trigger or retention-cleanup: %w", name, bs.ErrNotFound)
}

func (s *server) status(r *http.Request) (any, error) {
	d, err := s.daemon("the scheduler status")
	if err != nil {
		return nil, err
	}
	return d.Status(), nil
}

func (s *server) trashList(r *http.Request) (any, error) {
	t, err := s.trash("the trash")
	if err != nil {
		return nil, err
	}
	return t.List(r.Context())
}

// deleteSession answers DELETE /api/sessions/{agent}/{id}: the session
// goes to the trash.
func (s *server) deleteSession(r *http.Request) (any, error) {
	t, err := s.trash("deleting a session (the trash)")
	if err != nil {
		return nil, err
	}
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	res, err := t.Delete(r.Context(), ref)
	if err != nil {
		return nil, err
	}
	s.log.Info("session moved to the trash through the API", "session", ref.String(), "remote", r.RemoteAddr)
	return res, nil
}

// trashItem runs op on the trashed session a request names (agent and
// id) and logs done.
func (s *server) trashItem(r *http.Request, done string, op func(t trashOps, agent, id string) (any, error)) (any, error) {
	t, err := s.trash("the trash")
	if err != nil {
		return nil, err
	}
	agent, err := param(r, "agent")
	if err != nil {
		return nil, err
	}
	id, err := param(r, "id")
	if err != nil {
		return nil, err
	}
	res, err := op(t, agent, id)
	if err != nil {
		return nil, err
	}
	s.log.Info(done, "session", agent+"/"+id, "remote", r.RemoteAddr)
	return res, nil
}

func (s *server) trashRestore(r *http.Request) (any, error) {
	return s.trashItem(r, "session restored from the trash through the API", func(t trashOps, agent, id string) (any, error) {
		return t.Restore(r.Context(), agent, id)
	})
}

func (s *server) trashDelete(r *http.Request) (any, error) {
	return s.trashItem(r, "session deleted from the trash for good through the API", func(t trashOps, agent, id string) (any, error) {
		return t.PermanentDelete(r.Context(), agent, id)
	})
}
