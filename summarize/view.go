package summarize

import (
	"strconv"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
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

// view is the read-only view of one transcript line that summaries need,
// built from the line's parse by package entry (see readLine). Strings are
// decoded; raw values (tool-call arguments) point into the line.
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

// readLine builds the view of one raw line from the module's line parser
// (package entry): the envelope, the content blocks and every string with
// its JSON Pointer. It returns false for a line that does not start with a
// JSON object; a line holding a second value after its first object (a
// missing newline) is read up to the end of the first. Lines of other entry
// types yield roleOther.
func readLine(raw []byte) (view, bool) {
	e := entry.Parse(raw, 0, 0)
	switch e.Kind {
	case bs.KindEntry, bs.KindHeader:
	case bs.KindMalformed:
		n := firstObject(raw)
		if n < 0 {
			return view{}, false
		}
		if e = entry.Parse(raw[:n], 0, 0); e.Kind != bs.KindEntry && e.Kind != bs.KindHeader {
			return view{}, false
		}
	default:
		return view{}, false
	}
	return viewOf(e), true
}

// Pointers of the members a view reads.
const (
	messageContent = "/message/content"
	flatContent    = "/content"
)

// lineStrings holds the index in Entry.Strings of the last string of each
// member a view reads, or -1.
type lineStrings struct {
	// Top-level members.
	id, dunderID, summary, role, output, thinking, errorMessage int
	// Members of the "message" object.
	msgRole, callID, toolName, command, msgOutput, stopReason, msgError int
	// message is true when the line has a "message" object (one that
	// holds strings: an empty one has nothing to read).
	message bool
}

// viewOf builds the view of a parsed line. Where a transcript line keeps
// what a view needs is entry's knowledge (type, id, role, content blocks);
// viewOf names the members of a message that summaries read.
func viewOf(e *bs.Entry) view {
	var v view
	ls := lineStrings{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, false}
	for i, s := range e.Strings {
		p := s.Pointer
		if strings.HasPrefix(p, "/message/") {
			ls.message = true
			switch p[len("/message/"):] {
			case "role":
				ls.msgRole = i
			case "toolCallId":
				ls.callID = i
			case "toolName":
				ls.toolName = i
			case "command":
				ls.command = i
			case "output":
				ls.msgOutput = i
			case "stopReason":
				ls.stopReason = i
			case "errorMessage":
				ls.msgError = i
			}
			continue
		}
		switch p {
		case "/id":
			ls.id = i
		case "/__id":
			ls.dunderID = i
		case "/summary":
			ls.summary = i
		case "/role":
			ls.role = i
		case "/output":
			ls.output = i
		case "/thinking":
			ls.thinking = i
		case "/errorMessage":
			ls.errorMessage = i
		}
	}
	// "__id" names the entry in the flat format, "id" in the real one
	// (entry's ID); an empty "__id" leaves the name to "id". entry's ID
	// shares memory with the envelopes of neighbouring lines, and summaries
	// keep ids: it is copied.
	v.id = strings.Clone(e.ID)
	if v.id == "" {
		if v.id = stringAt(e, ls.dunderID); v.id == "" {
			v.id = stringAt(e, ls.id)
		}
	}
	v.summary = stringAt(e, ls.summary)
	switch {
	case ls.message:
		role := ""
		if ls.msgRole >= 0 {
			role = e.Role
		}
		readMessage(&v, e, role, &ls)
	case e.Type == "compaction":
		v.role = roleCompaction
		v.readFiles, v.modifiedFiles = fileDetails(e)
	case e.Type == "branch_summary":
		v.role = roleBranchSummary
		v.readFiles, v.modifiedFiles = fileDetails(e)
	case e.Type == "custom_message":
		v.role = roleCustom
		contentOf(&v, e, flatContent, false)
	default:
		readFlat(&v, e, &ls)
	}
	return v
}

// readMessage fills v from the members of a "message" object.
func readMessage(v *view, e *bs.Entry, role string, ls *lineStrings) {
	str := func(i int) string { return stringAt(e, i) }
	switch role {
	case "user":
		v.role = roleUser
		contentOf(v, e, messageContent, false)
	case "assistant":
		v.role = roleAssistant
		contentOf(v, e, messageContent, true)
		v.stopReason = str(ls.stopReason)
		v.errorMessage = str(ls.msgError)
	case "toolResult":
		v.role = roleToolResult
		contentOf(v, e, messageContent, false)
		v.callID = str(ls.callID)
		v.toolName = str(ls.toolName)
		sc := messageScalars(e.Raw)
		v.isError, v.exitCode, v.hasExit = sc.isError, sc.exitCode, sc.hasExit
	case "bashExecution":
		v.role = roleBash
		v.command = str(ls.command)
		v.output = str(ls.msgOutput)
		sc := messageScalars(e.Raw)
		v.excluded, v.exitCode, v.hasExit = sc.excluded, sc.exitCode, sc.hasExit
	case "custom", "hookMessage":
		v.role = roleCustom
		contentOf(v, e, messageContent, false)
	case "branchSummary", "compactionSummary":
		v.role = roleBranchSummary
	}
}

// readFlat reads the flat entry shape
// ({"__id":…,"type":"tool_result","output":…}): the role is "role", or
// else "type".
func readFlat(v *view, e *bs.Entry, ls *lineStrings) {
	str := func(i int) string { return stringAt(e, i) }
	r := str(ls.role)
	if r == "" {
		r = e.Type
	}
	switch r {
	case "user":
		v.role = roleUser
		contentOf(v, e, flatContent, false)
	case "assistant":
		v.role = roleAssistant
		contentOf(v, e, flatContent, false)
		v.errorMessage = str(ls.errorMessage)
	case "thinking":
		if t := str(ls.thinking); t != "" {
			v.role = roleAssistant
			v.thinking = []string{t}
		}
	case "tool_result", "toolResult", "tool":
		v.role = roleToolResult
		if ls.output >= 0 {
			v.text = []string{str(ls.output)}
		} else {
			contentOf(v, e, flatContent, false)
		}
	}
}

// contentOf reads the content under prefix: a plain string, or the blocks
// of a block array (entry's Blocks). Text blocks add to v.text and image
// blocks to v.images; in an assistant message thinking blocks add to
// v.thinking and tool-call blocks to v.calls.
func contentOf(v *view, e *bs.Entry, prefix string, assistant bool) {
	var (
		bi  = 0  // the block holding the current string, in e.Blocks
		cur = -1 // the block being read, or -1
		acc blockStrings
	)
	flush := func() {
		if cur >= 0 {
			addBlock(v, e, e.Blocks[cur], &acc, assistant)
		}
	}
	for i, s := range e.Strings {
		member, whole, ok := entry.ContentMember(s.Pointer, prefix)
		switch {
		case !ok || member == "" && !whole:
			continue
		case whole:
			// A plain string content.
			if t := unquote(e.Raw[s.Start:s.End]); t != "" {
				v.text = append(v.text, t)
			}
			continue
		}
		for bi < len(e.Blocks) && e.Blocks[bi].End <= s.Start {
			bi++
		}
		if bi == len(e.Blocks) || e.Blocks[bi].Start > s.Start {
			continue // not in a block: the content is an object
		}
		if bi != cur {
			flush()
			cur, acc = bi, blockStrings{-1, -1, -1, -1}
		}
		switch member {
		case "text":
			acc.text = i
		case "thinking":
			acc.thinking = i
		case "id":
			acc.id = i
		case "name":
			acc.name = i
		}
	}
	flush()
}

// stringAt returns the text of e.Strings[i], or "" when i is -1.
func stringAt(e *bs.Entry, i int) string {
	if i < 0 {
		return ""
	}
	s := e.Strings[i]
	return unquote(e.Raw[s.Start:s.End])
}

// blockStrings holds the index in Entry.Strings of the last string of each
// member of a content block that a view reads, or -1.
type blockStrings struct{ text, thinking, id, name int }

// addBlock adds one content block to v.
func addBlock(v *view, e *bs.Entry, b bs.Block, acc *blockStrings, assistant bool) {
	str := func(i int) string { return stringAt(e, i) }
	switch b.Type {
	case "text":
		if t := str(acc.text); t != "" {
			v.text = append(v.text, t)
		}
	case "image":
		v.images++
	case "thinking":
		if !assistant {
			return
		}
		if t := str(acc.thinking); t != "" {
			v.thinking = append(v.thinking, t)
		}
	case "toolCall", "tool_use", "toolUse":
		if !assistant {
			return
		}
		c := toolCall{id: str(acc.id), name: str(acc.name), args: callArgs(e.Raw[b.Start:b.End])}
		if kindOf(c.args) == '"' {
			// Some providers leave the arguments as a JSON string.
			if s := unquote(c.args); kindOf([]byte(s)) == '{' {
				c.args = []byte(s)
			}
		}
		v.calls = append(v.calls, c)
	}
}

// fileDetails reads the strings of details.readFiles and
// details.modifiedFiles of a compaction or branch summary.
func fileDetails(e *bs.Entry) (read, modified []string) {
	for _, s := range e.Strings {
		p, ok := strings.CutPrefix(s.Pointer, "/details/")
		if !ok {
			continue
		}
		var list *[]string
		if p, ok = strings.CutPrefix(p, "readFiles/"); ok {
			list = &read
		} else if p, ok = strings.CutPrefix(p, "modifiedFiles/"); ok {
			list = &modified
		} else {
			continue
		}
		if p == "" || strings.Trim(p, "0123456789") != "" {
			continue // not an element of an array
		}
		if t := unquote(e.Raw[s.Start:s.End]); t != "" {
			*list = append(*list, t)
		}
	}
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
