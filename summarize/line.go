package summarize

import (
	"bytes"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

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

// firstObject returns the end of the JSON object that starts the line (after
// white space), or -1 when the line does not start with a well-formed one.
func firstObject(raw []byte) int {
	if kindOf(raw) != '{' {
		return -1
	}
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(raw)
	d.dec.Reset(&d.r, decodeOptions...)
	if _, err := d.dec.ReadValue(); err != nil {
		return -1
	}
	return int(d.dec.InputOffset())
}

// Pointers of the members a view reads.
const (
	messageContent = "/message/content"
	flatContent    = "/content"
)

// lineStrings holds the index in Entry.Strings of the last string of each
// member a view reads, or -1.
type lineStrings struct {
	id, dunderID, summary, role, output, thinking, errorMessage int
	// message is true when the line has a "message" object holding strings.
	message                                                             bool
	msgRole, callID, toolName, command, msgOutput, stopReason, msgError int
}

// viewOf builds the view of a parsed line. Where a transcript line keeps
// what a view needs is entry's knowledge (type, id, role, content blocks);
// viewOf names the members of a message that summaries read.
func viewOf(e *bs.Entry) view {
	var v view
	ls := lineStrings{-1, -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, -1, -1, -1}
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
	str := func(i int) string {
		if i < 0 {
			return ""
		}
		s := e.Strings[i]
		return unquote(e.Raw[s.Start:s.End])
	}
	// "__id" names the entry in the flat format, "id" in the real one.
	// entry's ID shares memory with the envelopes of neighbouring lines,
	// and summaries keep ids: it is copied.
	v.id = strings.Clone(e.ID)
	if v.id == "" {
		if v.id = str(ls.dunderID); v.id == "" {
			v.id = str(ls.id)
		}
	}
	v.summary = str(ls.summary)
	switch {
	case ls.message:
		role := ""
		if ls.msgRole >= 0 {
			role = e.Role
		}
		readMessage(&v, e, role, &ls, str)
	case e.Type == "compaction":
		v.role = roleCompaction
		v.readFiles, v.modifiedFiles = entryFileDetails(e)
	case e.Type == "branch_summary":
		v.role = roleBranchSummary
		v.readFiles, v.modifiedFiles = entryFileDetails(e)
	case e.Type == "custom_message":
		v.role = roleCustom
		contentOf(&v, e, flatContent, false)
	default:
		readFlat(&v, e, &ls, str)
	}
	return v
}

// readMessage fills v from the members of a "message" object.
func readMessage(v *view, e *bs.Entry, role string, ls *lineStrings, str func(int) string) {
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
func readFlat(v *view, e *bs.Entry, ls *lineStrings, str func(int) string) {
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
		p := s.Pointer
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		rest := p[len(prefix):]
		if rest == "" {
			// A plain string content.
			if t := unquote(e.Raw[s.Start:s.End]); t != "" {
				v.text = append(v.text, t)
			}
			continue
		}
		// /N/member: a member of the object at index N of the array.
		if rest[0] != '/' {
			continue
		}
		j := 1
		for j < len(rest) && '0' <= rest[j] && rest[j] <= '9' {
			j++
		}
		if j == 1 || j == len(rest) || rest[j] != '/' {
			continue
		}
		member := rest[j+1:]
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

// blockStrings holds the index in Entry.Strings of the last string of each
// member of a content block that a view reads, or -1.
type blockStrings struct{ text, thinking, id, name int }

// addBlock adds one content block to v.
func addBlock(v *view, e *bs.Entry, b bs.Block, acc *blockStrings, assistant bool) {
	str := func(i int) string {
		if i < 0 {
			return ""
		}
		s := e.Strings[i]
		return unquote(e.Raw[s.Start:s.End])
	}
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

// callArgs returns the raw "arguments" (or "input") value of a tool-call
// block. entry lists strings only, and a call's arguments are rendered
// whole, so they are read from the block.
func callArgs(block []byte) []byte {
	var args []byte
	members(block, func(name string, val []byte) bool {
		if name == "arguments" || name == "input" {
			args = val
		}
		return true
	})
	return args
}

// entryFileDetails reads the strings of details.readFiles and
// details.modifiedFiles of a compaction or branch summary.
func entryFileDetails(e *bs.Entry) (read, modified []string) {
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

// scalars are the members of a message that are not strings, which entry
// does not list.
type scalars struct {
	isError, excluded bool
	exitCode          int
	hasExit           bool
}

// messageScalars reads isError, excludeFromContext and exitCode (or else
// details.exitCode) of the line's "message" object, walking the line once.
func messageScalars(raw []byte) scalars {
	var sc scalars
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	d.r = *bytes.NewBuffer(raw)
	dec := d.dec
	dec.Reset(&d.r, decodeOptions...)
	if _, err := dec.ReadToken(); err != nil {
		return sc
	}
	for dec.PeekKind() == '"' {
		n, err := dec.ReadValue()
		if err != nil {
			return sc
		}
		if !nameIs(n, "message") || dec.PeekKind() != '{' {
			if dec.SkipValue() != nil {
				return sc
			}
			continue
		}
		sc = scalars{}
		var details []byte
		if _, err := dec.ReadToken(); err != nil {
			return sc
		}
		for dec.PeekKind() == '"' {
			n, err := dec.ReadValue()
			if err != nil {
				return sc
			}
			var val jsontext.Value
			switch {
			case nameIs(n, "isError"), nameIs(n, "exitCode"), nameIs(n, "excludeFromContext"), nameIs(n, "details"):
				if val, err = dec.ReadValue(); err != nil {
					return sc
				}
			default:
				if dec.SkipValue() != nil {
					return sc
				}
				continue
			}
			switch {
			case nameIs(n, "isError"):
				sc.isError = boolean(val)
			case nameIs(n, "excludeFromContext"):
				sc.excluded = boolean(val)
			case nameIs(n, "exitCode"):
				if f, ok := number(val); ok {
					sc.exitCode, sc.hasExit = int(f), true
				}
			default:
				details = val
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return sc
		}
		if !sc.hasExit {
			members(details, func(name string, val []byte) bool {
				if name == "exitCode" {
					if f, ok := number(val); ok {
						sc.exitCode, sc.hasExit = int(f), true
					}
					return false
				}
				return true
			})
		}
	}
	return sc
}

// nameIs reports whether the raw member name n is name; escaped names are
// unquoted first.
func nameIs(n []byte, name string) bool {
	if bytes.IndexByte(n, '\\') >= 0 {
		return unquote(n) == name
	}
	return len(n) == len(name)+2 && string(n[1:len(n)-1]) == name
}
