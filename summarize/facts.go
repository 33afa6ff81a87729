package summarize

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Facts is the structured, model-free extraction of a stretch of
// conversation. Its JSON form (snake_case) is part of the export format:
// fields are only ever added. Lists are never nil, so they encode as [].
type Facts struct {
	// Messages counts the lines that are conversation messages; ToolCalls
	// the tool calls among them.
	Messages  int `json:"messages"`
	ToolCalls int `json:"tool_calls"`
	// FirstEntryID and LastEntryID are the ids of the first and last
	// message lines seen.
	FirstEntryID string `json:"first_entry_id,omitempty"`
	LastEntryID  string `json:"last_entry_id,omitempty"`
	// Entities are the named things the conversation works with (files,
	// URLs, code names in backticks), most mentioned first.
	Entities []Entity `json:"entities"`
	// FilesRead are the files only read; FilesModified the files written or
	// edited (both sorted, as pi's compaction details are). Files listed by
	// a previous compaction or branch summary among the lines count too.
	FilesRead     []string `json:"files_read"`
	FilesModified []string `json:"files_modified"`
	// ToolOperations counts the calls and failures of each tool, most used
	// first.
	ToolOperations []ToolOperation `json:"tool_operations"`
	// Commands are the shell commands run, in order (repeats removed, the
	// latest kept).
	Commands []Command `json:"commands"`
	// Errors are failed tool results, failed commands and model errors;
	// Findings the assistant's conclusions (root causes, what now works).
	Errors   []Note `json:"errors"`
	Findings []Note `json:"findings"`
	// Decisions are the choices the assistant stated; Constraints the
	// user's rules and preferences; UserRequests what the user asked for;
	// NextSteps the open tasks (unchecked items, TODOs, stated next steps,
	// an unanswered request, tool calls without results).
	Decisions    []Note `json:"decisions"`
	Constraints  []Note `json:"constraints"`
	UserRequests []Note `json:"user_requests"`
	NextSteps    []Note `json:"next_steps"`
	// PreviousSummary is the summary of the latest compaction entry among
	// the lines, or "".
	PreviousSummary string `json:"previous_summary,omitempty"`
}

// Entity is a named thing a conversation refers to.
type Entity struct {
	// Name is the file path, URL or code name.
	Name string `json:"name"`
	// Kind is "file", "url" or "symbol".
	Kind string `json:"kind"`
	// Mentions counts the tool calls and texts that name it.
	Mentions int `json:"mentions"`
}

// ToolOperation counts the calls of one tool.
type ToolOperation struct {
	// Tool is the tool's name.
	Tool string `json:"tool"`
	// Calls is the number of calls; Errors how many of their results were
	// errors.
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
}

// Command is one shell command the agent or the user ran.
type Command struct {
	// EntryID is the id of the line that ran it.
	EntryID string `json:"entry_id,omitempty"`
	// Tool is the tool that ran it ("bash", "exec", or "user" for a
	// command the user ran with pi's "!").
	Tool string `json:"tool"`
	// Command is the command line (cut to 300 characters).
	Command string `json:"command"`
	// Failed is true when its result was an error or a non-zero exit code.
	Failed bool `json:"failed"`
}

// Note is one extracted piece of text.
type Note struct {
	// EntryID is the id of the line it comes from.
	EntryID string `json:"entry_id,omitempty"`
	// Source says what produced it: a tool name, "assistant", "user",
	// "model" (a failed model call) or "bash".
	Source string `json:"source,omitempty"`
	// Text is the note, on one line, cut to 300 characters.
	Text string `json:"text"`
}

// Bounds of the extraction: the latest items of each list are kept.
const (
	maxNotes    = 200
	maxCommands = 500
	maxEntities = 100
	noteChars   = 300
)

// fileInfo tracks one file's operations.
type fileInfo struct {
	path                string
	reads, writes, edit int
	last                int // sequence number of the latest operation
}

// extraction is ExtractFacts' working state, with what Deterministic needs
// beyond the public Facts.
type extraction struct {
	facts      Facts
	inputBytes int
	files      map[string]*fileInfo
	seq        int
	tools      map[string]*ToolOperation
	entities   map[string]*Entity
	callTool   map[string]string // tool call id → tool name
	callCmd    map[string]string // tool call id → command line
	cmds       map[string]*cmdRecord
	pending    map[string]string // tool calls still without a result: id → "name(target)"
	pendOrder  []string
	lastUser   Note // the latest user request ("" Text when none)
	answered   bool // an assistant text came after the latest user request
	firstUser  Note
	prevRead   []string
	prevModify []string
}

// ExtractFacts extracts the facts of raw transcript lines. It never fails:
// lines it cannot read are skipped.
func ExtractFacts(lines [][]byte) Facts {
	return extract(lines).facts
}

func extract(lines [][]byte) *extraction {
	x := newExtraction()
	for _, raw := range lines {
		x.line(raw)
	}
	x.finish()
	return x
}

// newExtraction returns an empty extraction, to be fed lines in order
// (line) and then finished.
func newExtraction() *extraction {
	return &extraction{
		files:    map[string]*fileInfo{},
		tools:    map[string]*ToolOperation{},
		entities: map[string]*Entity{},
		callTool: map[string]string{},
		callCmd:  map[string]string{},
		cmds:     map[string]*cmdRecord{},
		pending:  map[string]string{},
	}
}

// line adds the next raw transcript line; a line it cannot read only
// counts toward the input's size. It keeps nothing of raw's bytes.
func (x *extraction) line(raw []byte) {
	x.inputBytes += len(raw)
	m, ok := readLine(raw)
	if !ok {
		return
	}
	x.add(&m)
}

func (x *extraction) add(m *view) {
	f := &x.facts
	switch m.role {
	case roleOther:
		return
	case roleCompaction:
		if m.summary != "" {
			f.PreviousSummary = m.summary
		}
		x.prevRead = append(x.prevRead, m.readFiles...)
		x.prevModify = append(x.prevModify, m.modifiedFiles...)
		return
	case roleBranchSummary:
		x.prevRead = append(x.prevRead, m.readFiles...)
		x.prevModify = append(x.prevModify, m.modifiedFiles...)
	}
	f.Messages++
	if m.id != "" {
		if f.FirstEntryID == "" {
			f.FirstEntryID = m.id
		}
		f.LastEntryID = m.id
	}
	switch m.role {
	case roleUser:
		t := cleanUserText(m.joined("\n"))
		if t == "" {
			return
		}
		n := Note{EntryID: m.id, Source: "user", Text: oneLine(t, noteChars)}
		f.UserRequests = appendNote(f.UserRequests, n)
		x.lastUser, x.answered = n, false
		if x.firstUser.Text == "" {
			x.firstUser = n
		}
		for _, s := range sentences(t) {
			if hasCue(s, constraintCues) {
				f.Constraints = appendNote(f.Constraints, Note{EntryID: m.id, Source: "user", Text: oneLine(s, noteChars)})
			}
		}
		x.mentions(t)
	case roleBash:
		x.command(m.id, "", "user", m.command, m.hasExit && m.exitCode != 0)
		if m.hasExit && m.exitCode != 0 {
			f.Errors = appendNote(f.Errors, Note{EntryID: m.id, Source: "bash", Text: oneLine("`"+m.command+"` exited with code "+itoa(m.exitCode)+": "+firstLines(m.output), noteChars)})
		}
	case roleAssistant:
		if m.stopReason == "error" && m.errorMessage != "" {
			f.Errors = appendNote(f.Errors, Note{EntryID: m.id, Source: "model", Text: oneLine(m.errorMessage, noteChars)})
		}
		t := m.joined("\n")
		if t != "" {
			x.answered = true
			for _, s := range sentences(t) {
				switch {
				case hasCue(s, decisionCues):
					f.Decisions = appendNote(f.Decisions, Note{EntryID: m.id, Source: "assistant", Text: oneLine(s, noteChars)})
				case hasCue(s, findingCues):
					f.Findings = appendNote(f.Findings, Note{EntryID: m.id, Source: "assistant", Text: oneLine(s, noteChars)})
				case isNextStep(s):
					f.NextSteps = appendNote(f.NextSteps, Note{EntryID: m.id, Source: "assistant", Text: oneLine(s, noteChars)})
				}
			}
			x.mentions(t)
		}
		for _, c := range m.calls {
			x.call(m.id, c)
		}
	case roleToolResult:
		name := m.toolName
		if name == "" {
			name = x.callTool[m.callID]
		}
		if name == "" {
			name = "tool"
		}
		delete(x.pending, m.callID)
		failed := m.isError || (m.hasExit && m.exitCode != 0)
		if failed {
			x.tool(name).Errors++
			if r := x.cmds[x.callCmd[m.callID]]; r != nil && m.callID != "" && r.callID == m.callID {
				r.Failed = true
			}
			text := firstLines(m.joined("\n"))
			if m.hasExit && m.exitCode != 0 {
				text = "exit code " + itoa(m.exitCode) + ": " + text
			}
			f.Errors = appendNote(f.Errors, Note{EntryID: m.id, Source: name, Text: oneLine(text, noteChars)})
		}
	}
}

// call records one tool call.
func (x *extraction) call(entryID string, c toolCall) {
	f := &x.facts
	f.ToolCalls++
	name := c.name
	if name == "" {
		name = "tool"
	}
	x.tool(name).Calls++
	if c.id != "" {
		x.callTool[c.id] = name
	}
	target := ""
	lower := strings.ToLower(name)
	switch op := fileOp(lower, c.args); op {
	case 'r', 'w', 'e':
		p := argString(c.args, pathKeys...)
		if p == "" {
			break
		}
		target = p
		fi := x.files[p]
		if fi == nil {
			fi = &fileInfo{path: p}
			x.files[p] = fi
		}
		x.seq++
		fi.last = x.seq
		switch op {
		case 'r':
			fi.reads++
		case 'w':
			fi.writes++
		case 'e':
			fi.edit++
		}
		x.entity(p, "file")
	}
	if commandTools[lower] {
		if cmd := argString(c.args, "command", "cmd"); cmd != "" {
			target = cmd
			x.command(entryID, c.id, name, cmd, false)
		}
	}
	if u := argString(c.args, "url", "targetUrl"); u != "" {
		target = u
		x.entity(u, "url")
	}
	if c.id != "" {
		if target != "" {
			target = "(" + oneLine(target, 80) + ")"
		}
		x.pending[c.id] = name + target
		x.pendOrder = append(x.pendOrder, c.id)
	}
}

// cmdRecord is the latest run of one command line.
type cmdRecord struct {
	Command
	callID string
	seq    int
}

// command records one shell command; a repeat replaces the earlier run.
func (x *extraction) command(entryID, callID, tool, cmd string, failed bool) {
	if cmd == "" {
		return
	}
	text := oneLine(cmd, noteChars)
	x.seq++
	r := x.cmds[text]
	if r == nil {
		r = &cmdRecord{}
		x.cmds[text] = r
	}
	*r = cmdRecord{Command: Command{EntryID: entryID, Tool: tool, Command: text, Failed: failed}, callID: callID, seq: x.seq}
	if callID != "" {
		x.callCmd[callID] = text
	}
}

func (x *extraction) tool(name string) *ToolOperation {
	t := x.tools[name]
	if t == nil {
		t = &ToolOperation{Tool: name}
		x.tools[name] = t
	}
	return t
}

func (x *extraction) entity(name, kind string) {
	if name == "" || len(name) > 300 {
		return
	}
	e := x.entities[name]
	if e == nil {
		e = &Entity{Name: name, Kind: kind}
		x.entities[name] = e
	}
	e.Mentions++
}

var (
	urlRe  = regexp.MustCompile(`https?://[^\s<>"'` + "`" + `)\]]+`)
	codeRe = regexp.MustCompile("`([A-Za-z_./~-][A-Za-z0-9_./:~-]{2,79})`")
)

// mentions records the URLs and code names of a text.
func (x *extraction) mentions(t string) {
	if len(t) > 20_000 {
		t = t[:20_000]
	}
	if strings.Contains(t, "://") {
		for _, u := range urlRe.FindAllString(t, 20) {
			x.entity(strings.TrimRight(u, ".,;:"), "url")
		}
	}
	if strings.IndexByte(t, '`') >= 0 {
		for _, m := range codeRe.FindAllStringSubmatch(t, 50) {
			name := m[1]
			kind := "symbol"
			if _, ok := x.files[name]; ok || looksLikePath(name) {
				kind = "file"
			}
			x.entity(name, kind)
		}
	}
}

// finish builds the sorted, bounded lists of the facts.
func (x *extraction) finish() {
	f := &x.facts
	modified := map[string]bool{}
	for _, p := range x.prevModify {
		modified[p] = true
	}
	read := map[string]bool{}
	for _, p := range x.prevRead {
		read[p] = true
	}
	for p, fi := range x.files {
		if fi.writes+fi.edit > 0 {
			modified[p] = true
		} else {
			read[p] = true
		}
	}
	f.FilesModified = sortedKeys(modified, nil)
	f.FilesRead = sortedKeys(read, modified)

	f.ToolOperations = make([]ToolOperation, 0, len(x.tools))
	for _, t := range x.tools {
		f.ToolOperations = append(f.ToolOperations, *t)
	}
	slices.SortFunc(f.ToolOperations, func(a, b ToolOperation) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Tool, b.Tool))
	})

	f.Entities = make([]Entity, 0, min(len(x.entities), maxEntities))
	for _, e := range x.entities {
		f.Entities = append(f.Entities, *e)
	}
	slices.SortFunc(f.Entities, func(a, b Entity) int {
		return cmp.Or(cmp.Compare(b.Mentions, a.Mentions), cmp.Compare(a.Name, b.Name))
	})
	if len(f.Entities) > maxEntities {
		f.Entities = f.Entities[:maxEntities]
	}

	if x.lastUser.Text != "" && !x.answered {
		f.NextSteps = appendNote(f.NextSteps, Note{EntryID: x.lastUser.EntryID, Source: "user", Text: oneLine("Answer the latest request: "+x.lastUser.Text, noteChars)})
	}
	for _, id := range x.pendOrder {
		if call, ok := x.pending[id]; ok {
			f.NextSteps = appendNote(f.NextSteps, Note{Source: "tool", Text: oneLine("Tool call without a result: "+call, noteChars)})
			delete(x.pending, id)
		}
	}
	for _, l := range []*[]Note{&f.Errors, &f.Findings, &f.Decisions, &f.Constraints, &f.UserRequests, &f.NextSteps} {
		if *l == nil {
			*l = []Note{}
		}
	}
	recs := make([]*cmdRecord, 0, len(x.cmds))
	for _, r := range x.cmds {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *cmdRecord) int { return cmp.Compare(a.seq, b.seq) })
	if len(recs) > maxCommands {
		recs = recs[len(recs)-maxCommands:]
	}
	f.Commands = make([]Command, len(recs))
	for i, r := range recs {
		f.Commands[i] = r.Command
	}
}

// sortedKeys returns the keys of set that are not in minus, sorted, never
// nil.
func sortedKeys(set, minus map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		if !minus[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// appendNote adds n to l unless the latest notes already say the same,
// keeping at most maxNotes (the latest).
func appendNote(l []Note, n Note) []Note {
	if n.Text == "" {
		return l
	}
	if i := slices.IndexFunc(l, func(o Note) bool { return o.Text == n.Text }); i >= 0 {
		l = slices.Delete(l, i, i+1)
	}
	l = append(l, n)
	if len(l) > maxNotes {
		l = slices.Delete(l, 0, len(l)-maxNotes)
	}
	return l
}

// Tool classes. Names are compared in lower case.
var (
	readTools    = map[string]bool{"read": true, "read_file": true, "view": true, "view_file": true, "open_file": true, "cat": true}
	writeTools   = map[string]bool{"write": true, "write_file": true, "create": true, "create_file": true}
	editTools    = map[string]bool{"edit": true, "edit_file": true, "multiedit": true, "multi_edit": true, "str_replace": true, "str_replace_editor": true, "patch": true}
	commandTools = map[string]bool{"bash": true, "exec": true, "shell": true, "run": true, "run_command": true, "terminal": true, "execute_command": true}
	pathKeys     = []string{"path", "file_path", "filePath", "filename", "file"}
)

// fileOp classifies a tool call: 'r' read, 'w' write, 'e' edit, 0 none.
func fileOp(lowerName string, args []byte) byte {
	switch {
	case readTools[lowerName]:
		return 'r'
	case writeTools[lowerName]:
		return 'w'
	case editTools[lowerName]:
		return 'e'
	case lowerName == "str_replace_based_edit_tool":
		switch argString(args, "command") {
		case "view":
			return 'r'
		case "create":
			return 'w'
		}
		return 'e'
	}
	return 0
}

// Cue phrases of the text heuristics, in lower case.
var (
	decisionCues   = []string{"decided", "decision", "going with", "instead of", "opted", "i chose", "we chose", "i'll use", "we'll use", "will use ", "the plan is", "switching to", "settled on"}
	findingCues    = []string{"root cause", "the issue is", "the issue was", "the problem is", "the problem was", "the bug", "turns out", "caused by", "found that", "confirmed", "works now", "now works", "is fixed", "fixed the", "tests pass", "all tests", "the reason is", "the reason was"}
	constraintCues = []string{"don't", "do not", "never ", "always ", "must ", "should not", "shouldn't", "avoid ", "make sure", "only use", "i prefer", "please keep", "without "}
	nextCues       = []string{"next step", "next, ", "next: ", "todo", "to do:", "remaining", "still need", "still to do", "will need to", "not yet", "follow-up", "follow up", "left to do", "pending"}
)

func hasCue(s string, cues []string) bool {
	l := strings.ToLower(s)
	for _, c := range cues {
		if strings.Contains(l, c) {
			return true
		}
	}
	return false
}

func isNextStep(s string) bool {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[ ]") || strings.HasPrefix(t, "- [ ]") || strings.HasPrefix(t, "* [ ]") {
		return true
	}
	return hasCue(t, nextCues)
}

// sentences splits a text into lines and the lines into sentences, with
// list markers removed; pieces shorter than 12 or longer than 600 bytes
// are dropped.
func sentences(t string) []string {
	if len(t) > 50_000 {
		t = t[:50_000]
	}
	var out []string
	for line := range strings.SplitSeq(t, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "|") {
			continue
		}
		for len(line) > 0 {
			i := sentenceEnd(line)
			s := strings.TrimSpace(line[:i])
			line = line[i:]
			s = strings.TrimLeft(s, "-*•# ")
			if len(s) >= 12 && len(s) <= 600 {
				out = append(out, s)
			}
		}
	}
	return out
}

// sentenceEnd returns the end of the first sentence of s: after ". ",
// "! " or "? ", or len(s).
func sentenceEnd(s string) int {
	for i := 0; i+1 < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			if s[i+1] == ' ' {
				return i + 1
			}
		}
	}
	return len(s)
}

// cleanUserText removes what a host adds to a user message around what
// the user typed: OpenClaw's sender metadata block and time stamp, and
// heartbeat polls.
func cleanUserText(t string) string {
	t = strings.TrimSpace(t)
	if strings.Contains(t, "(untrusted metadata)") {
		if i := strings.LastIndex(t, "```"); i >= 0 {
			t = strings.TrimSpace(t[i+3:])
		}
	}
	if strings.HasPrefix(t, "[") {
		if i := strings.IndexByte(t, ']'); i > 0 && i < 60 && strings.ContainsAny(t[:i], "0123456789") {
			t = strings.TrimSpace(t[i+1:])
		}
	}
	if strings.HasPrefix(t, "[OpenClaw heartbeat") || strings.HasPrefix(t, "HEARTBEAT") {
		return ""
	}
	return t
}

// firstLines returns the first non-empty lines of a text, up to about 300
// bytes.
func firstLines(t string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(t, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(line)
		if b.Len() >= noteChars {
			break
		}
	}
	return b.String()
}

// oneLine collapses white space and cuts s to max characters, marking a
// cut with "…".
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	n := 0
	for i := range s {
		if n == max-1 {
			return strings.ToValidUTF8(s[:i], "\uFFFD") + "…"
		}
		n++
	}
	return s
}

// pathRe matches names that look like file paths: a directory part or a
// short extension.
var pathRe = regexp.MustCompile(`^(?:[~.]?/|[\w.-]+/)[\w./-]*$|^[\w-]+\.[A-Za-z][A-Za-z0-9]{0,4}$`)

// looksLikePath reports whether a code name in backticks is a file path.
func looksLikePath(name string) bool { return pathRe.MatchString(name) }
