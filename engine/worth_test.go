package engine

import (
	"fmt"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/compact"
)

// turnsOf returns n turns of a user message, a tool call, its result of
// result tokens and the answer, each message but the result of 10 tokens.
func turnsOf(n, result int) []viewMsg {
	var msgs []viewMsg
	for i := range n {
		c := fmt.Sprintf("c%d", i)
		msgs = append(msgs,
			viewMsg{ID: fmt.Sprintf("u%d", i), Role: "user", Tokens: 10},
			viewMsg{ID: fmt.Sprintf("a%d", i), Role: "assistant", Calls: []string{c}, Tokens: 10},
			viewMsg{ID: fmt.Sprintf("r%d", i), Role: "toolResult", CallID: c, Tokens: result},
			viewMsg{ID: fmt.Sprintf("b%d", i), Role: "assistant", Tokens: 10})
	}
	return msgs
}

// A summary below the full threshold waits until it saves at least what it
// makes the provider write again (the summary message and the kept part);
// above the full threshold, or forced, it is made at once.
func TestSummaryWaitsUntilWorthTheRewrite(t *testing.T) {
	// The window is 10,000 tokens: summarize above 5,000, full above 9,000,
	// keep the newest 500.
	settings := compact.Settings{SummarizeTriggerPercent: 50, FullTriggerPercent: 90, SummarizeKeepRecent: 500}
	for _, tc := range []struct {
		name string
		// the view's messages, and the host's own part of it (the system
		// prompt and tools): Tokens is their sum
		msgs     []viewMsg
		overhead int
		force    bool
		layer    string
	}{
		{"below the summarize threshold: nothing", turnsOf(20, 100), 2000, false, ""},
		{"a long span: worth the rewrite", turnsOf(20, 100), 3000, false, layerSummarize},
		// the host's own part alone nearly fills the threshold: the span
		// past the kept part is a turn or two, smaller than what a summary
		// would send again
		{"a short span: waits", turnsOf(6, 100), 4500, false, ""},
		{"a short span above the full threshold: the full layer at once", turnsOf(6, 100), 8500, false, layerFull},
		{"a short span, forced: summarized", turnsOf(6, 100), 4500, true, layerSummarize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := tc.overhead
			for _, m := range tc.msgs {
				tokens += m.Tokens
			}
			e := &Engine{Settings: settings}
			p := &planner{e: e, in: &summaryInput{Msgs: tc.msgs, Window: 10000, Tokens: tokens, State: &State{Version: 1}, Force: tc.force}}
			layer, cut := p.messageCut(nil, 0)
			if layer != tc.layer {
				t.Fatalf("messageCut = %q at %d, want %q (view %d tokens)", layer, cut, tc.layer, tokens)
			}
			if layer != "" {
				checkCut(t, tc.msgs, cut)
			}
		})
	}
}
