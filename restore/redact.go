package restore

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// toolCall is one tool call found in an entry: a toolCall (tool_use,
// functionCall) block of an assistant message, or a flat entry of type
// "tool_call" ({"type":"tool_call","name":…,"arguments":{…}}).
type toolCall struct {
	// ptr is the pointer of the call object ("/message/content/3", or ""
	// for a flat entry); argsPtr the pointer of its arguments object.
	ptr, argsPtr string
	id, name     string
	// args holds the string members of the arguments object, decoded.
	args map[string]string
}

// decodeString returns the text of a raw JSON string (invalid UTF-8 and
// lone surrogates become U+FFFD).
func decodeString(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return string(raw)
	}
	if u, err := jsontext.AppendUnquote(nil, raw); err == nil {
		return string(u)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return strings.ToValidUTF8(string(raw[1:len(raw)-1]), "\uFFFD")
}

// toolCalls lists the tool calls of an entry.
func toolCalls(e *bs.Entry) []toolCall {
	str := func(ptr string) string {
		for _, v := range e.Strings {
			if v.Pointer == ptr {
				return decodeString(e.Raw[v.Start:v.End])
			}
		}
		return ""
	}
	collect := func(c *toolCall) {
		c.args = map[string]string{}
		prefix := c.argsPtr + "/"
		for _, v := range e.Strings {
			if rest, ok := strings.CutPrefix(v.Pointer, prefix); ok && !strings.Contains(rest, "/") {
				c.args[rest] = decodeString(e.Raw[v.Start:v.End])
			}
		}
	}
	var out []toolCall
	if e.Type == "tool_call" {
		c := toolCall{ptr: "", argsPtr: "/arguments", name: str("/name")}
		collect(&c)
		return append(out, c)
	}
	for _, b := range e.Blocks {
		switch b.Type {
		case "toolCall", "tool_use", "functionCall":
		default:
			continue
		}
		ptr := "/message/content/" + strconv.Itoa(b.Index)
		c := toolCall{ptr: ptr, argsPtr: ptr + "/arguments", id: str(ptr + "/id"), name: str(ptr + "/name")}
		if b.Type == "tool_use" {
			c.argsPtr = ptr + "/input"
		}
		collect(&c)
		out = append(out, c)
	}
	return out
}

// restoreTargets returns the entry ids a tool call asks to restore: the
// "entry"/"entry_id" argument of a purge_control call with action
// "restore" or of a tool named "restore", or the arguments after
// "purge_control restore" in the command of a shell tool call (exec,
// bash, shell).
func restoreTargets(c toolCall) []string {
	var out []string
	add := func(s string) {
		if s != "" {
			out = append(out, s)
		}
	}
	switch strings.ToLower(c.name) {
	case "purge_control", "purge-control":
		if c.args["action"] == "restore" {
			add(c.args["entry"])
			add(c.args["entry_id"])
		}
	case "restore":
		add(c.args["entry_id"])
		add(c.args["entry"])
	case "exec", "bash", "shell":
		for _, k := range []string{"command", "cmd"} {
			out = append(out, commandTargets(c.args[k])...)
		}
	}
	return out
}

// restoreTarget returns the first of restoreTargets, or "".
func restoreTarget(c toolCall) string {
	if t := restoreTargets(c); len(t) > 0 {
		return t[0]
	}
	return ""
}

// callRestores reports whether the call asks to restore entry id.
func callRestores(c toolCall, id string) bool {
	for _, t := range restoreTargets(c) {
		if t == id {
			return true
		}
	}
	return false
}

const sep = "\x00"

// shellWords splits a shell command into words, with sep standing for
// command separators (; & | ( ) ` and newlines). Quotes are removed;
// nothing is expanded.
func shellWords(cmd string) []string {
	var out []string
	var cur strings.Builder
	in := false
	flush := func() {
		if in {
			out = append(out, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch c {
		case ' ', '\t', '\r':
			flush()
		case ';', '&', '|', '(', ')', '`', '\n':
			flush()
			out = append(out, sep)
		case '\'':
			in = true
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				cur.WriteString(cmd[i+1:])
				i = len(cmd)
			} else {
				cur.WriteString(cmd[i+1 : i+1+j])
				i += j + 1
			}
		case '"':
			in = true
			for i++; i < len(cmd) && cmd[i] != '"'; i++ {
				if cmd[i] == '\\' && i+1 < len(cmd) {
					i++
				}
				cur.WriteByte(cmd[i])
			}
		case '\\':
			in = true
			if i+1 < len(cmd) {
				i++
				cur.WriteByte(cmd[i])
			}
		default:
			in = true
			cur.WriteByte(c)
		}
	}
	flush()
	return out
}

// isPurgeControl reports whether a shell word runs the purge_control
// program (any directory, with or without a script extension).
func isPurgeControl(word string) bool {
	base := filepath.Base(word)
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		switch base[i:] {
		case ".py", ".sh", ".js", ".mjs", ".cjs", ".ts":
			base = base[:i]
		}
	}
	return base == "purge_control" || base == "purge-control"
}

// commandTargets returns the words that may name the entry in every
// "purge_control … restore …" command of a shell command line: the
// non-flag words after "restore" and the values of --entry/--entry-id.
func commandTargets(cmd string) []string {
	if !strings.Contains(cmd, "restore") {
		return nil
	}
	w := shellWords(cmd)
	var out []string
	for i := 0; i < len(w); i++ {
		if !isPurgeControl(w[i]) {
			continue
		}
		j := i + 1
		for j < len(w) && w[j] != sep && w[j] != "restore" {
			j++
		}
		if j >= len(w) || w[j] != "restore" {
			continue
		}
		for k := j + 1; k < len(w) && w[k] != sep; k++ {
			word := w[k]
			switch {
			case word == "--entry" || word == "--entry-id" || word == "--entry_id":
				if k+1 < len(w) && w[k+1] != sep {
					out = append(out, w[k+1])
					k++
				}
			case strings.HasPrefix(word, "--entry="), strings.HasPrefix(word, "--entry-id="), strings.HasPrefix(word, "--entry_id="):
				out = append(out, word[strings.IndexByte(word, '=')+1:])
			case strings.HasPrefix(word, "-"):
			default:
				out = append(out, word)
			}
		}
		i = j
	}
	return out
}

// StubText is what a redacted restore call and its result say instead of
// their content: "purge_control restore <entry>".
func StubText(entryID string) string { return "purge_control restore " + entryID }

func argsStub(entryID string) []byte {
	return []byte(`{"redacted":` + string(jsonedit.EncodeName(StubText(entryID))) + `}`)
}

func resultStub(entryID string) []byte {
	return jsonedit.EncodeName("[redacted: " + StubText(entryID) + "]")
}

// redact finds the call that asked to restore entryID (by tool call id
// when given, else the latest not yet redacted call naming the entry) and
// redacts it and its result. It reports whether a call was redacted.
func (p *planner) redact(entryID, toolCallID string) bool {
	var (
		call *lineEdit
		c    toolCall
	)
	for i := len(p.snap.lines) - 1; i >= 0 && call == nil; i-- {
		e := p.snap.lines[i]
		if e.Role != "assistant" && e.Type != "tool_call" {
			continue
		}
		le := p.line(e)
		calls := toolCalls(le.entry())
		for k := len(calls) - 1; k >= 0; k-- {
			cc := calls[k]
			if toolCallID != "" {
				if cc.id != toolCallID {
					continue
				}
			} else if !callRestores(cc, entryID) {
				continue
			}
			key := strconv.Itoa(e.Line) + cc.ptr
			if p.claimed[key] {
				continue
			}
			if _, _, _, ok := jsonedit.Member(le.cur, cc.ptr, "_redacted"); ok {
				if toolCallID != "" {
					return false // already redacted
				}
				continue
			}
			p.claimed[key] = true
			call, c = le, cc
			break
		}
	}
	if call == nil {
		return false
	}
	if bs.IDEntry.Check(call.id) != nil {
		p.warn("restore call of entry %s is in an entry without a usable id (line %d); not redacted", entryID, call.line)
		return false
	}
	orig, ok := call.value(c.argsPtr)
	if !ok {
		return false
	}
	stub := argsStub(entryID)
	if err := p.recs.redaction(call.id, c.argsPtr, orig, stub, p.now); err != nil {
		p.warn("entry %s: cannot record the redaction: %v", call.id, err)
		return false
	}
	if err := p.recs.journal(call.id, call.cur, c.ptr, "_redacted", "redact", p.now); err != nil {
		p.warn("entry %s: cannot record the redaction: %v", call.id, err)
		return false
	}
	call.replace(c.argsPtr, stub)
	if err := call.set(c.ptr, "_redacted", []byte("true")); err != nil {
		p.warn("entry %s: mark redacted: %v", call.id, err)
	}
	if c.id != "" {
		p.redactResult(entryID, c.id, call.line)
	}
	return true
}

// redactResult replaces the text of the toolResult answering call id with
// the stub and marks the entry "_redacted": true.
func (p *planner) redactResult(entryID, callID string, after int) {
	for i := len(p.snap.lines) - 1; i >= 0; i-- {
		e := p.snap.lines[i]
		if e.Line <= after {
			return
		}
		if e.Role != "toolResult" {
			continue
		}
		le := p.line(e)
		cur := le.entry()
		if v, ok := le.value("/message/toolCallId"); !ok || decodeString(v) != callID {
			continue
		}
		if bs.IDEntry.Check(le.id) != nil {
			p.warn("result of the restore call %s is in an entry without a usable id (line %d); not redacted", callID, le.line)
			return
		}
		var ptrs []string
		if v, ok := le.value("/message/content"); ok && len(v) > 0 && v[0] == '"' {
			ptrs = append(ptrs, "/message/content")
		} else {
			for _, b := range cur.Blocks {
				if b.Type == "text" {
					ptrs = append(ptrs, "/message/content/"+strconv.Itoa(b.Index)+"/text")
				}
			}
		}
		stub := resultStub(entryID)
		for _, ptr := range ptrs {
			orig, ok := le.value(ptr)
			if !ok || string(orig) == string(stub) {
				continue
			}
			if err := p.recs.redaction(le.id, ptr, orig, stub, p.now); err != nil {
				p.warn("entry %s: cannot record the redaction: %v", le.id, err)
				return
			}
			le.replace(ptr, stub)
		}
		if err := p.recs.journal(le.id, le.cur, "", "_redacted", "redact", p.now); err != nil {
			p.warn("entry %s: cannot record the redaction: %v", le.id, err)
			return
		}
		if err := le.set("", "_redacted", []byte("true")); err != nil {
			p.warn("entry %s: mark redacted: %v", le.id, err)
		}
		return
	}
}
