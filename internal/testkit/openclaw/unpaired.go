package openclaw

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// The error texts OpenAI-compatible providers answer (HTTP 400, type invalid_request_error) to a chat request
// with unpaired tool blocks.
const (
	// OrphanToolError is the text for a tool message that answers no tool call of the assistant message before
	// its run.
	OrphanToolError = "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'."
	// missingToolErrorPrefix starts the text for an assistant message whose tool calls are not all answered; the
	// unanswered ids follow, separated by ", ".
	missingToolErrorPrefix = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
)

// MissingToolError is the text for an assistant message whose tool calls ids are not all answered by the tool
// messages right after it.
func MissingToolError(ids []string) string {
	return missingToolErrorPrefix + strings.Join(ids, ", ")
}

// Unpaired is the finding of [CheckPairing]: which message breaks the pairing of tool calls and tool results,
// and the error a provider answers for it.
type Unpaired struct {
	// Index is the index in "messages" of the offending message: the tool message that answers nothing, or the
	// assistant message whose calls are not all answered.
	Index int
	// Message is the provider's error text ([OrphanToolError] or [MissingToolError]).
	Message string
}

// Param returns the request parameter the provider's error names, e.g. "messages.[3].role".
func (u *Unpaired) Param() string { return "messages.[" + strconv.Itoa(u.Index) + "].role" }

// Body returns the error body an OpenAI-compatible provider answers with.
func (u *Unpaired) Body() map[string]any {
	return map[string]any{"error": map[string]any{"message": u.Message, "type": "invalid_request_error",
		"param": u.Param(), "code": nil}}
}

// String returns the param and the message.
func (u *Unpaired) String() string { return u.Param() + ": " + u.Message }

// pairingMessage is the part of a chat message (Ollama's or OpenAI's format) the pairing check reads.
type pairingMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// CheckPairing reports the first unpaired tool block of a chat request body (Ollama's /api/chat or OpenAI's
// /v1/chat/completions), or nil when every block is paired. The rules are the ones OpenAI-compatible providers
// enforce:
//   - an assistant message with tool_calls must be followed, before the next message that is not a tool
//     message, by a tool message for each of its calls;
//   - a tool message must answer a call of the assistant message right before its run of tool messages.
//
// A tool message with a tool_call_id answers the call with that id. Ollama's format carries no tool_call_id: such
// a tool message answers the first call of the run not answered yet, in call order. An unanswered call without an
// id is named "<function name>#<position>" in the error. A body that is not a JSON object with a "messages" array
// has nothing to check (nil).
func CheckPairing(body []byte) *Unpaired {
	var req struct {
		Messages []pairingMessage `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	msgs := req.Messages
	for i := 0; i < len(msgs); i++ {
		msg := msgs[i]
		if msg.Role == "tool" {
			// a tool message whose run starts after anything but an assistant message with calls
			return &Unpaired{Index: i, Message: OrphanToolError}
		}
		if msg.Role != "assistant" || len(msg.ToolCalls) == 0 {
			continue
		}
		answered := make([]bool, len(msg.ToolCalls))
		j := i + 1
		for ; j < len(msgs) && msgs[j].Role == "tool"; j++ {
			k := -1
			for c, call := range msg.ToolCalls {
				if answered[c] {
					continue
				}
				if id := msgs[j].ToolCallID; id != "" {
					if call.ID == id {
						k = c
						break
					}
					continue
				}
				k = c
				break
			}
			if k < 0 {
				return &Unpaired{Index: j, Message: OrphanToolError}
			}
			answered[k] = true
		}
		var missing []string
		for c, call := range msg.ToolCalls {
			if answered[c] {
				continue
			}
			id := call.ID
			if id == "" {
				id = fmt.Sprintf("%s#%d", call.Function.Name, c)
			}
			missing = append(missing, id)
		}
		if len(missing) > 0 {
			return &Unpaired{Index: i, Message: MissingToolError(missing)}
		}
		i = j - 1
	}
	return nil
}
