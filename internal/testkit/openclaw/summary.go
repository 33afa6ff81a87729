package openclaw

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// openAIRequest is the part of a chat-completions request the model reads.
type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

var (
	conversationRE = regexp.MustCompile(`(?s)<conversation>\n?(.*?)\n?</conversation>`)
	pathRE         = regexp.MustCompile(`(?:/[A-Za-z0-9._-]+){2,}`)
)

// SummaryOf returns the deterministic markdown summary the model answers to a summary request whose newest user
// message is prompt: the sections Goal, Progress, Key Decisions, Next Steps and Critical Context, with facts
// copied from the conversation in the prompt (between <conversation> tags, else the whole prompt): the first
// user lines, the number of tool results, and file paths. It is at most a quarter of the conversation's length
// (and never empty), so that a summarizer's garbage check, which refuses a summary longer than its input,
// accepts it.
func SummaryOf(prompt string) string {
	conv := prompt
	if m := conversationRE.FindStringSubmatch(prompt); m != nil {
		conv = m[1]
	}
	var users []string
	tools := 0
	for _, l := range strings.Split(conv, "\n") {
		switch {
		case strings.HasPrefix(l, "[User]: "):
			if len(users) < 3 {
				users = append(users, clipRunes(strings.TrimPrefix(l, "[User]: "), 80))
			}
		case strings.HasPrefix(l, "[Tool result]"):
			tools++
		}
	}
	var paths []string
	seen := map[string]bool{}
	for _, p := range pathRE.FindAllString(conv, -1) {
		if !seen[p] && len(paths) < 3 {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	var b strings.Builder
	b.WriteString("## Goal\n")
	if len(users) == 0 {
		b.WriteString("- Continue the work of the conversation.\n")
	}
	for _, u := range users {
		fmt.Fprintf(&b, "- %s\n", u)
	}
	fmt.Fprintf(&b, "\n## Progress\n### Done\n- [x] %d tool results read\n", tools)
	b.WriteString("\n## Key Decisions\n- **Mock summary**: written by the test model\n")
	b.WriteString("\n## Next Steps\n1. Continue with the next request\n")
	b.WriteString("\n## Critical Context\n")
	if len(paths) == 0 {
		b.WriteString("- (none)\n")
	}
	for _, p := range paths {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	s := strings.TrimSpace(b.String())
	if limit := max(len(conv)/4, 16); len(s) > limit {
		s = clipRunes(s, limit)
	}
	return s
}

// clipRunes returns s cut to at most n bytes at a rune boundary.
func clipRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// summary serves POST /v1/chat/completions.
func (m *Model) summary(w http.ResponseWriter, body []byte) {
	m.mu.Lock()
	m.n++
	n := m.n
	idx := len(m.sums)
	m.sums = append(m.sums, ModelRequest{At: time.Now(), Body: body, Tokens: MeasuredTokens(body)})
	fail := m.fail > 0 || m.sfail > 0
	if m.fail > 0 {
		m.fail--
	} else if m.sfail > 0 {
		m.sfail--
	}
	status := http.StatusOK
	if fail {
		status = http.StatusInternalServerError
	}
	var req openAIRequest
	if !fail && json.Unmarshal(body, &req) != nil {
		status = http.StatusBadRequest
	}
	var unpaired *Unpaired
	if status == http.StatusOK && m.unpair {
		if unpaired = CheckPairing(body); unpaired != nil {
			status = http.StatusBadRequest
		}
	}
	m.sums[idx].Status = status
	m.sums[idx].Unpaired = unpaired
	m.mu.Unlock()
	if unpaired != nil {
		writeJSON(w, status, unpaired.Body())
		return
	}
	switch status {
	case http.StatusInternalServerError:
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": "summary " + strconv.Itoa(n) + " failed on purpose", "type": "server_error"}})
		return
	case http.StatusBadRequest:
		writeJSON(w, status, map[string]any{"error": map[string]any{"message": "expected a JSON chat-completions request", "type": "invalid_request_error"}})
		return
	}
	prompt := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			prompt = textOf(req.Messages[i].Content)
			break
		}
	}
	text := SummaryOf(prompt)
	tokens := MeasuredTokens(body)
	writeJSON(w, http.StatusOK, map[string]any{
		"id": "chatcmpl-" + strconv.Itoa(n), "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": tokens, "completion_tokens": (len(text) + 3) / 4,
			"total_tokens": tokens + (len(text)+3)/4},
	})
}
