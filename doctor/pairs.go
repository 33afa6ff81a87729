package doctor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// toolCall is one tool-call block of an assistant message.
type toolCall struct {
	id string
	// name is the block's "name"; hasName is false when the member is
	// missing or not a string.
	name    string
	hasName bool
}

// msgInfo is what the pairing rules need of an assistant or toolResult
// message line.
type msgInfo struct {
	role       string
	stopReason string
	calls      []toolCall
	resultID   string
}

// toolCallTypes are the content block types OpenClaw's pairing reads as
// tool calls (pi-ai's own type is "toolCall").
var toolCallTypes = map[string]bool{"toolCall": true, "toolUse": true, "functionCall": true}

// resultIDMembers are the members a tool result may name its call in, in
// the order OpenClaw reads them; the first non-empty one wins.
var resultIDMembers = []string{"toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "callId", "call_id"}

// parseMessage reads the pairing fields of a message line from its fully
// parsed view (e.Strings: every string value with its JSON Pointer, as the
// store's scanner found it, without decoding the rest): the "message"
// member of a pi/OpenClaw entry, or the line itself in the flat format. It
// returns nil for a line that is not an assistant or toolResult message.
// Where a member occurs twice the last one counts, as in a JSON decoder.
func parseMessage(e *bs.Entry) *msgInfo {
	prefix := ""
	for _, v := range e.Strings {
		if v.Pointer == "/message/role" {
			prefix = "/message"
			break
		}
	}
	fields := map[string]string{}
	type block struct{ typ, id, name string }
	var blocks []block
	hasName := map[int]bool{}
	for _, v := range e.Strings {
		rest, ok := strings.CutPrefix(v.Pointer, prefix+"/")
		if !ok {
			continue
		}
		val := func() string { return str(e.Raw[v.Start:v.End]) }
		if c, ok := strings.CutPrefix(rest, "content/"); ok {
			idx, member, ok := strings.Cut(c, "/")
			if !ok || strings.Contains(member, "/") {
				continue
			}
			i, err := strconv.Atoi(idx)
			if err != nil || i < 0 || i > len(e.Raw) {
				continue
			}
			for len(blocks) <= i {
				blocks = append(blocks, block{})
			}
			switch member {
			case "type":
				blocks[i].typ = val()
			case "id":
				blocks[i].id = val()
			case "name":
				blocks[i].name, hasName[i] = val(), true
			}
			continue
		}
		if rest == "role" || rest == "stopReason" || slices.Contains(resultIDMembers, rest) {
			fields[rest] = val()
		}
	}
	info := &msgInfo{role: fields["role"]}
	switch info.role {
	case "assistant":
		info.stopReason = fields["stopReason"]
		for i, b := range blocks {
			if !toolCallTypes[b.typ] || b.id == "" {
				continue
			}
			info.calls = append(info.calls, toolCall{id: b.id, name: b.name, hasName: hasName[i]})
		}
	case "toolResult":
		for _, k := range resultIDMembers {
			if id := strings.TrimSpace(fields[k]); id != "" {
				info.resultID = id
				break
			}
		}
	default:
		return nil
	}
	return info
}

// str decodes a JSON string, or returns "" for anything else.
func str(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// failed reports whether an assistant message ended in a way that makes
// pi-ai drop it from every request.
func (m *msgInfo) failed() bool { return m.stopReason == "error" || m.stopReason == "aborted" }

// missingGroup is the calls of one assistant message that no result
// answers, and the entry after which their synthetic results go.
type missingGroup struct {
	assistant int // node index
	anchor    int // node index: the last paired result, or the assistant
	calls     []toolCall
	fixable   bool
}

// analysis is the tool-pair part of a diagnosis, with what Fix needs.
type analysis struct {
	problems []Problem
	missing  []missingGroup
	// detach lists the node indexes of the orphan results Fix takes off
	// the active path.
	detach map[int]bool
	// move maps the anchor of an assistant message's run of results (the
	// last paired result, or the assistant) to the displaced results Fix
	// moves right after it, in path order; moved lists them all.
	move  map[int][]int
	moved map[int]bool
	// displaced counts the displaced results found (fixable or not).
	displaced int
	// trailing is true when the last assistant message's calls reach the
	// end of the context (a turn that may still be running).
	trailing bool
}

// analyse applies the pairing rules (see the package doc) to the context
// messages of a transcript. infos holds the parsed assistant and
// toolResult lines by line number; elsewhere maps every tool-call id to the
// lines of the assistant messages off the active path that carry it.
func analyse(tr bs.Transcript, infos map[int]*msgInfo, callLines map[string][]int) *analysis {
	nodes := tr.Nodes()
	path := tr.ActivePath()
	onPath := make(map[int]bool, len(path))
	for _, p := range path {
		onPath[nodes[p].Line] = true
	}
	leaf := -1
	if len(path) > 0 {
		leaf = path[len(path)-1]
	}
	firstKept := map[string]bool{}
	for _, p := range path {
		if k := nodes[p].FirstKept(); k != "" {
			firstKept[k] = true
		}
	}
	v1 := tr.Header().Version < 2

	a := &analysis{detach: map[int]bool{}, move: map[int][]int{}, moved: map[int]bool{}}
	// skip marks the displaced results: they belong to an earlier
	// assistant message and are judged with it.
	skip := map[int]bool{}
	info := func(ni int) *msgInfo {
		n := &nodes[ni]
		if n.Kind != bs.KindEntry || n.Type != "message" {
			return nil
		}
		return infos[n.Line]
	}
	orphan := func(ni int, r *msgInfo, why string) {
		n := &nodes[ni]
		p := Problem{Kind: KindOrphanResult, Line: n.Line, EntryID: n.ID, ToolCallID: r.resultID, Detail: why}
		if r.resultID != "" {
			on, off := 0, 0
			for _, l := range callLines[r.resultID] {
				if onPath[l] && on == 0 {
					on = l
				} else if !onPath[l] && off == 0 {
					off = l
				}
			}
			switch {
			case on > 0 && on != n.Line:
				p.Detail += fmt.Sprintf("; its call is at line %d", on)
			case off > 0:
				p.OtherBranch = true
				p.Detail += fmt.Sprintf("; its call is on another branch (line %d)", off)
			case !strings.HasPrefix(why, "a second"):
				p.Detail += "; no assistant message in the transcript made that call"
			}
		}
		switch {
		case v1 || n.ID == "":
			p.Fix = "not fixable: the transcript has no entry ids to re-parent"
		case ni == leaf:
			p.Fix = "not fixable: it is the active leaf (the session's last entry); taking it off the active path would mean deleting it, and the doctor never deletes an entry"
		case firstKept[n.ID]:
			p.Fix = "not fixable: it is the first entry a compaction keeps; taking it off the active path would drop the kept messages"
		default:
			p.Fixable = true
			p.Fix = "take it off the active path: the entry after it is re-parented to the entry before it (the result stays in the file on a dead branch)"
			a.detach[ni] = true
		}
		a.problems = append(a.problems, p)
	}
	orphanWhy := func(r *msgInfo, prev *msgInfo) string {
		switch {
		case r.resultID == "":
			return "a tool result that names no tool call"
		case prev == nil:
			return fmt.Sprintf("tool result for call %s does not follow the assistant message that made the call", r.resultID)
		case prev.failed():
			for _, c := range prev.calls {
				if c.id == r.resultID {
					return fmt.Sprintf("tool result for call %s answers an assistant message that ended with stopReason %q, which the host drops from every request", r.resultID, prev.stopReason)
				}
			}
		}
		for _, c := range prev.calls {
			if c.id == r.resultID {
				return fmt.Sprintf("a second tool result for call %s", r.resultID)
			}
		}
		return fmt.Sprintf("tool result for call %s, which the assistant message before it did not make", r.resultID)
	}

	// displace judges the toolResult at node ni that answers call c of
	// the assistant message at node ai, after the other messages between
	// them: it is moved right after anchor when it can be.
	displace := func(ni, ai, anchor int, c toolCall, r *msgInfo) {
		n := &nodes[ni]
		p := Problem{Kind: KindDisplacedResult, Line: n.Line, EntryID: n.ID, ToolCallID: r.resultID, ToolName: c.name,
			Detail: fmt.Sprintf("tool result for call %s comes after other messages, not right after the assistant message that made the call (line %d); providers reject it there", r.resultID, nodes[ai].Line)}
		a.displaced++
		switch {
		case v1 || n.ID == "" || nodes[anchor].ID == "":
			p.Fix = "not fixable: the transcript has no entry ids to re-parent"
		case ni == leaf:
			p.Fix = "not fixable yet: it is the active leaf (the session's last entry), which cannot move without taking the messages before it off the active path; once the session has a later entry, the doctor can move it (no synthetic result is inserted for its call meanwhile, so that the real one is not shadowed)"
		case firstKept[n.ID]:
			p.Fix = "not fixable: it is the first entry a compaction keeps; moving it would change what the compaction keeps"
		default:
			p.Fixable = true
			p.Fix = fmt.Sprintf("move it right after line %d (the host's own repair moves it there in memory): it is re-parented to that entry, the entry that followed there becomes its child, and the entry after it is re-parented to the entry before it", nodes[anchor].Line)
			a.move[anchor] = append(a.move[anchor], ni)
			a.moved[ni] = true
		}
		a.problems = append(a.problems, p)
	}

	msgs := tr.Context().Messages
	for i := 0; i < len(msgs); {
		ni := msgs[i]
		if skip[ni] {
			i++
			continue
		}
		m := info(ni)
		if m == nil || m.role != "assistant" {
			if m != nil && m.role == "toolResult" {
				orphan(ni, m, orphanWhy(m, nil))
			}
			i++
			continue
		}
		claimed := map[string]bool{}
		anchor := ni
		j := i + 1
		for ; j < len(msgs); j++ {
			if skip[msgs[j]] {
				continue
			}
			r := info(msgs[j])
			if r == nil || r.role != "toolResult" {
				break
			}
			ok := !m.failed() && r.resultID != "" && !claimed[r.resultID]
			if ok {
				ok = false
				for _, c := range m.calls {
					if c.id == r.resultID {
						ok = true
						break
					}
				}
			}
			if !ok {
				orphan(msgs[j], r, orphanWhy(r, m))
				continue
			}
			claimed[r.resultID] = true
			anchor = msgs[j]
		}
		if !m.failed() {
			// A result of a call the run does not answer may come later,
			// after user or plain assistant messages, up to the next
			// assistant message with tool calls: it is displaced (OpenClaw's
			// repair moves it back in memory), not missing.
			open := map[string]int{}
			for k, c := range m.calls {
				if _, dup := open[c.id]; !claimed[c.id] && !dup {
					open[c.id] = k
				}
			}
			for k := j; k < len(msgs) && len(open) > 0; k++ {
				r := info(msgs[k])
				if r == nil || skip[msgs[k]] {
					continue
				}
				if r.role == "assistant" {
					if len(r.calls) > 0 {
						break
					}
					continue
				}
				if c, ok := open[r.resultID]; ok && r.resultID != "" {
					delete(open, r.resultID)
					claimed[r.resultID] = true
					skip[msgs[k]] = true
					displace(msgs[k], ni, anchor, m.calls[c], r)
				}
			}
			var miss []toolCall
			for _, c := range m.calls {
				if !claimed[c.id] {
					miss = append(miss, c)
					claimed[c.id] = true // a repeated id is answered once
				}
			}
			if len(miss) > 0 {
				g := missingGroup{assistant: ni, anchor: anchor, calls: miss}
				g.fixable = !v1 && nodes[anchor].ID != "" && nodes[ni].ID != ""
				a.missing = append(a.missing, g)
				if j == len(msgs) {
					a.trailing = true
				}
			}
		}
		i = j
	}
	return a
}

// missingProblems turns the missing groups into problems.
func (a *analysis) missingProblems(nodes []bs.Node, synthetic string) []Problem {
	var out []Problem
	for _, g := range a.missing {
		n := &nodes[g.assistant]
		for _, c := range g.calls {
			p := Problem{Kind: KindMissingResult, Line: n.Line, EntryID: n.ID, ToolCallID: c.id, ToolName: c.name,
				Detail: fmt.Sprintf("tool call %s (%s) has no tool result after it", c.id, nameOr(c))}
			if g.fixable {
				p.Fixable = true
				p.Fix = fmt.Sprintf("insert the host's synthetic error result (%q) after line %d", synthetic, nodes[g.anchor].Line)
			} else {
				p.Fix = "not fixable: the transcript has no entry ids to chain a new entry to"
			}
			out = append(out, p)
		}
	}
	return out
}

func nameOr(c toolCall) string {
	if c.hasName && c.name != "" {
		return c.name
	}
	return "unnamed"
}
