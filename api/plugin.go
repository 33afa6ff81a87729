package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The plugin endpoints (POST /api/plugin/v1/source and
// POST /api/plugin/v1/tool) serve BrainSurgeon's OpenClaw plugin: its
// tool-result middleware stores a large tool result at the source, and
// its tools (purge_control, recall_grep, recall_describe, recall_expand)
// run here, so that the text the model reads is formatted in one place
// (package internal/agenttext).

// MaxSourceBodyBytes caps the body of POST /api/plugin/v1/source, which
// carries a whole tool result (other routes keep Options.MaxBodyBytes).
const MaxSourceBodyBytes = 32 << 20

// MaxToolTextBlock is the longest text block, in UTF-16 code units (a
// JavaScript string's length), that a tc- restore returns: the host
// truncates longer blocks, so a longer text is split into consecutive
// blocks of at most this length that concatenate to the exact text.
const MaxToolTextBlock = 100_000

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

// maxPluginString bounds the free-text members of a plugin request
// (tool_name, run_id, session_key) in bytes.
const maxPluginString = 512

// pluginSessionRequest is the session identity of a plugin request, from
// the run's context (never from the model).
type pluginSessionRequest struct {
	AgentID    string `json:"agent_id"`
	SessionID  string `json:"session_id"`
	SessionKey string `json:"session_key"`
}

// checkText checks a free-text member: at most maxPluginString bytes of
// valid UTF-8 without control characters.
func checkText(member, v string) error {
	switch {
	case len(v) > maxPluginString:
		return fmt.Errorf("%s: expected at most %d bytes, found %d: %w", member, maxPluginString, len(v), bs.ErrInvalid)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s: expected valid UTF-8, found %q: %w", member, v, bs.ErrInvalid)
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%s: expected no control characters, found %q in %q: %w", member, c, v, bs.ErrInvalid)
		}
	}
	return nil
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
// store lists: session_id under agent_id (default "main") first, then
// session_key. Every member is checked first (400); no session is a 404.
func (s *server) resolve(ctx context.Context, q pluginSessionRequest) (bs.SessionRef, error) {
	agent := q.AgentID
	if agent == "" {
		agent = DefaultPluginAgent
	}
	if found := bs.IDName.Found(agent); found != "" {
		return bs.SessionRef{}, fmt.Errorf("agent_id: expected an agent name (%s), %s: %w", bs.IDName.Expected(), found, bs.ErrInvalid)
	}
	if q.SessionID != "" {
		if found := bs.IDName.Found(q.SessionID); found != "" {
			return bs.SessionRef{}, fmt.Errorf("session_id: expected a session id (%s), %s: %w", bs.IDName.Expected(), found, bs.ErrInvalid)
		}
	}
	if err := checkText("session_key", q.SessionKey); err != nil {
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

// sourceRequest is the body of POST /api/plugin/v1/source. Content and
// Details are kept as the bytes of the request body.
type sourceRequest struct {
	pluginSessionRequest
	RunID              string          `json:"run_id"`
	ToolCallID         string          `json:"tool_call_id"`
	ToolName           string          `json:"tool_name"`
	Key                string          `json:"key"`
	Content            json.RawMessage `json:"content"`
	Details            json.RawMessage `json:"details"`
	PlaceholderContent json.RawMessage `json:"placeholder_content"`
	PlaceholderDetails json.RawMessage `json:"placeholder_details"`
}

// SourceResponse is the answer of POST /api/plugin/v1/source.
type SourceResponse struct {
	// Key is the side key, "tc-<tool_call_id>".
	Key string `json:"key"`
	// Bytes and SHA256 are the length and hex sha256 of the content bytes
	// stored.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Placeholder is "[[extracted-<key>]]".
	Placeholder string `json:"placeholder"`
}

// sourceMeta is the record's "source" member.
type sourceMeta struct {
	ToolCallID string `json:"tool_call_id"`
	ToolName   string `json:"tool_name"`
	RunID      string `json:"run_id"`
	SessionKey string `json:"session_key"`
	StoredAt   string `json:"stored_at"`
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// pluginSource answers POST /api/plugin/v1/source: it stores one tool
// result as the side record "tc-<tool_call_id>" of the session, durably,
// before answering (see the package documentation).
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
	key, err := extract.SourceKey(q.ToolCallID)
	if err != nil {
		return nil, fmt.Errorf("tool_call_id: %w", err)
	}
	if q.Key != key {
		return nil, fmt.Errorf("key: expected %q (\"tc-\" and the tool_call_id), found %.80q: %w", key, q.Key, bs.ErrInvalid)
	}
	for _, m := range []struct{ name, v string }{{"tool_name", q.ToolName}, {"run_id", q.RunID}} {
		if err := checkText(m.name, m.v); err != nil {
			return nil, err
		}
	}
	if c := bytes.TrimSpace(q.Content); len(c) == 0 || c[0] != '[' {
		return nil, fmt.Errorf("content: expected the tool result's content blocks (a JSON array), found %.40q: %w", string(c), bs.ErrInvalid)
	}
	ph := extract.Placeholder(key)
	if isNull(q.PlaceholderContent) {
		return nil, fmt.Errorf("placeholder_content: expected the content blocks that replace the result, holding %s, found none: %w", ph, bs.ErrInvalid)
	}
	var phBlocks []json.RawMessage
	if err := json.Unmarshal(q.PlaceholderContent, &phBlocks); err != nil {
		return nil, fmt.Errorf("placeholder_content: expected a JSON array of content blocks: %v: %w", err, bs.ErrInvalid)
	}
	if texts, _, err := extract.SourceText(q.PlaceholderContent); err != nil || !strings.Contains(strings.Join(texts, ""), ph) {
		return nil, fmt.Errorf("placeholder_content: expected a text block holding %s, found none: %w", ph, bs.ErrInvalid)
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(q.Content)
	sumHex := hex.EncodeToString(sum[:])
	now := time.Now().UTC()
	rec := &extract.Record{Session: ref.String(), EntryID: key, TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
	// The request's bytes are this handler's own: stored without a copy.
	rec.Put(extract.NewStoredValueShared(extract.SourceContentPath, bs.TriggerToolResult, false, q.Content, compactJSON(q.PlaceholderContent), now))
	if !isNull(q.Details) {
		phd := compactJSON(q.PlaceholderDetails)
		if isNull(q.PlaceholderDetails) {
			phd = []byte("null")
		}
		rec.Put(extract.NewStoredValueShared(extract.SourceDetailsPath, bs.TriggerToolResult, false, q.Details, phd, now))
	}
	meta, err := json.Marshal(sourceMeta{ToolCallID: q.ToolCallID, ToolName: q.ToolName, RunID: q.RunID,
		SessionKey: q.SessionKey, StoredAt: now.Format(time.RFC3339Nano)})
	if err != nil {
		return nil, err
	}
	rec.Extra = map[string]json.RawMessage{"source": meta}
	if err := s.putSource(r.Context(), ref, rec, sumHex, len(q.Content)); err != nil {
		return nil, err
	}
	out := SourceResponse{Key: key, Bytes: len(q.Content), SHA256: sumHex, Placeholder: ph}
	if s.set.StateDir != "" {
		ev := audit.Event{Time: now, Action: "extract_source", Session: ref.String(), Entry: key,
			Path: "side record " + key, Agent: ref.Agent, SessionID: ref.ID, Actor: "plugin"}
		if err := audit.Append(audit.Path(s.set.StateDir), ev); err != nil {
			s.log.Warn("audit event not written", "action", ev.Action, "entry_id", key, "error", err.Error())
		}
	}
	s.log.Info("tool result stored at the source", "session", ref.String(), "key", key, "tool", q.ToolName, "bytes", out.Bytes)
	return out, nil
}

// putSource stores the source record rec durably, unless the session
// already holds a record of its key whose content differs (sha256 and
// length): a tool call id the host repeats in a later turn must not
// replace a value a placeholder may still name (409). A record with the
// same content is replaced (a retry).
func (s *server) putSource(ctx context.Context, ref bs.SessionRef, rec *extract.Record, sumHex string, size int) error {
	key := rec.EntryID
	s.sourceMu.Lock()
	defer s.sourceMu.Unlock()
	old, err := extract.LoadRecord(ctx, s.set.Side, ref, key)
	switch {
	case err == nil:
		v, ok := old.Value(extract.SourceContentPath)
		if !ok || v.SHA256 != sumHex || v.Size != size {
			return statusError{http.StatusConflict, fmt.Errorf("key %s: session %s already holds a tool result under this key with other content (sha256 %.16s…, %d bytes; this one %.16s…, %d bytes): the tool call id was used again; the result is not stored",
				key, ref, v.SHA256, v.Size, sumHex, size)}
		}
	case !errors.Is(err, bs.ErrNotFound):
		return fmt.Errorf("store %s in %s: read the record already stored under this key: %w", key, ref, err)
	}
	if _, err := extract.SaveRecord(ctx, s.set.Side, ref, rec); err != nil {
		return fmt.Errorf("store %s in %s: %w", key, ref, err)
	}
	if err := s.set.Side.Sync(ctx, ref); err != nil {
		return fmt.Errorf("store %s in %s: sync: %w", key, ref, err)
	}
	return nil
}

// compactJSON returns raw without insignificant white space (raw itself
// when it is not valid JSON, which the caller has ruled out).
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
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
type ToolResponse struct {
	OK      bool              `json:"ok"`
	Error   string            `json:"error,omitempty"`
	Content []json.RawMessage `json:"content"`
	Details any               `json:"details,omitempty"`
}

// textBlock returns a text content block.
func textBlock(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}

// toolOK is a successful answer whose text is split into blocks of at
// most MaxToolTextBlock UTF-16 units (the host truncates longer ones).
func toolOK(text string, details any) ToolResponse {
	var blocks []json.RawMessage
	for _, part := range splitUTF16(text, MaxToolTextBlock) {
		blocks = append(blocks, textBlock(part))
	}
	return ToolResponse{OK: true, Content: blocks, Details: details}
}

func toolFail(err error) ToolResponse {
	return ToolResponse{OK: false, Error: err.Error(), Content: []json.RawMessage{textBlock(err.Error())}}
}

// pluginTools are the tools POST /api/plugin/v1/tool runs.
var pluginTools = map[string]func(*server, context.Context, bs.SessionRef, toolRequest) (ToolResponse, error){
	"purge_control":   (*server).purgeControl,
	"recall_grep":     (*server).recallGrep,
	"recall_describe": (*server).recallDescribe,
	"recall_expand":   (*server).recallExpand,
}

// pluginTool answers POST /api/plugin/v1/tool: 200 with ok true or false
// for every call it could route; 4xx for a malformed request, an unknown
// tool, an invalid id or an unknown session.
func (s *server) pluginTool(r *http.Request) (any, error) {
	var q toolRequest
	if err := decodePlugin(r, &q); err != nil {
		return nil, err
	}
	run, ok := pluginTools[q.Tool]
	if !ok {
		return nil, fmt.Errorf("tool: expected purge_control, recall_grep, recall_describe or recall_expand, found %.60q: %w", q.Tool, bs.ErrInvalid)
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
	res, err := run(s, r.Context(), ref, q)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		s.log.Debug("plugin tool call failed", "tool", q.Tool, "session", ref.String(), "error", err)
		return toolFail(err), nil
	}
	return res, nil
}

// params decodes a tool's params; a type mismatch is the model's mistake,
// answered ok:false.
func params(q toolRequest, v any) error {
	if isNull(q.Params) {
		return nil
	}
	if err := json.Unmarshal(q.Params, v); err != nil {
		return fmt.Errorf("%s params: %v (expected the documented members)", q.Tool, err)
	}
	return nil
}

// purgeControl runs purge_control's actions.
func (s *server) purgeControl(ctx context.Context, ref bs.SessionRef, q toolRequest) (ToolResponse, error) {
	var p struct {
		Action string `json:"action"`
		// ValueID names the value (restore) or the entry
		// (set_extractable); OldKey is its old name, accepted for a while
		// (see valueID).
		ValueID string          `json:"value_id"`
		OldKey  string          `json:"key"`
		Keys    json.RawMessage `json:"keys"`
		Value   json.RawMessage `json:"value"`
		// Offset and MaxChars page a restore (agenttext.PageOf).
		Offset   json.RawMessage `json:"offset"`
		MaxChars json.RawMessage `json:"max_chars"`
		// Key is the value_id given under either name.
		Key string `json:"-"`
	}
	if err := params(q, &p); err != nil {
		return ToolResponse{}, err
	}
	var err error
	if p.Key, err = valueID(p.ValueID, p.OldKey); err != nil {
		return ToolResponse{}, fmt.Errorf("purge_control %s: %w", p.Action, err)
	}
	rs := s.restorerFor()
	switch p.Action {
	case "get_context":
		cx, err := rs.GetContext(ctx, ref)
		if err != nil {
			return ToolResponse{}, err
		}
		name := cx.Session
		if ref.Key != "" {
			name += " (" + ref.Key + ")"
		}
		var b strings.Builder
		agenttext.Context(&b, name, cx)
		return toolOK(b.String(), map[string]any{"session": cx.Session, "entries": cx.Entries,
			"context_messages": cx.ContextMessages, "bytes": cx.Bytes, "extracted_entries": len(cx.Extracted),
			"entries_with_placeholders": cx.EntriesWithPlaceholders, "extractable_now": cx.ExtractableNow,
			"extracted_bytes": cx.ExtractedBytes, "lost_values": cx.LostValues, "pending": cx.Pending}), nil
	case "restore":
		if p.Key == "" {
			return ToolResponse{}, errors.New(`purge_control restore: expected "value_id", the id of a [[extracted-<id>]] placeholder, found none`)
		}
		offset, err := intParam("purge_control restore: offset", p.Offset, 0)
		if err != nil {
			return ToolResponse{}, err
		}
		maxChars, err := intParam("purge_control restore: max_chars", p.MaxChars, agenttext.DefaultPageChars)
		if err != nil {
			return ToolResponse{}, err
		}
		if err := agenttext.CheckPage(offset, maxChars); err != nil {
			return ToolResponse{}, fmt.Errorf("purge_control restore: %w", err)
		}
		if extract.IsSourceKey(p.Key) {
			return s.restoreSource(ctx, ref, p.Key, offset, maxChars)
		}
		if res, ok, err := s.restoreView(ctx, ref, p.Key, p.Keys, offset, maxChars); ok {
			return res, err
		}
		keys, err := stringList(p.Keys)
		if err != nil {
			return ToolResponse{}, fmt.Errorf("purge_control restore: keys: %w", err)
		}
		// A later page reads what the first one restored: it writes
		// nothing again.
		res, err := rs.Restore(ctx, ref, p.Key, keys, restore.RestoreOptions{ToolCallID: q.ToolCallID, NoWriteBack: s.opts.ReadOnly || offset != 0})
		if res == nil {
			return ToolResponse{}, err
		}
		return s.restoreAnswer(p.Key, res, err, offset, maxChars)
	case "set_extractable":
		if p.Key == "" {
			return ToolResponse{}, errors.New(`purge_control set_extractable: expected "value_id", an entry id, found none`)
		}
		v := strings.TrimSpace(string(p.Value))
		var str string
		if json.Unmarshal(p.Value, &str) == nil {
			v = str // "true", "5" as strings, as the CLI takes them
		}
		if _, err := restore.ParseExtractableValue(v); err != nil {
			return ToolResponse{}, fmt.Errorf("purge_control set_extractable: value: %w", err)
		}
		if s.opts.ReadOnly {
			return ToolResponse{}, fmt.Errorf("purge_control set_extractable: the server is in read-only mode: setting _extractable of %s would write", p.Key)
		}
		res, err := rs.SetExtractable(ctx, ref, p.Key, v)
		if err != nil {
			return ToolResponse{}, err
		}
		var b strings.Builder
		agenttext.Set(&b, res)
		return toolOK(b.String(), res), nil
	}
	return ToolResponse{}, fmt.Errorf("purge_control: action: expected get_context, restore or set_extractable, found %.40q", p.Action)
}

// restoreAnswer answers purge_control restore of the entry key from the
// side store (res, and werr, the write-back's error). The content is the
// value, exactly: when the values restored are the entry's content (every
// key under message.content, Result.EntryContent), the entry's content
// blocks as they were before extraction, paged like a restore from the
// engine's view (pageValue), so that a restore from either path answers
// the same blocks; otherwise one text block per value, holding exactly
// its text (a value longer than MaxToolTextBlock in consecutive blocks).
// What the restore did (written back, queued, already restored, read-only,
// restored before) goes to the details' "note"; a warning (values missing
// or corrupt, keys ignored, not written back) also to a last text block of
// its own, after the values, since the model must know that not
// everything came back.
func (s *server) restoreAnswer(key string, res *restore.Result, werr error, offset, maxChars int) (ToolResponse, error) {
	var nb strings.Builder
	switch {
	case offset != 0:
		nb.WriteString(agenttext.LaterPageNote(res.EntryID))
	default:
		agenttext.RestoreNotes(&nb, res)
		if s.opts.ReadOnly && res.Restored {
			nb.WriteString("The server is in read-only mode: nothing was written back.\n")
		}
	}
	// Details are small metadata: the host keeps them in the transcript,
	// so they never repeat the values.
	d := map[string]any{"value_id": key, "entry_id": res.EntryID, "restored": res.Restored, "applied": res.Applied,
		"queued": res.Queued, "keys_restored": res.KeysRestored, "from": "side_store", "written_back": res.Applied,
		"note": strings.TrimSpace(nb.String())}
	if res.Warning != "" {
		d["warning"] = res.Warning
	}
	if res.AlreadyRestored {
		d["already_restored"] = true
	}
	if res.Suggestion != "" {
		d["suggestion"] = res.Suggestion
	}
	if werr != nil {
		d["write_back_error"] = werr.Error()
	}
	var out ToolResponse
	if res.EntryContent != nil {
		sv, err := viewSourceValue(key, res.EntryContent)
		if err != nil {
			return ToolResponse{}, fmt.Errorf("purge_control restore %s: %w", key, err)
		}
		if out, err = pageValue(sv, offset, maxChars, d); err != nil {
			return ToolResponse{}, err
		}
	} else {
		if offset != 0 {
			return ToolResponse{}, fmt.Errorf("purge_control restore: offset pages the content of a tool result, found it with the entry key %.60q, whose restored values (%s) are not its whole content and come whole", key, strings.Join(res.Keys(), ", "))
		}
		d["bytes"], d["sha256"] = restoredSum(res)
		var blocks []json.RawMessage
		for _, k := range res.Keys() {
			for _, part := range splitUTF16(res.Content[k], MaxToolTextBlock) {
				blocks = append(blocks, textBlock(part))
			}
		}
		d["blocks"] = len(blocks)
		out = ToolResponse{OK: true, Content: blocks, Details: d}
	}
	if res.Warning != "" {
		out.Content = append(out.Content, textBlock(agenttext.RestoreWarning(res)))
	}
	return out, nil
}

// valueID returns the id purge_control names a value or an entry by:
// value_id, or key, its old name. OpenClaw masks an argument named key in
// its transcript ("***"), so the tool spec and every hint say value_id;
// key is still accepted because older placeholders in transcripts name it.
// Both given and different is an error.
func valueID(id, oldKey string) (string, error) {
	switch {
	case oldKey == "" || oldKey == id:
		return id, nil
	case id == "":
		return oldKey, nil
	}
	return "", fmt.Errorf(`value_id %.80q and key %.80q (the old name of value_id) name different values: expected value_id only`, id, oldKey)
}

// stringList reads "a,b" or ["a","b"].
func stringList(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return strings.Split(one, ","), nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("expected a comma-separated string or an array of strings, found %.40s", string(raw))
	}
	return many, nil
}

// restoredSum returns the size of the values an entry restore returned
// and the hex sha256 of their text (of the one value, or of the values
// concatenated in the order of Result.Keys).
func restoredSum(res *restore.Result) (int, string) {
	n := 0
	h := sha256.New()
	for _, k := range res.Keys() {
		n += res.SizesBytes[k]
		h.Write([]byte(res.Content[k]))
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// intParam reads an integer param: a JSON number without a fraction or
// a string of digits; def when it is absent or null.
func intParam(member string, raw json.RawMessage, def int) (int, error) {
	if isNull(raw) {
		return def, nil
	}
	t := bytes.TrimSpace(raw)
	var str string
	if json.Unmarshal(t, &str) == nil {
		t = []byte(strings.TrimSpace(str))
	}
	n, err := strconv.Atoi(string(t))
	if err != nil {
		var f float64
		if json.Unmarshal(t, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("%s: expected an integer, found %.40s", member, string(raw))
		}
		n = int(f)
	}
	return n, nil
}

// restoreSource answers purge_control restore of a "tc-" key. When the
// text of its content (the text blocks concatenated) fits in one page
// (agenttext.PageOfLiteral) and offset is 0, the answer is the stored
// content blocks exactly (SplitTextBlocks, which a text that fits a page
// never needs). Otherwise it is that page: a header block saying which
// characters follow and how to get the next page, on the first page the
// content's other blocks (images) as stored, and last one text block
// holding exactly those characters. The text is paged on its stored JSON
// literals, so that every UTF-16 code unit the host wrote comes back,
// lone surrogates included. The key must be a record of this session;
// nothing is written.
func (s *server) restoreSource(ctx context.Context, ref bs.SessionRef, key string, offset, maxChars int) (ToolResponse, error) {
	sv, err := s.restorerFor().Source(ctx, ref, key)
	if err != nil {
		return ToolResponse{}, err
	}
	return pageValue(sv, offset, maxChars, nil)
}

// pageValue answers a restore of the content sv (see restoreSource):
// its blocks exactly when its text fits one page from offset 0, else the
// page asked for. more are added to the details.
func pageValue(sv *restore.SourceValue, offset, maxChars int, more map[string]any) (ToolResponse, error) {
	key := sv.Key
	var body []byte
	for _, lit := range sv.TextLiterals {
		b, err := agenttext.LiteralBody(lit)
		if err != nil {
			return ToolResponse{}, fmt.Errorf("stored content of %s: %v: %w", key, err, bs.ErrCorrupt)
		}
		body = append(body, b...)
	}
	page, err := agenttext.PageOfLiteral(body, offset, maxChars)
	if err != nil {
		return ToolResponse{}, fmt.Errorf("purge_control restore %s: %w", key, err)
	}
	details := map[string]any{"value_id": key, "bytes": sv.Bytes, "sha256": sv.SHA256, "offset": page.Offset,
		"next_offset": page.NextOffset, "total_chars": page.TotalChars}
	maps.Copy(details, more)
	if offset == 0 && page.Last() {
		blocks, err := SplitTextBlocks(sv.Content, MaxToolTextBlock)
		if err != nil {
			return ToolResponse{}, err
		}
		details["blocks"] = len(blocks)
		return ToolResponse{OK: true, Content: blocks, Details: details}, nil
	}
	blocks := []json.RawMessage{textBlock(agenttext.PageHeader(key, page))}
	if offset == 0 && sv.OtherBlocks > 0 {
		others, err := otherBlocks(sv.Content)
		if err != nil {
			return ToolResponse{}, err
		}
		blocks = append(blocks, others...)
	}
	blocks = append(blocks, literalTextBlock(page.Raw))
	details["end"], details["page"], details["pages"], details["max_chars"] = page.End, page.Number, page.Pages, page.MaxChars
	return ToolResponse{OK: true, Content: blocks, Details: details}, nil
}

// literalTextBlock returns a text content block whose "text" is the JSON
// string literal with the given body, as it is.
func literalTextBlock(body []byte) json.RawMessage {
	b := make([]byte, 0, len(body)+len(`{"type":"text","text":""}`))
	b = append(b, `{"type":"text","text":"`...)
	b = append(b, body...)
	return append(b, `"}`...)
}

// otherBlocks returns the blocks of content (a JSON array) that are not
// text blocks, each as its bytes in content.
func otherBlocks(content []byte) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	var out []json.RawMessage
	for _, b := range blocks {
		if _, ok := textLiteral(b); !ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// textLiteral returns the "text" literal of a text block (quotes
// included), or false when b is not a text block.
func textLiteral(b json.RawMessage) (json.RawMessage, bool) {
	var tb struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(b, &tb) != nil || tb.Type != "text" || len(tb.Text) < 2 || tb.Text[0] != '"' {
		return nil, false
	}
	return tb.Text, true
}

// SplitTextBlocks returns the content blocks of content (a JSON array),
// each as its bytes in content, except that a text block whose text is
// longer than max UTF-16 code units is replaced by consecutive text blocks
// of at most max code units each, cut between characters (a surrogate
// pair is never cut), whose texts concatenate to the exact text. The
// blocks are cut on the text's stored JSON literal, so every UTF-16 code
// unit comes back, lone surrogates included.
func SplitTextBlocks(content []byte, max int) ([]json.RawMessage, error) {
	var blocks []json.RawMessage
	if err := json.Unmarshal(content, &blocks); err != nil {
		return nil, fmt.Errorf("stored content: expected a JSON array of content blocks: %v: %w", err, bs.ErrCorrupt)
	}
	out := make([]json.RawMessage, 0, len(blocks))
	for _, b := range blocks {
		lit, ok := textLiteral(b)
		if !ok {
			out = append(out, b)
			continue
		}
		body := lit[1 : len(lit)-1]
		if len(body) <= max || agenttext.LiteralUTF16Len(body) <= max {
			out = append(out, b)
			continue
		}
		for _, part := range agenttext.SplitLiteral(body, max) {
			out = append(out, literalTextBlock(part))
		}
	}
	return out, nil
}

// splitUTF16 cuts s into parts of at most max UTF-16 code units, between
// code points.
func splitUTF16(s string, max int) []string {
	var parts []string
	start, n := 0, 0
	for i, r := range s {
		l := utf16.RuneLen(r)
		if l < 0 {
			l = 1 // an invalid byte becomes U+FFFD, one unit
		}
		if n+l > max {
			parts = append(parts, s[start:i])
			start, n = i, 0
		}
		n += l
	}
	return append(parts, s[start:])
}

// recallGrep runs recall_grep, as `brainsurgeon context grep`.
func (s *server) recallGrep(ctx context.Context, ref bs.SessionRef, q toolRequest) (ToolResponse, error) {
	var p struct {
		Pattern    string          `json:"pattern"`
		Regex      bool            `json:"regex"`
		IgnoreCase bool            `json:"ignore_case"`
		Max        *int            `json:"max"`
		In         json.RawMessage `json:"in"`
	}
	if err := params(q, &p); err != nil {
		return ToolResponse{}, err
	}
	if p.Pattern == "" {
		return ToolResponse{}, errors.New(`recall_grep: expected a non-empty "pattern", found none`)
	}
	if len(p.Pattern) > MaxGrepPattern {
		return ToolResponse{}, fmt.Errorf("recall_grep: pattern: expected at most %d bytes, found %d", MaxGrepPattern, len(p.Pattern))
	}
	max := recall.DefaultMaxHits
	if p.Max != nil {
		if *p.Max < 1 || *p.Max > MaxGrepHits {
			return ToolResponse{}, fmt.Errorf("recall_grep: max: expected 1 to %d, found %d", MaxGrepHits, *p.Max)
		}
		max = *p.Max
	}
	ins, err := stringList(p.In)
	if err != nil {
		return ToolResponse{}, fmt.Errorf("recall_grep: in: %w", err)
	}
	var where []recall.Where
	for _, w := range ins {
		switch w := recall.Where(strings.TrimSpace(w)); w {
		case recall.Active, recall.Compacted, recall.OffPath, recall.Extracted:
			where = append(where, w)
		case "":
		default:
			return ToolResponse{}, fmt.Errorf("recall_grep: in %q: expected active, compacted, off_path or extracted", w)
		}
	}
	tr, err := s.set.Store.Open(ctx, ref, nil)
	if err != nil {
		return ToolResponse{}, err
	}
	o := recall.GrepOptions{Regexp: p.Regex, IgnoreCase: p.IgnoreCase, MaxHits: max, In: where, Logger: s.opts.Logger}
	var b strings.Builder
	out, err := recall.Search(ctx, tr, s.set.Side, p.Pattern, o, true, func(h recall.Hit) {
		b.WriteString(agenttext.GrepHit(h))
		b.WriteByte('\n')
	})
	if errors.Is(err, bs.ErrInvalid) {
		return ToolResponse{}, fmt.Errorf("recall_grep: bad regex pattern %q: %v", p.Pattern, err)
	}
	if err != nil {
		return ToolResponse{}, err
	}
	agenttext.GrepSummary(&b, out, p.Pattern, max)
	return toolOK(b.String(), map[string]any{"count": out.Count, "truncated": out.Truncated}), nil
}

// recallDescribe runs recall_describe, as `brainsurgeon context describe`.
func (s *server) recallDescribe(ctx context.Context, ref bs.SessionRef, q toolRequest) (ToolResponse, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := params(q, &p); err != nil {
		return ToolResponse{}, err
	}
	if p.ID == "" {
		return ToolResponse{}, errors.New(`recall_describe: expected "id", an entry id or a summary id (sum-…), found none`)
	}
	if engine.IsSummaryID(p.ID) {
		return s.describeSummary(ctx, ref, p.ID)
	}
	tr, err := s.set.Store.Open(ctx, ref, nil)
	if err != nil {
		return ToolResponse{}, err
	}
	d, err := recall.Describe(ctx, tr, p.ID)
	if err != nil {
		return ToolResponse{}, err
	}
	var b strings.Builder
	agenttext.Description(&b, d)
	return toolOK(b.String(), map[string]any{"entry_id": d.EntryID, "line": d.Line, "type": d.Type, "role": d.Role,
		"where": d.Where, "bytes": d.Bytes, "extracted": d.Extracted, "compaction": d.Compaction != nil}), nil
}

// recallExpand runs recall_expand, as `brainsurgeon context expand`.
func (s *server) recallExpand(ctx context.Context, ref bs.SessionRef, q toolRequest) (ToolResponse, error) {
	var p struct {
		ID      string `json:"id"`
		Resolve bool   `json:"resolve"`
		Max     int    `json:"max"`
	}
	if err := params(q, &p); err != nil {
		return ToolResponse{}, err
	}
	if p.ID == "" {
		return ToolResponse{}, errors.New(`recall_expand: expected "id", a compaction entry id or a summary id (sum-…), found none`)
	}
	if p.Max < 0 {
		return ToolResponse{}, fmt.Errorf("recall_expand: max: expected 0 (all) or more, found %d", p.Max)
	}
	if engine.IsSummaryID(p.ID) {
		return s.expandSummary(ctx, ref, p.ID, p.Max)
	}
	tr, err := s.set.Store.Open(ctx, ref, nil)
	if err != nil {
		return ToolResponse{}, err
	}
	x, err := recall.Expand(ctx, tr, p.ID, recall.ExpandOptions{Resolve: p.Resolve, Side: s.set.Side, MaxEntries: p.Max, Logger: s.opts.Logger})
	if err != nil {
		return ToolResponse{}, err
	}
	var b strings.Builder
	b.WriteString(agenttext.ExpansionHeader(x, p.Max))
	b.WriteByte('\n')
	agenttext.ExpansionBody(&b, x, func(id string) string { return `recall_expand {"id":"` + id + `"}` })
	covers := make([]string, len(x.Covers))
	for i, c := range x.Covers {
		covers[i] = c.ID
	}
	return toolOK(b.String(), map[string]any{"total": x.Total, "entries": len(x.Entries), "truncated": x.Truncated, "covers": covers}), nil
}
