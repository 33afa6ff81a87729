package tokens

import (
	"encoding/json"

	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// Usage is what an assistant message records of the request that
// produced it. It is the one reader of recorded usage: the context
// measures, the engine's calibration, the compaction status and the
// usage series all read it here.
type Usage struct {
	// Provider and Model name who answered; StopReason is the message's
	// stopReason.
	Provider, Model, StopReason string
	// Context is the size of the request: input plus cache reads plus
	// cache writes under pi's names, else Anthropic's (input_tokens +
	// cache_read_input_tokens + cache_creation_input_tokens), else
	// OpenAI's prompt_tokens. Output is the answer's output tokens under
	// the same names.
	Context, Output int64
	// Total is the recorded totalTokens, else Context + Output.
	Total int64
}

// Answered reports whether the message is a model's answer to a request
// that completed, the only kind whose usage measures a context: not one
// of the host's delivery mirrors (provider "openclaw" or "clawdbot",
// written to the transcript without a model) and not a failed turn
// (stopReason "error" or "aborted").
func (u Usage) Answered() bool {
	switch u.Provider {
	case "openclaw", "clawdbot":
		return false
	}
	return u.StopReason != "error" && u.StopReason != "aborted"
}

// usageJSON is a usage object under the names the hosts and providers
// write.
type usageJSON struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	TotalTokens int64 `json:"totalTokens"`
	// Anthropic's names, as Claude Code writes them.
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	// OpenAI's names.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// RecordedUsage reads the usage an assistant message line records: the
// message's "usage" (a pi or OpenClaw line: {"message": {...}}), else the
// line's own "usage" (a line that is the message itself). Provider, Model
// and StopReason are read whether or not there is a usage; ok is false
// when the line records none (the counts are then 0). The line's other
// values (its content) are not decoded.
func RecordedUsage(raw []byte) (u Usage, ok bool) {
	obj := raw
	if s, e, found := jsonedit.Find(raw, "/message"); found {
		obj = raw[s:e]
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"/provider", &u.Provider}, {"/model", &u.Model}, {"/stopReason", &u.StopReason}} {
		if s, e, found := jsonedit.Find(obj, f.name); found {
			_ = json.Unmarshal(obj[s:e], f.to) // not a string: left empty
		}
	}
	var j *usageJSON
	if s, e, found := jsonedit.Find(obj, "/usage"); !found || json.Unmarshal(obj[s:e], &j) != nil || j == nil {
		return u, false
	}
	switch {
	case j.Input+j.CacheRead+j.CacheWrite > 0:
		u.Context = j.Input + j.CacheRead + j.CacheWrite
	case j.InputTokens+j.CacheReadTokens+j.CacheCreationTokens > 0:
		u.Context = j.InputTokens + j.CacheReadTokens + j.CacheCreationTokens
	default:
		u.Context = j.PromptTokens
	}
	u.Output = max(j.Output, j.OutputTokens, j.CompletionTokens)
	u.Total = j.TotalTokens
	if u.Total <= 0 {
		u.Total = u.Context + u.Output
	}
	return u, true
}
