package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// The context engine endpoints (POST /api/plugin/v1/assemble and
// POST /api/plugin/v1/compact) serve the context engine of BrainSurgeon's
// OpenClaw plugin: before each turn the plugin sends the skeleton of the
// host's messages and gets the view the model is sent (package engine),
// and the host's compaction asks here too. They sit behind the plugin
// routes' guard (JSON only, no unlisted Origin, the API key) and answer
// 501 when the server has no engine.

// MaxAssembleBodyBytes caps the body of POST /api/plugin/v1/assemble.
const MaxAssembleBodyBytes = 32 << 20

// MaxAssembleMessages is the most messages an assemble request may
// stand for: the messages it carries and, with a base, the messages the
// base names.
const MaxAssembleMessages = 200_000

// maxRoleChars bounds a message's role, in characters.
const maxRoleChars = 64

// MaxCompactInstructions bounds the custom_instructions of a compact
// request, in bytes (as the focus of a compaction asked for in the UI).
const MaxCompactInstructions = MaxFocus

// contextEngine is what the API uses of an *engine.Engine. It is the
// package's test seam (export_test.go's NewWithEngine gives a fake one),
// not part of the API.
type contextEngine interface {
	Assemble(ctx context.Context, ref bs.SessionRef, req engine.Request) (engine.View, error)
	Value(ctx context.Context, ref bs.SessionRef, entryID string) (engine.ViewValue, error)
	Status(ctx context.Context, ref bs.SessionRef) (engine.Status, error)
	Compact(ctx context.Context, ref bs.SessionRef, o engine.CompactOptions) (engine.CompactResult, error)
	Describe(ctx context.Context, ref bs.SessionRef, summaryID string) (engine.SummaryRecord, error)
	Expand(ctx context.Context, ref bs.SessionRef, summaryID string) ([][]byte, error)
}

// engineFor returns the engine of a request, nil when there is none.
func (s *server) engineFor() contextEngine {
	if s.testEngine != nil {
		return s.testEngine
	}
	if s.opts.Engine != nil {
		return s.opts.Engine
	}
	if s.opts.Daemon != nil {
		// The Daemon's engine follows its runtime config; a nil one
		// (the agents dir cannot be opened, or the daemon is closed) is
		// no engine, not a typed nil.
		if e := s.opts.Daemon.Engine(); e != nil {
			return e
		}
	}
	return nil
}

// errNoEngine is the error of an engine endpoint on a server without one.
var errNoEngine = statusError{http.StatusNotImplemented, errors.New("the context engine is not available: this server was started without one (api.Options.Engine); the plugin passes the host's messages through")}

// assembleRequest is the body of POST /api/plugin/v1/assemble.
type assembleRequest struct {
	pluginSessionRequest
	TokenBudget int              `json:"token_budget"`
	Model       string           `json:"model"`
	PromptChars int              `json:"prompt_chars"`
	Messages    []engine.Message `json:"messages"`
	// HostCall is which of the host's assemble calls this is:
	// engine.CallTurnStart or engine.CallModelRequest; absent (an older
	// plugin) or any other value means the plugin does not say.
	HostCall string `json:"host_call"`
	// MaxOutputTokens is, on the turn-start call, the tokens the host keeps
	// for the answer; its token_budget is then what the host leaves the
	// messages.
	MaxOutputTokens *int `json:"max_output_tokens"`
	// Base, when present, says that Messages holds only the host's
	// messages after its first Base.Messages, and that those are the list
	// the engine acknowledged (the "ack" of an earlier answer) or a prefix
	// of it, whose chain fingerprint is Base.Fingerprint. An older plugin
	// never sends it.
	Base *assembleBase `json:"base"`
}

// assembleBase is the "base" member of an assemble request.
type assembleBase struct {
	Messages    int    `json:"messages"`
	Fingerprint string `json:"fingerprint"`
}

// check reports whether b names a list of messages: a count ≥ 0 and a
// fingerprint of 16 lowercase hexadecimal digits (engine.ChainFingerprint).
func (b *assembleBase) check() error {
	if b.Messages < 0 {
		return fmt.Errorf("base.messages: expected the count of messages the base names, ≥ 0, found %d: %w", b.Messages, bs.ErrInvalid)
	}
	ok := len(b.Fingerprint) == 16
	for i := 0; ok && i < len(b.Fingerprint); i++ {
		c := b.Fingerprint[i]
		ok = c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
	}
	if !ok {
		return fmt.Errorf("base.fingerprint: expected 16 lowercase hexadecimal digits (the chain fingerprint of an ack), found %.40q: %w", b.Fingerprint, bs.ErrInvalid)
	}
	return nil
}

// AssembleResponse is the answer of POST /api/plugin/v1/assemble: the
// view (package engine) and "ok": true. Replace and Layers are never
// null.
type AssembleResponse struct {
	OK bool `json:"ok"`
	engine.View
}

// checkMessages checks the skeleton of the host's messages that a
// request carries (with a base, only those after it).
func checkMessages(msgs []engine.Message) error {
	if len(msgs) > MaxAssembleMessages {
		return fmt.Errorf("messages: expected at most %d messages, found %d: %w", MaxAssembleMessages, len(msgs), bs.ErrInvalid)
	}
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		if n := utf8.RuneCountInString(m.Role); n == 0 || n > maxRoleChars {
			return fmt.Errorf("%s.role: expected a role of 1 to %d characters, found %d characters (%.80q): %w", at, maxRoleChars, n, m.Role, bs.ErrInvalid)
		}
		if err := agenttools.CheckText(at+".role", m.Role); err != nil {
			return err
		}
		if m.Timestamp < 0 {
			return fmt.Errorf("%s.timestamp: expected Unix milliseconds ≥ 0 (0 for none), found %d: %w", at, m.Timestamp, bs.ErrInvalid)
		}
		if m.Chars < 0 {
			return fmt.Errorf("%s.chars: expected the content's length ≥ 0, found %d: %w", at, m.Chars, bs.ErrInvalid)
		}
		if m.ToolCallID != "" {
			if err := checkToolCallID(m.ToolCallID); err != nil {
				return fmt.Errorf("%s.%w", at, err)
			}
		}
		for j, id := range m.ToolCallIDs {
			if err := checkToolCallID(id); err != nil {
				return fmt.Errorf("%s.tool_call_ids[%d]: %w", at, j, errors.Unwrap(err))
			}
		}
	}
	return nil
}

// AssembleDeadline bounds one assemble request: the plugin waits 5 s by
// default (assembleTimeoutMs), and a view served a little before that is
// worth more than a summary that arrives after the plugin gave up. A
// summary the engine is still writing then is picked up by a later turn.
const AssembleDeadline = 4 * time.Second

// CompactDeadline bounds one compact request, below the plugin's default
// wait (compactTimeoutMs, 120 s): the engine falls back to the
// deterministic summary before it, so a compact always answers.
const CompactDeadline = 110 * time.Second

// pluginAssemble answers POST /api/plugin/v1/assemble with the view of
// one turn. In read-only mode the view is served as well (the engine
// writes only BrainSurgeon's own state, never the host's rows). Every
// call is counted in the server's engine Meter with the time it took
// (from the request's decoding to its answer, the answer's write left
// out), and every view served, a pass-through included, is logged at
// debug level.
func (s *server) pluginAssemble(r *http.Request) (any, error) {
	start := time.Now()
	a, err := s.assemble(r)
	took := time.Since(start)
	if err != nil {
		// A base the engine does not hold is a step of the wire, not a
		// failure: the plugin sends the whole list at once.
		if !errors.Is(err, engine.ErrNeedFull) {
			s.meter.Record(engine.OutcomeFailure, took)
		}
		return nil, err
	}
	v := a.view
	if v.Replace == nil {
		v.Replace = []engine.Replacement{}
	}
	if v.Layers == nil {
		v.Layers = []string{}
	}
	outcome := engine.OutcomeView
	if v.Passthrough != "" {
		outcome = engine.OutcomePassthrough
	}
	s.meter.Record(outcome, took)
	s.plugin.view(v.Passthrough)
	summaryID := ""
	if v.Summary != nil {
		summaryID = v.Summary.ID
	}
	// Tokens by the host's own rule for text it has not counted: four
	// characters a token, rounded up.
	s.log.Debug("context engine: view served", "session", a.session, "turn", v.Turn, "messages", a.messages, "sent", a.sent,
		"layers", v.Layers, "host_chars", v.HostChars, "view_chars", v.Chars,
		"host_tokens", charTokens(v.HostChars), "view_tokens", charTokens(v.Chars), "prefix_changed", v.Changed,
		"summary_id", summaryID, "elapsed_ms", float64(took.Microseconds())/1000, "engine_ms", v.ElapsedMS,
		"passthrough", v.Passthrough)
	return AssembleResponse{OK: true, View: v}, nil
}

// charTokens returns the tokens of n characters by the rule of four
// characters a token, rounded up.
func charTokens(n int) int { return (n + 3) / 4 }

// assembled is an assemble call's view, with the session it is of, how
// many messages the host's list holds and how many of them the request
// carried (all but its base).
type assembled struct {
	view     engine.View
	session  string
	messages int
	sent     int
}

// assemble decodes an assemble request and returns its view.
func (s *server) assemble(r *http.Request) (assembled, error) {
	eng := s.engineFor()
	if eng == nil {
		return assembled{}, errNoEngine
	}
	var q assembleRequest
	if err := decodePlugin(r, &q); err != nil {
		return assembled{}, err
	}
	if q.TokenBudget < 0 {
		return assembled{}, fmt.Errorf("token_budget: expected the context window in tokens ≥ 0 (0: the configured window), found %d: %w", q.TokenBudget, bs.ErrInvalid)
	}
	if q.PromptChars < 0 {
		return assembled{}, fmt.Errorf("prompt_chars: expected the prompt's length ≥ 0, found %d: %w", q.PromptChars, bs.ErrInvalid)
	}
	if err := agenttools.CheckText("model", q.Model); err != nil {
		return assembled{}, err
	}
	if q.MaxOutputTokens != nil && *q.MaxOutputTokens < 0 {
		return assembled{}, fmt.Errorf("max_output_tokens: expected the host's reserve in tokens ≥ 0, found %d: %w", *q.MaxOutputTokens, bs.ErrInvalid)
	}
	if err := checkMessages(q.Messages); err != nil {
		return assembled{}, err
	}
	req := engine.Request{Messages: q.Messages, TokenBudget: q.TokenBudget, PromptChars: q.PromptChars, Model: q.Model}
	total := len(q.Messages)
	if q.Base != nil {
		if err := q.Base.check(); err != nil {
			return assembled{}, err
		}
		if total += q.Base.Messages; total > MaxAssembleMessages {
			return assembled{}, fmt.Errorf("base.messages: expected at most %d messages with the %d sent, found %d: %w", MaxAssembleMessages, len(q.Messages), total, bs.ErrInvalid)
		}
		req.Base, req.BaseFingerprint = q.Base.Messages, q.Base.Fingerprint
	}
	switch q.HostCall {
	case engine.CallTurnStart, engine.CallModelRequest:
		// A value this daemon does not know is a newer plugin's: the call
		// is then served like one whose plugin does not say.
		req.HostCall = q.HostCall
	}
	if req.HostCall == engine.CallTurnStart && q.MaxOutputTokens != nil {
		req.ReserveTokens = *q.MaxOutputTokens
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if errors.Is(err, bs.ErrNotFound) && q.Base != nil {
		// Nothing is held of a session that is not stored: the plugin
		// sends the whole list, which then passes through below.
		return assembled{}, fmt.Errorf("assemble with a base: %v: %w", bs.ErrorMessage(err), engine.ErrNeedFull)
	}
	if errors.Is(err, bs.ErrNotFound) {
		// A new session's first model call can come before the host has
		// stored anything of it (OpenClaw 2026.7 writes the transcript
		// after it): there is nothing to layer yet, so the host's messages
		// pass through, and that is an answer, not a failed call.
		why := fmt.Sprintf("the session is not stored yet (a new session's first turn, or this daemon serves another agents dir than the host's): %v", bs.ErrorMessage(err))
		s.log.Info("context engine: the host's messages pass through unchanged", "why", why, "messages", len(q.Messages))
		chars := 0
		for _, m := range q.Messages {
			chars += m.Chars
		}
		name := q.SessionID
		switch {
		case name == "":
			name = q.SessionKey
		case q.AgentID != "":
			name = q.AgentID + "/" + name
		}
		// The estimate is the host's own rule for text it has not counted:
		// four characters a token.
		return assembled{view: engine.View{Replace: []engine.Replacement{}, Layers: []string{},
			Passthrough: why, EstimatedTokens: charTokens(chars), HostChars: chars, Chars: chars},
			session: name, messages: len(q.Messages), sent: len(q.Messages)}, nil
	}
	if err != nil {
		return assembled{}, err
	}
	ctx, cancel := context.WithTimeout(r.Context(), AssembleDeadline)
	defer cancel()
	v, err := eng.Assemble(ctx, ref, req)
	if err != nil {
		return assembled{}, fmt.Errorf("assemble the view of %s: %w", ref, err)
	}
	if v.Passthrough != "" {
		s.log.Info("context engine: the host's messages pass through unchanged", "session", ref.String(), "why", v.Passthrough,
			"messages", total)
	}
	return assembled{view: v, session: ref.String(), messages: total, sent: len(q.Messages)}, nil
}

// engineCompactRequest is the body of POST /api/plugin/v1/compact.
type engineCompactRequest struct {
	pluginSessionRequest
	TokenBudget        int    `json:"token_budget"`
	Force              bool   `json:"force"`
	CurrentTokenCount  int    `json:"current_token_count"`
	CustomInstructions string `json:"custom_instructions"`
	// CompactionTarget is the host's compactionTarget: "budget" (fit the
	// window: before a turn, or after an overflow), "threshold" (a /compact
	// the user asked for) or "" (unknown).
	CompactionTarget string `json:"compaction_target"`
}

// CompactResponse is the answer of POST /api/plugin/v1/compact.
type CompactResponse struct {
	OK           bool   `json:"ok"`
	Compacted    bool   `json:"compacted"`
	Reason       string `json:"reason"`
	Layer        string `json:"layer"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
	// Summary is the text of the summary made, "" when none.
	Summary string `json:"summary"`
}

// pluginCompact answers POST /api/plugin/v1/compact: the engine shrinks
// the session's view (a summary in BrainSurgeon's state; the host's rows
// are never written). In read-only mode it compacts nothing and says so.
func (s *server) pluginCompact(r *http.Request) (any, error) {
	eng := s.engineFor()
	if eng == nil {
		return nil, errNoEngine
	}
	var q engineCompactRequest
	if err := decodePlugin(r, &q); err != nil {
		return nil, err
	}
	if q.TokenBudget < 0 {
		return nil, fmt.Errorf("token_budget: expected the context window in tokens ≥ 0 (0: the configured window), found %d: %w", q.TokenBudget, bs.ErrInvalid)
	}
	if q.CurrentTokenCount < 0 {
		return nil, fmt.Errorf("current_token_count: expected a token count ≥ 0, found %d: %w", q.CurrentTokenCount, bs.ErrInvalid)
	}
	if len(q.CustomInstructions) > MaxCompactInstructions {
		return nil, fmt.Errorf("custom_instructions: expected at most %d bytes, found %d: %w", MaxCompactInstructions, len(q.CustomInstructions), bs.ErrInvalid)
	}
	if !utf8.ValidString(q.CustomInstructions) {
		return nil, fmt.Errorf("custom_instructions: expected valid UTF-8: %w", bs.ErrInvalid)
	}
	switch q.CompactionTarget {
	case "", engine.TargetBudget, engine.TargetThreshold:
	default:
		return nil, fmt.Errorf("compaction_target: expected %q, %q or none, found %.40q: %w", engine.TargetBudget, engine.TargetThreshold, q.CompactionTarget, bs.ErrInvalid)
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if err != nil {
		return nil, err
	}
	if s.opts.ReadOnly {
		return CompactResponse{OK: true, Reason: "read-only"}, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), CompactDeadline)
	defer cancel()
	res, err := eng.Compact(ctx, ref, engine.CompactOptions{TokenBudget: q.TokenBudget, Force: q.Force,
		Focus: q.CustomInstructions, CurrentTokens: q.CurrentTokenCount, Target: q.CompactionTarget})
	if err != nil {
		return nil, fmt.Errorf("compact the view of %s: %w", ref, err)
	}
	out := CompactResponse{OK: true, Compacted: res.Compacted, Reason: res.Reason, Layer: res.Layer,
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter}
	if res.Summary != nil {
		out.Summary = res.Summary.Text
	}
	s.log.Info("context engine: compact", "session", ref.String(), "compacted", res.Compacted, "layer", res.Layer,
		"reason", res.Reason, "tokens_before", res.TokensBefore, "tokens_after", res.TokensAfter)
	return out, nil
}

// engineStatus returns the engine's status of ref for the session
// detail: nil when there is no engine, the engine has not served the
// session, or its state cannot be read (logged).
func (s *server) engineStatus(ctx context.Context, ref bs.SessionRef) *engine.Status {
	eng := s.engineFor()
	if eng == nil {
		return nil
	}
	st, err := eng.Status(ctx, ref)
	if err != nil {
		if !errors.Is(err, bs.ErrNotFound) && !errors.Is(err, bs.ErrUnsupported) {
			s.log.Warn("context engine: status not read", "session", ref.String(), "error", err.Error())
		}
		return nil
	}
	if !st.Active {
		return nil
	}
	return &st
}
