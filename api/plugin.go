package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// The plugin endpoints (POST /api/plugin/v1/source and
// POST /api/plugin/v1/tool) serve BrainSurgeon's OpenClaw plugin: its
// tool-result middleware stores a large tool result at the source, and
// its tools (purge_control, recall_grep, recall_describe, recall_expand)
// run here. Each route decodes the request, calls package agenttools (the
// tools, their specs and the store at the source, which the purge_control
// command calls too) and encodes its answer.

// MaxSourceBodyBytes caps the body of POST /api/plugin/v1/source, which
// carries a whole tool result (other routes keep Options.MaxBodyBytes).
const MaxSourceBodyBytes = 32 << 20

// MaxToolTextBlock is the longest text block, in UTF-16 code units (a
// JavaScript string's length), that a tool answers (agenttools.MaxTextBlock).
const MaxToolTextBlock = agenttools.MaxTextBlock

// MaxSourceRequests is how many POST /api/plugin/v1/source requests are
// served at once; one beyond them is answered 503 at once (the plugin
// then passes the tool result through).
const MaxSourceRequests = 2

// statusError is an error answered with its own HTTP status.
type statusError struct {
	status int
	err    error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// pluginGuard refuses a plugin request that a web page could send: one
// whose Content-Type is not application/json (415; a cross-site form or
// text/plain POST needs no preflight) or that carries an Origin not
// listed in Options.CORSOrigins (403). The plugin sends application/json
// and no Origin.
func (s *server) pluginGuard(h http.Handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !s.originAllowed(origin) {
			writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed on the plugin routes (BRAINSURGEON_CORS_ORIGINS); the plugin sends no Origin", origin))
			return
		}
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type: expected application/json, found %.80q", ct))
			return
		}
		h.ServeHTTP(w, r)
	}
}

// DefaultPluginAgent is the agent of a plugin request that names none.
const DefaultPluginAgent = "main"

// pluginSessionRequest is the session identity of a plugin request, from
// the run's context (never from the model).
type pluginSessionRequest struct {
	AgentID    string `json:"agent_id"`
	SessionID  string `json:"session_id"`
	SessionKey string `json:"session_key"`
}

// checkToolCallID checks a tool call id: "tc-<id>" must be a valid side
// key (brainsurgeon.CheckSideKey).
func checkToolCallID(id string) error {
	if _, err := extract.SourceKey(id); err != nil {
		return fmt.Errorf("tool_call_id: %w", err)
	}
	return nil
}

// resolve finds the session of a plugin request among the sessions the
// store lists: session_id under agent_id (default "main"; for a pi
// session, the name of its directory) first, then session_key. Every
// member is checked first (400); no session is a 404.
func (s *server) resolve(ctx context.Context, q pluginSessionRequest) (bs.SessionRef, error) {
	agent := q.AgentID
	if agent == "" {
		agent = DefaultPluginAgent
	}
	// The agent is only compared with the agents the store lists (no path
	// is built from it), so any name a host gives its agents passes: pi
	// names a session's agent after its working directory
	// ("--home-me-my project--"), spaces and all.
	if err := agenttools.CheckText("agent_id", agent); err != nil {
		return bs.SessionRef{}, err
	}
	if strings.Contains(agent, "/") {
		return bs.SessionRef{}, fmt.Errorf("agent_id: expected an agent name without '/', found %.80q: %w", agent, bs.ErrInvalid)
	}
	if q.SessionID != "" {
		if found := bs.IDName.Found(q.SessionID); found != "" {
			return bs.SessionRef{}, fmt.Errorf("session_id: expected a session id (%s), %s: %w", bs.IDName.Expected(), found, bs.ErrInvalid)
		}
	}
	if err := agenttools.CheckText("session_key", q.SessionKey); err != nil {
		return bs.SessionRef{}, err
	}
	if q.SessionID == "" && q.SessionKey == "" {
		return bs.SessionRef{}, fmt.Errorf("request body: expected session_id or session_key (from the run's context), found neither: %w", bs.ErrInvalid)
	}
	refs, err := s.listRefs(ctx, agent)
	if err != nil {
		return bs.SessionRef{}, err
	}
	if len(refs) == 0 {
		return bs.SessionRef{}, fmt.Errorf("session of agent %q: the agent has no sessions: %w", agent, bs.ErrNotFound)
	}
	var idErr error
	if q.SessionID != "" {
		ref, err := s.set.Backend.ResolveAmong(refs, agent+"/"+q.SessionID)
		if err == nil || !errors.Is(err, bs.ErrNotFound) || q.SessionKey == "" {
			return ref, err
		}
		idErr = err
	}
	ref, err := s.set.Backend.ResolveAmong(refs, q.SessionKey)
	if err != nil && idErr != nil {
		return bs.SessionRef{}, fmt.Errorf("%w; session_key: %w", idErr, err)
	}
	if err == nil && q.SessionID != "" && ref.ID != q.SessionID {
		// The key names another session (the host may have started a new
		// one under the key that is not listed yet): never a value of
		// another session.
		return bs.SessionRef{}, fmt.Errorf("%w; session_key %.80q names session %s, not session_id %s: %w", idErr, q.SessionKey, ref, q.SessionID, bs.ErrNotFound)
	}
	return ref, err
}

// decodePlugin decodes a plugin request body (one JSON object; members
// the endpoint does not know are ignored, so that a newer plugin still
// talks to this daemon).
func decodePlugin(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	// json.Unmarshal (not a Decoder, which copies the body into its own
	// buffer) refuses anything after the object as well.
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("request body: expected one JSON object of the documented members: %v: %w", err, bs.ErrInvalid)
	}
	return nil
}

// sourceRequest is the body of POST /api/plugin/v1/source: the session's
// identity and the tool result (agenttools.SourceRequest).
type sourceRequest struct {
	pluginSessionRequest
	agenttools.SourceRequest
}

// SourceResponse is the answer of POST /api/plugin/v1/source.
type SourceResponse = agenttools.SourceResponse

// isNull reports whether a JSON member is absent or null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// tools returns the agent's tools of a request: the installation's
// stores with the Restorer and the engine then in force.
func (s *server) tools() *agenttools.Tools {
	t := &agenttools.Tools{Store: s.set.Store, Side: s.set.Side, Restorer: s.restorerFor(), ReadOnly: s.opts.ReadOnly, Logger: s.log}
	if eng := s.engineFor(); eng != nil {
		t.Engine = eng
	}
	return t
}

// sourceSettings returns the settings of the store at the source in
// force: the runtime config's (Options.Daemon), else the defaults.
func (s *server) sourceSettings(ctx context.Context) (agenttools.SourceSettings, error) {
	c := s.runtimeConfig()
	return agenttools.SourceSettings{OffloadAboveChars: c.SourceOffloadAboveChars, PreviewChars: c.SourcePreviewChars}, nil
}

// pluginSource answers POST /api/plugin/v1/source: it stores one tool
// result as the side record "tc-<tool_call_id>" of the session, durably,
// before answering (agenttools.Sources.Store), with the placeholder the
// request carries or, without one, the placeholder built here with the
// configured preview; a key the session holds with other content is a
// 409. The answer holds the placeholder and the settings in force.
func (s *server) pluginSource(r *http.Request) (any, error) {
	select {
	case s.sourceSlots <- struct{}{}:
		defer func() { <-s.sourceSlots }()
	default:
		return nil, statusError{http.StatusServiceUnavailable, fmt.Errorf("%d tool results are being stored already: try later (the plugin passes this one through)", MaxSourceRequests)}
	}
	var q sourceRequest
	if err := decodePlugin(r, &q); err != nil {
		return nil, err
	}
	key, err := q.SourceRequest.Check()
	if err != nil {
		return nil, err
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if err != nil {
		return nil, err
	}
	settings, err := s.sourceSettings(r.Context())
	if err != nil {
		return nil, err
	}
	q.SourceRequest.SessionKey = q.pluginSessionRequest.SessionKey
	q.SourceRequest.Session = agenttools.SourceSession(q.AgentID, q.SessionID, q.pluginSessionRequest.SessionKey)
	q.SourceRequest.PreviewChars = settings.PreviewChars
	now := time.Now().UTC()
	// The request's bytes are this handler's own: stored without a copy.
	out, err := s.sources.Store(r.Context(), s.set.Side, ref, &q.SourceRequest, key, now)
	if cerr := (*agenttools.ConflictError)(nil); errors.As(err, &cerr) {
		return nil, statusError{http.StatusConflict, err}
	}
	if err != nil {
		return nil, err
	}
	if s.set.StateDir != "" {
		ev := audit.Event{Time: now, Action: "extract_source", Session: ref.String(), Entry: key,
			Path: "side record " + key, Agent: ref.Agent, SessionID: ref.ID, Actor: "plugin"}
		if err := audit.Append(audit.Path(s.set.StateDir), ev); err != nil {
			s.log.Warn("audit event not written", "action", ev.Action, "entry_id", key, "error", err.Error())
		}
	}
	s.log.Info("tool result stored at the source", "session", ref.String(), "key", key, "tool", q.ToolName, "bytes", out.Bytes)
	out.SourceSettings = settings
	return out, nil
}

// toolRequest is the body of POST /api/plugin/v1/tool.
type toolRequest struct {
	pluginSessionRequest
	ToolCallID string          `json:"tool_call_id"`
	Tool       string          `json:"tool"`
	Params     json.RawMessage `json:"params"`
}

// ToolResponse is the answer of POST /api/plugin/v1/tool: Content is
// exactly what the model gets.
type ToolResponse = agenttools.Result

// pluginTool answers POST /api/plugin/v1/tool: 200 with ok true or false
// for every call it could route; 4xx for a malformed request, an unknown
// tool, an invalid id or an unknown session.
func (s *server) pluginTool(r *http.Request) (any, error) {
	var q toolRequest
	if err := decodePlugin(r, &q); err != nil {
		return nil, err
	}
	if _, ok := agenttools.Lookup(q.Tool); !ok {
		return nil, fmt.Errorf("tool: expected %s, found %.60q: %w", agenttools.ExpectedTools(), q.Tool, bs.ErrInvalid)
	}
	if q.ToolCallID != "" {
		if err := checkToolCallID(q.ToolCallID); err != nil {
			return nil, err
		}
	}
	if !isNull(q.Params) && bytes.TrimSpace(q.Params)[0] != '{' {
		return nil, fmt.Errorf("params: expected a JSON object, found %.40q: %w", string(q.Params), bs.ErrInvalid)
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if err != nil {
		return nil, err
	}
	res, err := s.tools().Call(r.Context(), ref, q.Tool, q.ToolCallID, q.Params)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		s.log.Debug("plugin tool call failed", "tool", q.Tool, "session", ref.String(), "error", err)
		return agenttools.Failed(err), nil
	}
	return res, nil
}

// SplitTextBlocks returns the content blocks of content (a JSON array)
// with every text block longer than max UTF-16 code units split into
// consecutive blocks whose texts concatenate to the exact text
// (agenttools.SplitTextBlocks).
func SplitTextBlocks(content []byte, max int) ([]json.RawMessage, error) {
	return agenttools.SplitTextBlocks(content, max)
}
