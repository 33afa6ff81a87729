package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

func (s *server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": s.opts.Version,
		"backends": s.set.Backends, "read_only": s.opts.ReadOnly,
		"uptime_seconds": int64(time.Since(s.started).Seconds())})
}

func (s *server) authInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"auth_required": len(s.keys) > 0, "read_only": s.opts.ReadOnly})
}

func (s *server) configEnv(w http.ResponseWriter, r *http.Request) {
	ms := s.opts.AutoRefreshMS
	if ms <= 0 {
		ms = 10000
	}
	writeJSON(w, http.StatusOK, map[string]any{"auto_refresh_interval_ms": ms, "read_only": s.opts.ReadOnly,
		"auth_required": len(s.keys) > 0})
}

func (s *server) getConfig(w http.ResponseWriter, r *http.Request) {
	if s.opts.Control == nil {
		notWired(w, "the config service", "Control")
		return
	}
	c, err := s.opts.Control.Config(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// postConfig merges a partial config; every field is validated by the
// config service, a bad one is a 400 whose "fields" name each bad field.
func (s *server) postConfig(w http.ResponseWriter, r *http.Request) {
	if s.opts.Control == nil {
		notWired(w, "the config service", "Control")
		return
	}
	body, err := readBody(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !json.Valid(body) || len(strings.TrimSpace(string(body))) == 0 || strings.TrimSpace(string(body))[0] != '{' {
		s.fail(w, r, fmt.Errorf("request body: expected a JSON object of config fields, such as {\"enabled\":true}: %w", bs.ErrInvalid))
		return
	}
	c, err := s.opts.Control.UpdateConfig(r.Context(), body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("config updated through the API", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, c)
}

func (s *server) getContext(w http.ResponseWriter, r *http.Request) {
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.restorerFor().GetContext(r.Context(), ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
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

// restoreEntry answers POST /api/sessions/{agent}/{id}/entries/{entryId}/restore:
// the content at once; the write-back now when the session is idle, else
// queued (DESIGN decision 7).
func (s *server) restoreEntry(w http.ResponseWriter, r *http.Request) {
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entryID, err := param(r, "entryId")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req restoreRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.restorerFor().Restore(r.Context(), ref, entryID, req.Keys, restore.RestoreOptions{ToolCallID: req.ToolCallID})
	if res == nil {
		s.fail(w, r, err)
		return
	}
	out := restoreResponse{Result: res, Agent: agentName(ref), SessionID: ref.ID}
	if err != nil {
		out.WriteBackError = err.Error()
		s.log.Warn("restore: content returned, write-back failed", "session", ref.String(), "entry", entryID, "error", err)
	}
	s.log.Info("restore through the API", "session", ref.String(), "entry", entryID, "applied", res.Applied, "queued", res.Queued, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, out)
}

// restoreAll answers POST /api/sessions/{agent}/{id}/restore: every value
// put back; {"pristine": true} also removes BrainSurgeon's own keys, giving
// back the original transcript byte for byte (DESIGN decision 2).
func (s *server) restoreAll(w http.ResponseWriter, r *http.Request) {
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Pristine bool `json:"pristine"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.restorerFor().RestoreAll(r.Context(), ref, req.Pristine)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("restore of a whole session through the API", "session", ref.String(), "pristine", req.Pristine, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

// setExtractable answers PUT …/entries/{entryId}/meta with
// {"_extractable": true|false|N} (the first BrainSurgeon's body) and POST
// …/entries/{entryId}/extractable with {"value": true|false|N}.
func (s *server) setExtractable(w http.ResponseWriter, r *http.Request) {
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	entryID, err := param(r, "entryId")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var req struct {
		Extractable json.RawMessage `json:"_extractable"`
		Value       json.RawMessage `json:"value"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	raw := req.Extractable
	if raw == nil {
		raw = req.Value
	}
	if raw == nil {
		s.fail(w, r, fmt.Errorf("request body: expected {\"_extractable\": true, false or a number of messages} (or {\"value\": …}): %w", bs.ErrInvalid))
		return
	}
	v := strings.TrimSpace(string(raw))
	if u, err := strconv.Unquote(v); err == nil {
		v = u // "true", "5" as strings, as the CLI takes them
	}
	res, err := s.restorerFor().SetExtractable(r.Context(), ref, entryID, v)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("set _extractable through the API", "session", ref.String(), "entry", entryID, "value", res.Value, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

func (s *server) runPrune(w http.ResponseWriter, r *http.Request) {
	if s.opts.Control == nil {
		notWired(w, "running a pruning pass", "Control")
		return
	}
	rep, err := s.opts.Control.RunPrune(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("pruning pass run through the API", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"job": "auto-trigger", "report": rep})
}

func (s *server) runRetention(w http.ResponseWriter, r *http.Request) {
	if s.opts.Control == nil {
		notWired(w, "running retention", "Control")
		return
	}
	st, err := s.opts.Control.RunRetention(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("retention run through the API", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"job": "retention-cleanup", "report": st})
}

// runJob answers POST /api/cron/jobs/{name}/run, the first BrainSurgeon's
// path: "auto-trigger" (or "prune") and "retention-cleanup" (or
// "retention").
func (s *server) runJob(w http.ResponseWriter, r *http.Request) {
	name, err := param(r, "name")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch name {
	case "auto-trigger", "prune":
		s.runPrune(w, r)
	case "retention-cleanup", "retention":
		s.runRetention(w, r)
	default:
		s.fail(w, r, fmt.Errorf("job %q: expected auto-trigger or retention-cleanup: %w", name, bs.ErrNotFound))
	}
}

func (s *server) status(w http.ResponseWriter, r *http.Request) {
	if s.opts.Control == nil {
		notWired(w, "the scheduler status", "Control")
		return
	}
	st, err := s.opts.Control.Status(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *server) trashList(w http.ResponseWriter, r *http.Request) {
	if s.opts.Trash == nil {
		notWired(w, "the trash", "Trash")
		return
	}
	l, err := s.opts.Trash.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// deleteSession answers DELETE /api/sessions/{agent}/{id}: the session
// goes to the trash.
func (s *server) deleteSession(w http.ResponseWriter, r *http.Request) {
	if s.opts.Trash == nil {
		notWired(w, "deleting a session (the trash)", "Trash")
		return
	}
	ref, err := s.findSession(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.opts.Trash.Delete(r.Context(), ref)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("session moved to the trash through the API", "session", ref.String(), "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

func (s *server) trashTarget(r *http.Request) (agent, id string, err error) {
	if agent, err = param(r, "agent"); err != nil {
		return "", "", err
	}
	id, err = param(r, "id")
	return agent, id, err
}

func (s *server) trashRestore(w http.ResponseWriter, r *http.Request) {
	if s.opts.Trash == nil {
		notWired(w, "the trash", "Trash")
		return
	}
	agent, id, err := s.trashTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.opts.Trash.Restore(r.Context(), agent, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("session restored from the trash through the API", "session", agent+"/"+id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}

func (s *server) trashDelete(w http.ResponseWriter, r *http.Request) {
	if s.opts.Trash == nil {
		notWired(w, "the trash", "Trash")
		return
	}
	agent, id, err := s.trashTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.opts.Trash.PermanentDelete(r.Context(), agent, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("session deleted from the trash for good through the API", "session", agent+"/"+id, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, res)
}
