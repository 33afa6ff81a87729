package openclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Model is a scripted model server in the test process: Ollama's native API (the protocol OpenClaw's "ollama"
// provider speaks) on a loopback port. It is what [Mock] is, in Go, with the controls a soak needs: calls can be
// held open, made to fail with HTTP 500, or answered with a tool call, and every request body is kept byte for
// byte as the host sent it.
//
// A chat request whose newest user message (OpenClaw's injected internal-context message aside) holds
// "CALL:<tool>:<json-args>" is answered with a call of <tool> (through "tool_call" when the host offers the tool
// only in its Tool Search catalog). A message may hold several CALLs, separated by white space: they are made
// one after the other, each once the result of the one before has come back. A request whose newest message is
// a tool result and whose CALLs are all made is answered "model final <n>"; any other with "model reply <n>".
// A request that offers no tools is never answered with a call: when its newest user message holds a conversation
// in <conversation> tags (the host's own compaction asks so), it is answered [SummaryOf] that message.
//
// Every answer reports, as prompt_eval_count, the model's measured size of the request: [MeasuredTokens] of its
// body. The host records it as the turn's input usage, so that what the host and BrainSurgeon read back as "the
// size the provider measured" is a known function of the bytes the model received. [Model.SetWindow] makes the
// model refuse requests above a window as a provider does (HTTP 400 with a context-length error).
// [Model.RejectUnpaired] makes it refuse, on every chat endpoint it serves, requests with unpaired tool blocks the
// way OpenAI-compatible providers do (HTTP 400; see [CheckPairing]).
//
// The Model also serves OpenAI's chat-completions protocol (POST /v1/chat/completions). A request that is not
// streamed is a summary request, so that a summarizer can be pointed at it (base URL <URL>/v1): it answers a
// deterministic markdown summary of the conversation in the request's newest user message (see [SummaryOf]).
// Those requests are recorded apart ([Model.SummaryRequests]); [Model.FailNext] applies to them too, and
// [Model.FailSummaries] to them alone. A streamed request ("stream": true, as an agent's OpenAI-compatible
// provider sends, e.g. pi's "openai-completions") is a chat request like /api/chat, scripted the same way and
// recorded with them ([Model.Requests]), answered as server-sent chunks (a tool call has the id "call_<n>").
type Model struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu      sync.Mutex
	cond    *sync.Cond
	held    bool
	waiting int  // calls waiting at the gate now
	holds   int  // calls the gate has held so far
	fail    int  // how many of the next calls answer 500
	sfail   int  // how many of the next summary calls answer 500
	window  int  // requests measured above it answer 400 (0: no limit)
	unpair  bool // requests with unpaired tool blocks answer 400
	reqs    []ModelRequest
	sums    []ModelRequest
	n       int
}

// ModelRequest is one chat request (POST /api/chat, or a streamed POST /v1/chat/completions) or summary request
// as the model received it.
type ModelRequest struct {
	// At is when the request arrived.
	At time.Time
	// Body is the request body, byte for byte.
	Body []byte
	// Status is the HTTP status the model answered with (0 while it is held).
	Status int
	// Tokens is the request's measured size, [MeasuredTokens] of Body (what the answer reports as
	// prompt_eval_count).
	Tokens int
	// Unpaired is set when the model refused the request (HTTP 400) for unpaired tool blocks
	// ([Model.RejectUnpaired]); nil otherwise.
	Unpaired *Unpaired
}

// MeasuredTokens returns the model's measured size of a chat request body (Ollama's /api/chat or OpenAI's
// /v1/chat/completions): ceil((bytes of the JSON of its "messages" + bytes of the JSON of its "tools") / 4), the
// members counted byte for byte as the client sent them (a missing member counts 0). A body that is not a JSON
// object counts its whole length.
func MeasuredTokens(body []byte) int {
	var req struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	n := len(body)
	if json.Unmarshal(body, &req) == nil {
		n = len(req.Messages) + len(req.Tools)
	}
	return (n + 3) / 4
}

// StartModel starts a Model on a free loopback port. Close stops it.
func StartModel() (*Model, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &Model{ln: ln, done: make(chan struct{})}
	m.cond = sync.NewCond(&m.mu)
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln)
	}()
	return m, nil
}

// URL returns the base URL, http://127.0.0.1:<port>.
func (m *Model) URL() string { return "http://" + m.ln.Addr().String() }

// Close releases every held call and stops the server.
func (m *Model) Close() error {
	m.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err != nil {
		err = m.srv.Close()
	}
	<-m.done
	return err
}

// Hold makes later chat calls wait until Release.
func (m *Model) Hold() {
	m.mu.Lock()
	m.held = true
	m.mu.Unlock()
}

// Release lets held and later chat calls answer.
func (m *Model) Release() {
	m.mu.Lock()
	m.held = false
	m.cond.Broadcast()
	m.mu.Unlock()
}

// FailNext makes the next n chat calls answer HTTP 500 (after the gate, if held).
func (m *Model) FailNext(n int) {
	m.mu.Lock()
	m.fail = n
	m.mu.Unlock()
}

// FailSummaries makes the next n summary calls (POST /v1/chat/completions) answer HTTP 500; chat calls are not
// affected.
func (m *Model) FailSummaries(n int) {
	m.mu.Lock()
	m.sfail = n
	m.mu.Unlock()
}

// SetWindow makes the model refuse every later request whose measured size ([MeasuredTokens]) is above tokens,
// with HTTP 400 and an Ollama-style context-length error that OpenClaw classifies as a context overflow; 0 lifts
// the limit. Refused requests are recorded with status 400.
func (m *Model) SetWindow(tokens int) {
	m.mu.Lock()
	m.window = max(tokens, 0)
	m.mu.Unlock()
}

// RejectUnpaired turns on (or off) the refusal of chat requests with unpaired tool blocks: while on, every later
// request (POST /api/chat and POST /v1/chat/completions) for which [CheckPairing] finds an unpaired block is
// answered HTTP 400 with the body an OpenAI-compatible provider sends ([Unpaired.Body]) and recorded with status
// 400 and its finding in [ModelRequest.Unpaired]. Off by default.
func (m *Model) RejectUnpaired(on bool) {
	m.mu.Lock()
	m.unpair = on
	m.mu.Unlock()
}

// Rejected returns the requests (chat and summary, in arrival order within each) refused for unpaired tool blocks
// so far.
func (m *Model) Rejected() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ModelRequest
	for _, r := range append(append([]ModelRequest(nil), m.reqs...), m.sums...) {
		if r.Unpaired != nil {
			out = append(out, r)
		}
	}
	return out
}

// OverflowError is the error text of a request refused by [Model.SetWindow] for tokens measured over window.
func OverflowError(tokens, window int) string {
	return fmt.Sprintf("context length exceeded: the prompt is %d tokens, the model's context window is %d tokens", tokens, window)
}

// SummaryRequests returns the summary requests (POST /v1/chat/completions) so far, in arrival order. The bodies
// are shared: do not modify them.
func (m *Model) SummaryRequests() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ModelRequest(nil), m.sums...)
}

// Holds returns how many chat calls the gate has held so far.
func (m *Model) Holds() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.holds
}

// WaitHeld waits until the gate has held more than before calls, or ctx is done.
func (m *Model) WaitHeld(ctx context.Context, before int) error {
	for {
		if n := m.Holds(); n > before {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no model call was held: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Requests returns the chat requests so far, in arrival order. The bodies are shared: do not modify them.
func (m *Model) Requests() []ModelRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ModelRequest(nil), m.reqs...)
}

// internalContext starts the user message OpenClaw appends to every request.
const internalContext = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"

var callRE = regexp.MustCompile(`(?s)CALL:([a-zA-Z0-9_]+):(\{.*?\})(?:\s|$)`)

type ollamaMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// plan decides the answer to a chat request: a tool call (name, arguments) or a text.
func plan(body []byte, n int) (tool string, args json.RawMessage, text string) {
	var req struct {
		Messages []ollamaMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	// user is the newest user message that is not the host's internal context; last the newest message of all
	// but those.
	var last, user *ollamaMessage
	done := 0 // tool results after user
	for i := len(req.Messages) - 1; i >= 0; i-- {
		msg := &req.Messages[i]
		if msg.Role == "user" && bytes.HasPrefix([]byte(textOf(msg.Content)), []byte(internalContext)) {
			continue
		}
		if last == nil {
			last = msg
		}
		if msg.Role == "tool" {
			done++
		}
		if msg.Role == "user" {
			user = msg
			break
		}
	}
	text = "model reply " + strconv.Itoa(n)
	if len(req.Tools) == 0 {
		// No tools offered: a summary request of the host's own compaction (the conversation in <conversation>
		// tags) or a plain completion; never a tool call, whatever the quoted conversation holds.
		if user != nil && strings.Contains(textOf(user.Content), "<conversation>") {
			return "", nil, SummaryOf(textOf(user.Content))
		}
		if last != nil && last.Role == "tool" {
			return "", nil, "model final " + strconv.Itoa(n)
		}
		return "", nil, text
	}
	if last != nil && last.Role == "tool" && user == nil {
		return "", nil, "model final " + strconv.Itoa(n)
	}
	if last == nil || user == nil || (last.Role != "tool" && last.Role != "user") {
		return "", nil, text
	}
	calls := callRE.FindAllStringSubmatch(textOf(user.Content), -1)
	if last.Role == "tool" && done >= len(calls) {
		return "", nil, "model final " + strconv.Itoa(n)
	}
	if len(calls) == 0 {
		return "", nil, text
	}
	if last.Role == "user" {
		done = 0
	}
	mm := calls[done]
	offered := false
	hasSearch := false
	for _, t := range req.Tools {
		offered = offered || t.Function.Name == mm[1]
		hasSearch = hasSearch || t.Function.Name == "tool_call"
	}
	if !offered && hasSearch {
		a, _ := json.Marshal(map[string]any{"id": mm[1], "args": json.RawMessage(mm[2])})
		return "tool_call", a, ""
	}
	return mm[1], json.RawMessage(mm[2]), ""
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/api/version":
		writeJSON(w, http.StatusOK, map[string]any{"version": "0.12.6"})
	case "/api/tags":
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{map[string]any{"name": MockModel, "model": MockModel,
			"modified_at": time.Now().UTC().Format(time.RFC3339), "size": 2019393189, "digest": string(bytes.Repeat([]byte("a"), 64)),
			"details": map[string]any{"format": "gguf", "family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}}}})
	case "/api/ps":
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{}})
	case "/api/show":
		writeJSON(w, http.StatusOK, map[string]any{"modelfile": "", "parameters": "", "template": "",
			"details":      map[string]any{"family": "llama"},
			"model_info":   map[string]any{"general.architecture": "llama", "llama.context_length": 131072},
			"capabilities": []string{"completion", "tools"}})
	case "/api/chat":
		m.chat(w, r, body, false)
	case "/v1/chat/completions":
		if streamed(body) {
			m.chat(w, r, body, true)
		} else {
			m.summary(w, body)
		}
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not found"})
	}
}

// chat serves a chat request: Ollama's POST /api/chat, or, when openAI is set, a streamed OpenAI POST
// /v1/chat/completions (answered by [writeOpenAIChat]).
func (m *Model) chat(w http.ResponseWriter, r *http.Request, body []byte, openAI bool) {
	m.mu.Lock()
	m.n++
	n := m.n
	idx := len(m.reqs)
	tokens := MeasuredTokens(body)
	m.reqs = append(m.reqs, ModelRequest{At: time.Now(), Body: body, Tokens: tokens})
	if m.held {
		m.holds++
		m.waiting++
		stop := context.AfterFunc(r.Context(), func() {
			m.mu.Lock()
			m.cond.Broadcast()
			m.mu.Unlock()
		})
		for m.held && r.Context().Err() == nil {
			m.cond.Wait()
		}
		stop()
		m.waiting--
	}
	fail := m.fail > 0
	if fail {
		m.fail--
	}
	var unpaired *Unpaired
	if !fail && m.unpair {
		unpaired = CheckPairing(body)
	}
	window := m.window
	over := !fail && unpaired == nil && window > 0 && tokens > window
	status := http.StatusOK
	switch {
	case fail:
		status = http.StatusInternalServerError
	case unpaired != nil, over:
		status = http.StatusBadRequest
	}
	m.reqs[idx].Status = status
	m.reqs[idx].Unpaired = unpaired
	m.mu.Unlock()
	if r.Context().Err() != nil {
		return
	}
	if fail {
		if openAI {
			writeJSON(w, status, map[string]any{"error": map[string]any{"message": "model " + strconv.Itoa(n) + " failed on purpose", "type": "server_error"}})
			return
		}
		writeJSON(w, status, map[string]any{"error": "model " + strconv.Itoa(n) + " failed on purpose"})
		return
	}
	if unpaired != nil {
		writeJSON(w, status, unpaired.Body())
		return
	}
	if over {
		if openAI {
			writeJSON(w, status, map[string]any{"error": map[string]any{"message": OverflowError(tokens, window),
				"type": "invalid_request_error", "code": "context_length_exceeded"}})
			return
		}
		writeJSON(w, status, map[string]any{"error": OverflowError(tokens, window)})
		return
	}
	tool, args, text := plan(body, n)
	if openAI {
		writeOpenAIChat(w, body, n, tokens, tool, args, text)
		return
	}
	msg := map[string]any{"role": "assistant", "content": text}
	if tool != "" {
		msg = map[string]any{"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"function": map[string]any{"name": tool, "arguments": args}}}}
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	final := map[string]any{"model": MockModel, "created_at": now, "message": map[string]any{"role": "assistant", "content": ""},
		"done": true, "done_reason": "stop", "total_duration": 1000000, "load_duration": 1000, "prompt_eval_count": tokens,
		"prompt_eval_duration": 1000, "eval_count": 5, "eval_duration": 1000}
	var req struct {
		Stream *bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	if req.Stream != nil && !*req.Stream {
		final["message"] = msg
		writeJSON(w, http.StatusOK, final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	_ = enc.Encode(map[string]any{"model": MockModel, "created_at": now, "message": msg, "done": false})
	_ = enc.Encode(final)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
