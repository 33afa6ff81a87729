// Package agenttools is the agent's tools: purge_control (get_context,
// restore, set_extractable) and recall_grep, recall_describe and
// recall_expand, with their specs (Specs), the restore of a value from the
// context engine's view, the paging of long values, and the store of a
// tool result at the source with its conflict rule. The REST API's plugin
// routes decode a request, call these functions and encode their answer;
// the purge_control command calls the same functions, so that the shell
// and the plugin restore and page alike. The text the model reads is worded
// in internal/agenttext.
//
// The package sees sessions only through the root interfaces (the store,
// the side store) and the restorer and context engine built on them; it
// never prints, exits or panics.
package agenttools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// MaxTextBlock is the longest text block, in UTF-16 code units (a
// JavaScript string's length), that a tool answers: the host truncates
// longer blocks, so a longer text is split into consecutive blocks of at
// most this length that concatenate to the exact text.
const MaxTextBlock = 100_000

// MaxGrepHits is the most hits a search may ask for (recall_grep's max,
// and the REST API's context grep).
const MaxGrepHits = 1000

// MaxGrepPattern bounds a search pattern, in bytes.
const MaxGrepPattern = 1024

// Engine is what the tools use of the context engine (*engine.Engine):
// the value an entry's content holds in the host's transcript, and the
// summaries of its views.
type Engine interface {
	Value(ctx context.Context, ref bs.SessionRef, entryID string) (engine.ViewValue, error)
	Describe(ctx context.Context, ref bs.SessionRef, summaryID string) (engine.SummaryRecord, error)
	Expand(ctx context.Context, ref bs.SessionRef, summaryID string) ([][]byte, error)
}

// Tools runs the agent's tools over one installation. A Tools is cheap
// to make: the REST API makes one per request, with the Restorer and the
// engine of the runtime config then in force.
type Tools struct {
	// Store reads transcripts (the recall tools) and Side the side store
	// (values extracted or stored at the source).
	Store bs.Store
	Side  bs.SideStore
	// Restorer restores values, sets "_extractable" and reports a
	// session's context (purge_control).
	Restorer *restore.Restorer
	// Engine is the context engine; nil when there is none: restores then
	// read the side store only, and summary ids are unknown.
	Engine Engine
	// ReadOnly refuses what would write (set_extractable), restores
	// without writing back, and says so in the answers.
	ReadOnly bool
	// Logger receives what the tools log (a restore from the engine's
	// view, a search's unreadable records); nil logs nothing.
	Logger bs.Logger
}

func (t *Tools) log() bs.Logger { return bs.LoggerOrDiscard(t.Logger) }

// Result is a tool's answer: Content is exactly what the model gets, and
// Details small metadata the host keeps beside it (never the values). The
// REST API sends it as the answer of POST /api/plugin/v1/tool.
type Result struct {
	OK      bool              `json:"ok"`
	Error   string            `json:"error,omitempty"`
	Content []json.RawMessage `json:"content"`
	Details any               `json:"details,omitempty"`
}

// Failed is the answer of a call that failed: ok false, and the error's
// text as the one text block the model reads.
func Failed(err error) Result {
	return Result{OK: false, Error: err.Error(), Content: []json.RawMessage{textBlock(err.Error())}}
}

// textBlock returns a text content block.
func textBlock(text string) json.RawMessage {
	b, _ := json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", text})
	return b
}

// textResult is a successful answer whose text is split into blocks of
// at most MaxTextBlock UTF-16 units (the host truncates longer ones).
func textResult(text string, details any) Result {
	var blocks []json.RawMessage
	for _, part := range splitUTF16(text, MaxTextBlock) {
		blocks = append(blocks, textBlock(part))
	}
	return Result{OK: true, Content: blocks, Details: details}
}

// runners are the tools Call runs, one for each spec (a test holds the
// two lists to each other).
var runners = map[string]func(*Tools, context.Context, bs.SessionRef, call) (Result, error){
	PurgeControl:   (*Tools).purgeControl,
	RecallGrep:     (*Tools).recallGrep,
	RecallDescribe: (*Tools).recallDescribe,
	RecallExpand:   (*Tools).recallExpand,
}

// call is one tool call: the tool, the host's id of the call and the
// arguments as the model gave them.
type call struct {
	tool, toolCallID string
	params           json.RawMessage
}

// Call runs the tool name in the session ref with params, the model's
// arguments (a JSON object; null or empty for none). toolCallID is the
// host's id of this call ("" when unknown): a restore redacts the call of
// that id. An error is the call's failure, to be shown to the model
// (Failed), except a context's cancellation; a tool that is not one of
// Specs, or Tools without a Store and a Side store, wraps
// brainsurgeon.ErrInvalid (as does purge_control without a Restorer).
func (t *Tools) Call(ctx context.Context, ref bs.SessionRef, name, toolCallID string, params json.RawMessage) (Result, error) {
	run, ok := runners[name]
	if !ok {
		return Result{}, fmt.Errorf("tool: expected %s, found %.60q: %w", ExpectedTools(), name, bs.ErrInvalid)
	}
	if t.Store == nil || t.Side == nil {
		return Result{}, fmt.Errorf("agenttools: %s needs Tools with a Store and a Side store, found Store %v, Side %v: %w",
			name, t.Store != nil, t.Side != nil, bs.ErrInvalid)
	}
	return run(t, ctx, ref, call{tool: name, toolCallID: toolCallID, params: params})
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// decode decodes a call's params; a type mismatch is the model's
// mistake, answered ok:false.
func (c call) decode(v any) error {
	if isNull(c.params) {
		return nil
	}
	if err := json.Unmarshal(c.params, v); err != nil {
		return fmt.Errorf("%s params: %v (expected the documented members)", c.tool, err)
	}
	return nil
}

// valueID returns the id purge_control names a value or an entry by:
// value_id, or key, its old name. OpenClaw masks an argument named key in
// its transcript ("***"), so the tool spec and every hint say value_id;
// key is still accepted because older placeholders in transcripts name it.
// Both given and different is an error.
func valueID(id, oldKey string) (string, error) {
	switch {
	case oldKey == "" || oldKey == id:
		return id, nil
	case id == "":
		return oldKey, nil
	}
	return "", fmt.Errorf(`value_id %.80q and key %.80q (the old name of value_id) name different values: expected value_id only`, id, oldKey)
}

// stringList reads "a,b" or ["a","b"].
func stringList(raw json.RawMessage) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return strings.Split(one, ","), nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, fmt.Errorf("expected a comma-separated string or an array of strings, found %.40s", string(raw))
	}
	return many, nil
}

// intParam reads an integer param: a JSON number without a fraction or
// a string of digits; def when it is absent or null.
func intParam(member string, raw json.RawMessage, def int) (int, error) {
	if isNull(raw) {
		return def, nil
	}
	t := bytes.TrimSpace(raw)
	var str string
	if json.Unmarshal(t, &str) == nil {
		t = []byte(strings.TrimSpace(str))
	}
	n, err := strconv.Atoi(string(t))
	if err != nil {
		var f float64
		if json.Unmarshal(t, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("%s: expected an integer, found %.40s", member, string(raw))
		}
		n = int(f)
	}
	return n, nil
}

// splitUTF16 cuts s into parts of at most max UTF-16 code units, between
// code points.
func splitUTF16(s string, max int) []string {
	var parts []string
	start, n := 0, 0
	for i, r := range s {
		l := utf16.RuneLen(r)
		if l < 0 {
			l = 1 // an invalid byte becomes U+FFFD, one unit
		}
		if n+l > max {
			parts = append(parts, s[start:i])
			start, n = i, 0
		}
		n += l
	}
	return append(parts, s[start:])
}
