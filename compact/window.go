package compact

import (
	"fmt"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// The sources of a context window (StatusReport.WindowSource).
const (
	// WindowHostConfig: the host's configuration names the window of the
	// session's model (OpenClaw's openclaw.json or the agent's
	// models.json).
	WindowHostConfig = "host_config"
	// WindowModelTable: the transcript records the session's model and
	// [ModelWindow] knows its window.
	WindowModelTable = "model_table"
	// WindowConfig: our config's compaction.context_window
	// (Settings.ContextWindow).
	WindowConfig = "config"
)

// Window is the context window of a session's model and where it comes
// from.
type Window struct {
	// Tokens is the window in tokens.
	Tokens int
	// Source is WindowHostConfig, WindowModelTable or WindowConfig.
	Source string
	// From says where the window was found, for people (a config key and
	// file, a model name).
	From string
}

// WindowFunc returns the context window of the model a session uses.
// model is the "provider/model" the session's latest assistant message
// records ("" when none does). ok is false when the function knows no
// window for it.
type WindowFunc func(ref bs.SessionRef, model string) (w Window, ok bool)

// modelWindows are the context windows of model families whose window
// is fixed by their provider, matched on the model id (after the last
// "/") by prefix, first match wins. Models whose window depends on how
// they are served (local models: Ollama's num_ctx, vLLM's
// max_model_len) are not listed: the config or the host's config says
// theirs.
var modelWindows = []struct {
	prefix string
	tokens int
}{
	// Anthropic: the Claude 5 families take 1M tokens (as OpenClaw
	// resolves them); earlier Claude models 200K.
	{"claude-opus-5", 1_000_000},
	{"claude-sonnet-5", 1_000_000},
	{"claude-fable-5", 1_000_000},
	{"claude-mythos-5", 1_000_000},
	{"claude-", 200_000},
	// OpenAI.
	{"gpt-4o", 128_000},
	{"gpt-4.1", 1_047_576},
	{"gpt-5", 400_000},
	{"o3", 200_000},
	{"o4-mini", 200_000},
	// Google.
	{"gemini-2.5", 1_048_576},
	{"gemini-2.0", 1_048_576},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-1.5-flash", 1_048_576},
}

// ModelWindow returns the context window of model ("provider/model" or
// a bare model id) from the table of model families whose window their
// provider fixes (Claude, GPT-4o/4.1/5, o3, o4-mini, Gemini 1.5–2.5); ok
// is false for any other model, local models included.
func ModelWindow(model string) (tokens int, ok bool) {
	id := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	if id == "" {
		return 0, false
	}
	for _, m := range modelWindows {
		if strings.HasPrefix(id, m.prefix) {
			return m.tokens, true
		}
	}
	return 0, false
}

// resolveWindow returns the context window of the session ref whose
// latest assistant message records model: from fn (the host's config)
// when it names one, else from the model table, else from s.
func resolveWindow(fn WindowFunc, ref bs.SessionRef, model string, s Settings) Window {
	if fn != nil {
		if w, ok := fn(ref, model); ok && w.Tokens > 0 {
			if w.Source == "" {
				w.Source = WindowHostConfig
			}
			return w
		}
	}
	if n, ok := ModelWindow(model); ok {
		return Window{Tokens: n, Source: WindowModelTable, From: fmt.Sprintf("the window of %s, the model the transcript records", model)}
	}
	from := "compaction.context_window of the config"
	if model != "" {
		from += fmt.Sprintf(" (no window known for %s, the model the transcript records)", model)
	}
	return Window{Tokens: s.ContextWindow, Source: WindowConfig, From: from}
}
