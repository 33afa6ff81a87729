package compact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// msg is one context message with what the layers need to know of it.
type msg struct {
	node   int // index into Nodes
	line   int
	id     string
	typ    string // entry type: message, custom_message, branch_summary
	role   string // message.role ("" for custom_message, branch_summary)
	raw    []byte
	tokens int
	// toolResult is true for a toolResult message; callID its toolCallId.
	toolResult bool
	callID     string
	// calls are the tool calls of an assistant message.
	calls []toolCall
	// pinned is true when the entry says `_extractable: false`.
	pinned bool
}

// toolCall is one toolCall block of an assistant message.
type toolCall struct {
	id, name string
	path     string // the file path argument, when there is one
}

// prior is the latest compaction on the active path.
type prior struct {
	node      int
	id        string
	raw       []byte
	at        time.Time
	summary   string
	firstKept string
	readFiles []string
	modFiles  []string
	level     int
	covers    []string
	// tokens is the summary message's share of the context.
	tokens int
}

// view is a transcript's context as the host builds it, read once.
type view struct {
	tr    bs.Transcript
	ctx   bs.Context
	prior *prior // nil when there is no compaction on the active path
	msgs  []msg
	tok   tokens.Tokenizer
	est   Estimator
	// tokens is the predicted context size (overhead included).
	tokens int
	// window names the window of the session's model (TokenOptions.Window).
	window WindowFunc
}

// recorded returns what the latest assistant messages of the context
// that reached a model record: the "provider/model" of the latest that
// names a model, and the usage of the latest whose usage is not zero
// (tokens.Usage's Total), or "" and 0. Assistants that are not a model's
// answer to a completed request (tokens.Usage.Answered: the host's
// delivery mirrors, failed turns) are passed over.
func (v *view) recorded() (model string, usage int) {
	for i := len(v.msgs) - 1; i >= 0 && (model == "" || usage == 0); i-- {
		if v.msgs[i].role != "assistant" {
			continue
		}
		u, ok := tokens.RecordedUsage(v.msgs[i].raw)
		if !u.Answered() {
			continue
		}
		if model == "" && u.Model != "" {
			model = u.Model
			if u.Provider != "" {
				model = u.Provider + "/" + model
			}
		}
		if ok && usage == 0 {
			usage = int(u.Total)
		}
	}
	return model, usage
}

// toolTokens returns the tokens held by tool results in the context.
func (v *view) toolTokens() (tokens, count int) {
	for i := range v.msgs {
		if v.msgs[i].toolResult {
			tokens += v.msgs[i].tokens
			count++
		}
	}
	return tokens, count
}

// tokenizer returns t, or tokens.CharsPer4 when t is nil.
func tokenizer(t tokens.Tokenizer) tokens.Tokenizer {
	if t == nil {
		return tokens.CharsPer4{}
	}
	return t
}

// estimator returns the estimator of tr that tok asks for.
func estimator(ctx context.Context, tr bs.Transcript, tok TokenOptions) (Estimator, error) {
	if tok.Estimator == nil {
		return TokenizerEstimator{Tokenizer: tokenizer(tok.Tokenizer)}, nil
	}
	e, err := tok.Estimator(ctx, tr)
	if err != nil {
		return nil, fmt.Errorf("token estimator for %s: %w", tr.Ref(), err)
	}
	if e == nil {
		return TokenizerEstimator{Tokenizer: tokenizer(tok.Tokenizer)}, nil
	}
	return e, nil
}

// load reads the context of tr: the latest compaction on the active path
// and every context message, raw.
func load(ctx context.Context, tr bs.Transcript, tok TokenOptions) (*view, error) {
	v := &view{tr: tr, ctx: tr.Context(), tok: tokenizer(tok.Tokenizer), window: tok.Window}
	nodes := tr.Nodes()
	var want []int
	if v.ctx.Compaction >= 0 {
		want = append(want, nodes[v.ctx.Compaction].Line)
	}
	for _, i := range v.ctx.Messages {
		want = append(want, nodes[i].Line)
	}
	slices.Sort(want)
	raws := make(map[int][]byte, len(want))
	if len(want) > 0 {
		for e, err := range tr.Lines(ctx, want) {
			if err != nil {
				return nil, fmt.Errorf("read context of %s: %w", tr.Ref(), err)
			}
			raws[e.Line] = e.Raw
		}
	}
	if v.ctx.Compaction >= 0 {
		n := &nodes[v.ctx.Compaction]
		p, err := parsePrior(raws[n.Line])
		if err != nil {
			return nil, fmt.Errorf("compaction at line %d of %s: %w", n.Line, tr.Ref(), err)
		}
		p.node, p.id, p.at = v.ctx.Compaction, n.ID, n.Timestamp
		v.prior = p
	}
	est, err := estimator(ctx, tr, tok)
	if err != nil {
		return nil, err
	}
	v.est = est
	// A message's tokens are the estimator's, so that the parts of a
	// breakdown add up to the total (a calibrated estimator scales the
	// base count).
	over := est.Overhead()
	count := func(raw []byte) int { return max(est.Predict([][]byte{raw})-over, 0) }
	if v.prior != nil {
		v.prior.tokens = count(v.prior.raw)
	}
	v.msgs = make([]msg, 0, len(v.ctx.Messages))
	for _, i := range v.ctx.Messages {
		n := &nodes[i]
		raw, ok := raws[n.Line]
		if !ok {
			return nil, fmt.Errorf("read context of %s: line %d was not read: %w", tr.Ref(), n.Line, bs.ErrChanged)
		}
		m := parseMsg(raw)
		m.node, m.line, m.id, m.typ, m.raw = i, n.Line, n.ID, n.Type, raw
		m.tokens = count(raw)
		v.msgs = append(v.msgs, m)
	}
	// The estimate is a sum over the lines: the total is the parts plus
	// the overhead, without counting every line a second time.
	v.tokens = over
	if v.prior != nil {
		v.tokens += v.prior.tokens
	}
	for i := range v.msgs {
		v.tokens += v.msgs[i].tokens
	}
	return v, nil
}

// msgJSON is the part of a message line the layers read.
type msgJSON struct {
	Message *struct {
		Role       string          `json:"role"`
		ToolCallID string          `json:"toolCallId"`
		Content    json.RawMessage `json:"content"`
	} `json:"message"`
	Extractable json.RawMessage `json:"_extractable"`
}

// blockJSON is one content block of an assistant message.
type blockJSON struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// argsJSON holds the file path arguments the host's tools use.
type argsJSON struct {
	Path     string `json:"path"`
	FilePath string `json:"file_path"`
	FilePth2 string `json:"filePath"`
}

// parseMsg reads what the layers need from a message line. A line that
// does not parse gives a message with no role: it is never a cut point.
func parseMsg(raw []byte) msg {
	var m msg
	var j msgJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return m
	}
	m.pinned = string(bytes.TrimSpace(j.Extractable)) == "false"
	if j.Message == nil {
		return m
	}
	m.role = j.Message.Role
	switch m.role {
	case "toolResult":
		m.toolResult, m.callID = true, j.Message.ToolCallID
	case "assistant":
		c := bytes.TrimSpace(j.Message.Content)
		if len(c) == 0 || c[0] != '[' {
			break
		}
		var blocks []blockJSON
		if json.Unmarshal(c, &blocks) != nil {
			break
		}
		for _, b := range blocks {
			if b.Type != "toolCall" {
				continue
			}
			tc := toolCall{id: b.ID, name: b.Name}
			var a argsJSON
			if len(b.Arguments) > 0 && b.Arguments[0] == '{' && json.Unmarshal(b.Arguments, &a) == nil {
				tc.path = firstNonEmpty(a.Path, a.FilePath, a.FilePth2)
			}
			m.calls = append(m.calls, tc)
		}
	}
	return m
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// compactionJSON is a compaction line as pi writes it, with our details.
type compactionJSON struct {
	Summary          string `json:"summary"`
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	TokensBefore     *int   `json:"tokensBefore"`
	FromHook         *bool  `json:"fromHook"`
	Details          *struct {
		ReadFiles     []string `json:"readFiles"`
		ModifiedFiles []string `json:"modifiedFiles"`
		BrainSurgeon  *ours    `json:"brainsurgeon"`
	} `json:"details"`
}

// ours is details.brainsurgeon of a compaction entry (host entry: the
// host's camelCase names).
type ours struct {
	Layer             Layer    `json:"layer"`
	Trigger           Trigger  `json:"trigger"`
	TokensAfter       int      `json:"tokensAfter"`
	MessagesCompacted int      `json:"messagesCompacted"`
	Focus             string   `json:"focus,omitempty"`
	Degraded          bool     `json:"degraded"`
	DegradedReason    string   `json:"degradedReason,omitempty"`
	Summarizer        string   `json:"summarizer,omitempty"`
	Covers            []string `json:"covers,omitempty"`
	Level             int      `json:"level"`
	Pinned            []string `json:"pinned,omitempty"`
}

// parsePrior reads a compaction line.
func parsePrior(raw []byte) (*prior, error) {
	var j compactionJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("expected a compaction entry (JSON object), found %d bytes that do not parse: %v: %w", len(raw), err, bs.ErrMalformed)
	}
	p := &prior{raw: raw, summary: j.Summary, firstKept: j.FirstKeptEntryID}
	if j.Details != nil {
		p.readFiles, p.modFiles = j.Details.ReadFiles, j.Details.ModifiedFiles
		if o := j.Details.BrainSurgeon; o != nil {
			p.level, p.covers = o.Level, o.Covers
		}
	}
	return p, nil
}
