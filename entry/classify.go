package entry

import (
	"strconv"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// realTypes are the entry types of the real (pi / OpenClaw) format. Any other
// entry that carries no "message" object is read in the flat format of the
// seeds and of the first BrainSurgeon.
var realTypes = map[string]bool{
	"message": true, "custom_message": true, "custom": true, "compaction": true,
	"branch_summary": true, "model_change": true, "thinking_level_change": true,
	"label": true, "session_info": true, "leaf": true, "session": true,
}

// Classify returns every value of the entry that extraction may move out,
// with the trigger type it belongs to, in document order. The entry must
// come from Parse (its Strings and Blocks are used). Placeholders are not
// filtered here: deciding what to extract is the policy's job.
//
// In the real format: thinking blocks (the text and its signature) are
// "thinking"; toolResult content text, string leaves of toolResult
// "details" and bashExecution output are "tool_result"; string leaves of a
// toolCall's "arguments" are "tool_call"; whole image blocks are "image";
// the text of assistant, user and custom (system) messages and of
// custom_message entries are "assistant", "user" and "system". Compaction
// summaries, ids, roles, toolCallId, toolName, usage and envelope members are
// never candidates.
//
// In the flat format ({"__id":…,"type":"tool_result","output":…}) the
// trigger type is detected from customType, then type, then role, then the
// presence of a "thinking" member, and every string leaf that is not a
// structural member is a candidate.
func Classify(e *bs.Entry) []bs.Candidate {
	if e == nil || e.Kind != bs.KindEntry {
		return nil
	}
	if e.Type == "message" || e.Type == "custom_message" {
		return classifyReal(e)
	}
	if realTypes[e.Type] || hasMessageObject(e) {
		return nil
	}
	return classifyFlat(e)
}

func hasMessageObject(e *bs.Entry) bool {
	for _, v := range e.Strings {
		if strings.HasPrefix(v.Pointer, "/message/") {
			return true
		}
	}
	return false
}

// BlockAt returns the content block of e whose span holds the value v,
// and false when v lies in no block (the content is a string, or v is
// outside the content). It is the one way to find a value's block: a
// block's Index is its place in the content array, which is not its
// place in e.Blocks when the array holds elements that are not objects.
func BlockAt(e *bs.Entry, v bs.Value) (bs.Block, bool) {
	for _, b := range e.Blocks {
		if v.Start >= b.Start && v.End <= b.End {
			return b, true
		}
	}
	return bs.Block{}, false
}

// ContentMember splits the JSON Pointer of a value below the content at
// prefix: "/message/content" for a message, "/content" for a
// custom_message entry or a flat entry. whole is true for the content
// itself (a plain string). Otherwise member is the rest of the pointer
// after the block's index ("text", "arguments/command", …), "" for an
// element of the array itself; whether that index names a block of the
// content array is for the caller to check against the entry's Blocks
// (content may be an object). ok is false for pointers outside the
// content.
func ContentMember(pointer, prefix string) (member string, whole, ok bool) {
	if !strings.HasPrefix(pointer, prefix) {
		return "", false, false
	}
	tail := pointer[len(prefix):]
	if tail == "" {
		return "", true, true // content is a plain string
	}
	if tail[0] != '/' {
		return "", false, false
	}
	tail = tail[1:]
	i := strings.IndexByte(tail, '/')
	if i < 0 {
		return "", false, true // a string element of the array itself
	}
	return tail[i+1:], false, true
}

// roleTriggers is the trigger type of a message's text by its role.
var roleTriggers = map[string]bs.TriggerType{
	"assistant": bs.TriggerAssistant, "user": bs.TriggerUser,
	"toolResult": bs.TriggerToolResult, "tool": bs.TriggerToolResult,
	"custom": bs.TriggerSystem, "hookMessage": bs.TriggerSystem, "system": bs.TriggerSystem,
}

func classifyReal(e *bs.Entry) []bs.Candidate {
	var out []bs.Candidate
	contentPrefix, role := "/message/content", e.Role
	if e.Type == "custom_message" {
		contentPrefix, role = "/content", "custom"
	}
	textTrigger := roleTriggers[role]

	// Image blocks go whole.
	for _, b := range e.Blocks {
		if b.Type == "image" {
			out = append(out, bs.Candidate{
				Value:   bs.Value{Pointer: contentPrefix + "/" + strconv.Itoa(b.Index), Start: b.Start, End: b.End},
				Trigger: bs.TriggerImage, Block: true,
			})
		}
	}
	for _, v := range e.Strings {
		rest, whole, ok := ContentMember(v.Pointer, contentPrefix)
		if ok {
			if whole || rest == "" {
				if textTrigger != "" {
					out = append(out, bs.Candidate{Value: v, Trigger: textTrigger})
				}
				continue
			}
			b, inBlock := BlockAt(e, v)
			if !inBlock {
				continue
			}
			switch b.Type {
			case "image":
				// Covered by the whole block.
			case "thinking":
				if rest == "thinking" || rest == "thinkingSignature" {
					out = append(out, bs.Candidate{Value: v, Trigger: bs.TriggerThinking})
				}
			case "toolCall", "tool_use", "functionCall":
				if strings.HasPrefix(rest, "arguments/") || strings.HasPrefix(rest, "input/") {
					out = append(out, bs.Candidate{Value: v, Trigger: bs.TriggerToolCall})
				}
			case "text":
				if rest == "text" && textTrigger != "" {
					out = append(out, bs.Candidate{Value: v, Trigger: textTrigger})
				}
			}
			continue
		}
		if e.Type == "message" {
			switch {
			case role == "toolResult" && strings.HasPrefix(v.Pointer, "/message/details/"):
				out = append(out, bs.Candidate{Value: v, Trigger: bs.TriggerToolResult})
			case role == "bashExecution" && v.Pointer == "/message/output":
				out = append(out, bs.Candidate{Value: v, Trigger: bs.TriggerToolResult})
			}
		}
	}
	sortCandidates(out)
	return out
}

func sortCandidates(c []bs.Candidate) {
	// Insertion sort: lists are short and nearly sorted (images first).
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].Start < c[j-1].Start; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}

// FlatTrigger detects the trigger type of a flat entry from its customType,
// then its type, then its role, then a "thinking" member. It returns "" when
// none applies.
func FlatTrigger(e *bs.Entry) bs.TriggerType {
	for _, s := range []string{e.CustomType, e.Type, e.Role} {
		if t := triggerName(s); t != "" {
			return t
		}
	}
	for _, v := range e.Strings {
		if v.Pointer == "/thinking" || strings.HasSuffix(v.Pointer, "/thinking") {
			return bs.TriggerThinking
		}
	}
	return ""
}

func triggerName(s string) bs.TriggerType {
	switch s {
	case "thinking":
		return bs.TriggerThinking
	case "tool_result", "toolResult", "tool":
		return bs.TriggerToolResult
	case "tool_call", "toolCall", "tool_use":
		return bs.TriggerToolCall
	case "image":
		return bs.TriggerImage
	case "assistant":
		return bs.TriggerAssistant
	case "user":
		return bs.TriggerUser
	case "system", "custom":
		return bs.TriggerSystem
	}
	return ""
}

func classifyFlat(e *bs.Entry) []bs.Candidate {
	t := FlatTrigger(e)
	if t == "" {
		return nil
	}
	var out []bs.Candidate
	for _, v := range e.Strings {
		top := v.Pointer[1:]
		if i := strings.IndexByte(top, '/'); i >= 0 {
			top = top[:i]
		}
		if bs.IsStructuralKey(top) {
			continue
		}
		out = append(out, bs.Candidate{Value: v, Trigger: t})
	}
	return out
}
