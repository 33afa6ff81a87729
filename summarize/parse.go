package summarize

import (
	"strconv"
	"strings"
)

// role is what a transcript line contributes to a conversation.
type role uint8

const (
	roleOther         role = iota // not a message (settings, labels, custom state, malformed)
	roleUser                      // a user message
	roleAssistant                 // an assistant message
	roleToolResult                // a tool result
	roleBash                      // a user-run shell command (pi's bashExecution)
	roleCustom                    // a custom_message (reaches the model as a user message)
	roleBranchSummary             // a branch_summary entry
	roleCompaction                // a compaction entry (a previous summary)
)

// toolCall is one toolCall block of an assistant message.
type toolCall struct {
	id, name string
	// args is the raw "arguments" value: normally an object, sometimes a
	// string holding one (partial JSON).
	args []byte
}

// view is the read-only view of one transcript line that summaries need.
// Strings are decoded; raw values (tool-call arguments) point into the
// line.
type view struct {
	role role
	id   string
	// text holds the text blocks (or the string content) of a message, a
	// custom message or a tool result; thinking the thinking blocks.
	text     []string
	thinking []string
	calls    []toolCall
	images   int

	// Tool results.
	callID, toolName string
	isError          bool
	exitCode         int
	hasExit          bool

	// bashExecution messages.
	command, output string
	excluded        bool

	// Assistant messages.
	stopReason, errorMessage string

	// compaction and branch_summary entries.
	summary                  string
	readFiles, modifiedFiles []string
}

// joined returns the text blocks joined by sep.
func (v *view) joined(sep string) string {
	switch len(v.text) {
	case 0:
		return ""
	case 1:
		return v.text[0]
	}
	return strings.Join(v.text, sep)
}

// parseLine builds the view of one raw line. It returns false for a line
// that is not a JSON object; lines of other entry types yield roleOther.
func parseLine(raw []byte) (view, bool) {
	var (
		v                          view
		typ, flatRole              string
		msg, content, details, out []byte
		thinking, errMsg           string
		id, dunder                 string
	)
	ok := members(raw, func(name string, val []byte) bool {
		switch name {
		case "type":
			typ = unquote(val)
		case "id":
			id = unquote(val)
		case "__id":
			dunder = unquote(val)
		case "message":
			msg = val
		case "summary":
			v.summary = unquote(val)
		case "details":
			details = val
		case "content":
			content = val
		case "role":
			flatRole = unquote(val)
		case "output":
			out = val
		case "thinking":
			thinking = unquote(val)
		case "errorMessage":
			errMsg = unquote(val)
		}
		return true
	})
	if !ok {
		return v, false
	}
	v.id = id
	if dunder != "" {
		v.id = dunder
	}
	switch {
	case kindOf(msg) == '{':
		parseMessage(&v, msg)
	case typ == "compaction":
		v.role = roleCompaction
		v.readFiles, v.modifiedFiles = fileDetails(details)
	case typ == "branch_summary":
		v.role = roleBranchSummary
		v.readFiles, v.modifiedFiles = fileDetails(details)
	case typ == "custom_message":
		v.role = roleCustom
		v.text, v.images = contentText(content)
	default:
		parseFlat(&v, typ, flatRole, content, out, thinking, errMsg)
	}
	return v, true
}

// parseFlat reads the flat entry shape
// ({"__id":…,"type":"tool_result","output":…}).
func parseFlat(v *view, typ, flatRole string, content, out []byte, thinking, errMsg string) {
	r := typ
	if flatRole != "" {
		r = flatRole
	}
	switch r {
	case "user":
		v.role = roleUser
		v.text, v.images = contentText(content)
	case "assistant":
		v.role = roleAssistant
		v.text, v.images = contentText(content)
		v.errorMessage = errMsg
	case "thinking":
		if thinking != "" {
			v.role = roleAssistant
			v.thinking = []string{thinking}
		}
	case "tool_result", "toolResult", "tool":
		v.role = roleToolResult
		if s, ok := str(out); ok {
			v.text = []string{s}
		} else {
			v.text, v.images = contentText(content)
		}
	}
}

// parseMessage fills v from a "message" object.
func parseMessage(v *view, msg []byte) {
	var content, details []byte
	var r string
	members(msg, func(name string, val []byte) bool {
		switch name {
		case "role":
			r = unquote(val)
		case "content":
			content = val
		case "toolCallId":
			v.callID = unquote(val)
		case "toolName":
			v.toolName = unquote(val)
		case "isError":
			v.isError = boolean(val)
		case "details":
			details = val
		case "command":
			v.command = unquote(val)
		case "output":
			v.output = unquote(val)
		case "exitCode":
			if f, ok := number(val); ok {
				v.exitCode, v.hasExit = int(f), true
			}
		case "excludeFromContext":
			v.excluded = boolean(val)
		case "stopReason":
			v.stopReason = unquote(val)
		case "errorMessage":
			v.errorMessage = unquote(val)
		}
		return true
	})
	switch r {
	case "user":
		v.role = roleUser
		v.text, v.images = contentText(content)
	case "assistant":
		v.role = roleAssistant
		parseAssistantContent(v, content)
	case "toolResult":
		v.role = roleToolResult
		v.text, v.images = contentText(content)
		if !v.hasExit {
			members(details, func(name string, val []byte) bool {
				if name == "exitCode" {
					if f, ok := number(val); ok {
						v.exitCode, v.hasExit = int(f), true
					}
					return false
				}
				return true
			})
		}
	case "bashExecution":
		v.role = roleBash
	case "custom", "hookMessage":
		v.role = roleCustom
		v.text, v.images = contentText(content)
	case "branchSummary", "compactionSummary":
		v.role = roleBranchSummary
	}
}

// contentText returns the text of a content value: a plain string, or
// the text blocks of a block array, and the number of image blocks.
func contentText(content []byte) (texts []string, images int) {
	switch kindOf(content) {
	case '"':
		if s := unquote(content); s != "" {
			texts = []string{s}
		}
	case '[':
		elements(content, func(b []byte) bool {
			var typ, text string
			members(b, func(name string, val []byte) bool {
				switch name {
				case "type":
					typ = unquote(val)
				case "text":
					text = unquote(val)
				}
				return true
			})
			switch typ {
			case "text":
				if text != "" {
					texts = append(texts, text)
				}
			case "image":
				images++
			}
			return true
		})
	}
	return texts, images
}

// parseAssistantContent reads the text, thinking and toolCall blocks of an
// assistant message.
func parseAssistantContent(v *view, content []byte) {
	if kindOf(content) == '"' {
		if s := unquote(content); s != "" {
			v.text = append(v.text, s)
		}
		return
	}
	elements(content, func(b []byte) bool {
		var typ, text, thinking string
		var c toolCall
		members(b, func(name string, val []byte) bool {
			switch name {
			case "type":
				typ = unquote(val)
			case "text":
				text = unquote(val)
			case "thinking":
				thinking = unquote(val)
			case "id":
				c.id = unquote(val)
			case "name":
				c.name = unquote(val)
			case "arguments", "input":
				c.args = val
			}
			return true
		})
		switch typ {
		case "text":
			if text != "" {
				v.text = append(v.text, text)
			}
		case "thinking":
			if thinking != "" {
				v.thinking = append(v.thinking, thinking)
			}
		case "toolCall", "tool_use", "toolUse":
			if kindOf(c.args) == '"' {
				// Some providers leave the arguments as a JSON string.
				if s := unquote(c.args); kindOf([]byte(s)) == '{' {
					c.args = []byte(s)
				}
			}
			v.calls = append(v.calls, c)
		case "image":
			v.images++
		}
		return true
	})
}

// fileDetails reads details.readFiles and details.modifiedFiles of a
// compaction or branch summary.
func fileDetails(details []byte) (read, modified []string) {
	members(details, func(name string, val []byte) bool {
		switch name {
		case "readFiles":
			read = stringList(val)
		case "modifiedFiles":
			modified = stringList(val)
		}
		return true
	})
	return read, modified
}

// argString returns the string argument of a tool call under the first
// of names that is present.
func argString(args []byte, names ...string) string {
	var found string
	best := len(names)
	members(args, func(name string, val []byte) bool {
		for i, n := range names {
			if name == n && i < best {
				if s, ok := str(val); ok && s != "" {
					found, best = s, i
				}
			}
		}
		return best != 0
	})
	return found
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }
