package tokens

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
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
// line's own "usage" (a line that is the message itself, or a message
// without one). Provider, Model and StopReason are the message's (the
// line's own without a message object) and are read whether or not there
// is a usage; ok is false when the line records none (the counts are then
// 0). The line is read in one pass; its other values (the content) are
// skipped, not decoded. Of a member named twice the last counts, as in
// JSON.parse.
func RecordedUsage(raw []byte) (u Usage, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var top, msg usageFields
	hasMsg := false
	err := readObject(dec, func(name string) error {
		if name == "message" && dec.PeekKind() == '{' {
			hasMsg = true
			msg = usageFields{}
			return readObject(dec, func(name string) error { return msg.read(dec, name) })
		}
		return top.read(dec, name)
	})
	if err != nil {
		return Usage{}, false
	}
	f := top
	if hasMsg {
		f = msg
		if f.usage == nil {
			f.usage = top.usage
		}
	}
	u = Usage{Provider: f.provider, Model: f.model, StopReason: f.stopReason}
	j := f.usage
	if j == nil {
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

// usageFields are the members RecordedUsage reads of one object.
type usageFields struct {
	provider, model, stopReason string
	usage                       *usageJSON
}

// read reads the value of member name from dec into f when it is one of
// f's, and skips it otherwise. A value of the wrong type reads as absent.
func (f *usageFields) read(dec *jsontext.Decoder, name string) error {
	var to *string
	switch name {
	case "provider":
		to = &f.provider
	case "model":
		to = &f.model
	case "stopReason":
		to = &f.stopReason
	case "usage":
		v, err := dec.ReadValue()
		if err != nil {
			return err
		}
		f.usage = nil
		if v.Kind() == '{' {
			var j usageJSON
			if json.Unmarshal(v, &j) == nil {
				f.usage = &j
			}
		}
		return nil
	default:
		return dec.SkipValue()
	}
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*to = ""
	if v.Kind() == '"' {
		_ = json.Unmarshal(v, to)
	}
	return nil
}

// readObject reads one JSON object from dec, calling member with each
// member's name, before its value: member must read or skip the value.
func readObject(dec *jsontext.Decoder, member func(name string) error) error {
	if tok, err := dec.ReadToken(); err != nil {
		return err
	} else if tok.Kind() != '{' {
		return fmt.Errorf("expected an object, found %s", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := member(tok.String()); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return err
}
