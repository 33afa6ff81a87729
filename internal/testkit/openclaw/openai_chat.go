package openclaw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// streamed reports whether a POST /v1/chat/completions body asks for a streamed answer ("stream": true): the
// chat requests of an agent (pi's "openai-completions" provider), answered like /api/chat; a request that does
// not stream is a summary request ([SummaryOf]).
func streamed(body []byte) bool {
	var req struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &req) == nil && req.Stream
}

// writeOpenAIChat writes the answer to a streamed OpenAI chat-completions request as server-sent events: one
// chunk with the text (or the call of tool with args, with the id "call_<n>"), one with the finish reason, one
// with the usage (prompt_tokens is tokens), then "data: [DONE]".
func writeOpenAIChat(w http.ResponseWriter, body []byte, n, tokens int, tool string, args json.RawMessage, text string) {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req)
	id := "chatcmpl-" + strconv.Itoa(n)
	created := time.Now().Unix()
	chunk := func(choices []any, usage any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		return c
	}
	delta := map[string]any{"role": "assistant", "content": text}
	finish := "stop"
	if tool != "" {
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		delta = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0,
			"id": "call_" + strconv.Itoa(n), "type": "function",
			"function": map[string]any{"name": tool, "arguments": string(args)}}}}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, c := range []map[string]any{
		chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil),
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil),
		chunk([]any{}, map[string]any{"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}),
	} {
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}
