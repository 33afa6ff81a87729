package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// wideTurn appends a tool turn like tsess.turn with thinkingBytes of
// thinking in the tool call and a result of resultBytes.
func (s *tsess) wideTurn(k, thinkingBytes, resultBytes int) {
	s.add(fmt.Sprintf(`"role":"user","content":[{"type":"text","text":"step %d"}]`, k))
	call := fmt.Sprintf("call_%d", k)
	s.add(fmt.Sprintf(`"role":"assistant","content":[{"type":"thinking","thinking":%s},{"type":"toolCall","id":%q,"name":"exec","arguments":{"command":"ls"}}],"provider":"anthropic","model":"m","usage":{"input":100,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":110},"stopReason":"toolUse"`,
		text(thinkingBytes, k), call))
	s.add(fmt.Sprintf(`"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":%s}],"details":{"exitCode":0},"isError":false`,
		call, text(resultBytes, k*7)))
	s.add(fmt.Sprintf(`"role":"assistant","content":[{"type":"text","text":"done %d"}],"provider":"anthropic","model":"m","usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":105},"stopReason":"stop"`, k))
}

// cacheTTLPrune is what OpenClaw's cache-TTL context pruning makes of the
// messages of its model-request call: the tool results before the last
// three assistant messages longer than 4,000 characters are cut to their
// first and last 1,500 (about 3,100 characters with its note).
func cacheTTLPrune(msgs []hostMsg) []hostMsg {
	out := slices.Clone(msgs)
	cut, seen := -1, 0
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == "assistant" {
			if seen++; seen == 3 {
				cut = i
				break
			}
		}
	}
	for i := 0; i < cut; i++ {
		if out[i].Role == "toolResult" && out[i].Chars > 4000 {
			out[i].Chars = 3100
		}
	}
	return out
}

// TestBatchRuleBothCallShapes proves that the batch rule decides the same
// on both of the host's assemble calls of a turn: the turn-start call,
// which carries the history rebuilt from the transcript (every message the
// engine's summary covers, every tool result at its stored size) and, as
// its budget, what the host leaves the messages; and the model-request
// call, which carries the view the engine served (its summary message,
// the kept messages), the tool results as the host prunes them, and the
// window. Before each case's turn the previous turn's two calls are made
// with a policy that collapses nothing new (what the engine learns of the
// host there is what it knows). Each call of the turn then decides from
// the same saved state.
func TestBatchRuleBothCallShapes(t *testing.T) {
	const (
		reserve = 20000 // the host's reserve, tokens
		system  = 15000 // the host's system prompt, tokens
		prompt  = 40    // the prompt, characters
	)
	for _, tc := range []struct {
		name  string
		build func(s *tsess)
		// keep, when not 0, makes the engine summarize all but the
		// newest keep tokens first: the summary stands in the view.
		keep   int
		window int
		prune  func([]hostMsg) []hostMsg // the host's pruning (nil: none)
		// oldPlugin leaves HostCall and ReserveTokens out, as a plugin
		// that predates them does.
		oldPlugin bool
		want      bool // the turn's new batch is applied
	}{
		{
			// Eight turns of long thinking under the summary inflate the
			// turn-start call tenfold; the kept turns' tool results are
			// worth collapsing in the view the model gets.
			name: "summary stands, history inflated",
			build: func(s *tsess) {
				for k := range 8 {
					s.wideTurn(k, 40000, 600)
				}
				for k := 8; k < 13; k++ {
					s.wideTurn(k, 700, 4000)
				}
			},
			keep: 8000, window: 1_000_000, want: true,
		},
		{
			// The host prunes the old tool results: collapsing them saves
			// the model about 3,000 characters each, under a tenth of its
			// view, though their stored size is a third of the history.
			name: "host prunes old tool results",
			build: func(s *tsess) {
				for k := range 8 {
					s.wideTurn(k, 25000, 20000)
				}
			},
			window: 1_000_000, prune: cacheTTLPrune, want: false,
		},
		{
			name: "host prunes old tool results, older plugin",
			build: func(s *tsess) {
				for k := range 8 {
					s.wideTurn(k, 25000, 20000)
				}
			},
			window: 1_000_000, prune: cacheTTLPrune, oldPlugin: true, want: false,
		},
		{
			// About 57,000 tokens: above 80 % of the turn-start call's
			// budget (65,000), under 80 % of the window (100,000); the
			// batch saves under a tenth of the view.
			name: "turn-start budget is the message budget",
			build: func(s *tsess) {
				for k := range 8 {
					s.wideTurn(k, 25000, 2000)
				}
			},
			window: 100_000, want: false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			tc.build(s)
			s.write()
			full := skeleton(t, s.path)
			st, ref := openStore(t, s.path)
			e := newEngine(t, st, testPolicy())
			e.Settings.PruneTriggerPercent = 80
			e.SummaryWait = -1
			ctx := context.Background()
			if tc.keep > 0 {
				e.Settings.SummarizeKeepRecent = tc.keep
				res, err := e.Compact(ctx, ref, engine.CompactOptions{TokenBudget: tc.window, Force: true, Target: engine.TargetThreshold})
				if err != nil || !res.Compacted {
					t.Fatalf("compact: %+v, %v; want a summary", res, err)
				}
			}
			turnStart := func() engine.Request {
				r := request(full, tc.window-reserve-system-(prompt+3)/4)
				r.PromptChars, r.Model = prompt, "m"
				if !tc.oldPlugin {
					r.HostCall, r.ReserveTokens = engine.CallTurnStart, reserve
				}
				return r
			}
			modelRequest := func(host []hostMsg) engine.Request {
				r := request(host, tc.window)
				r.PromptChars, r.Model = prompt, "m"
				if !tc.oldPlugin {
					r.HostCall = engine.CallModelRequest
				}
				return r
			}
			// The previous turn, deciding nothing new.
			policy := e.Policy
			e.Policy.MinSavingTokens = 1 << 30
			v0, err := e.Assemble(ctx, ref, turnStart())
			if err != nil {
				t.Fatal(err)
			}
			if (v0.Summary != nil) != (tc.keep > 0) || len(v0.Replace) != 0 {
				t.Fatalf("previous turn: summary %v, %d replaced; want a summary %v, none replaced", v0.Summary != nil, len(v0.Replace), tc.keep > 0)
			}
			host := served(full, v0)
			if tc.prune != nil {
				host = tc.prune(host)
			}
			if _, err := e.Assemble(ctx, ref, modelRequest(host)); err != nil {
				t.Fatal(err)
			}
			e.Policy = policy
			dir := filepath.Join(e.StateDir, "engine")
			saved := os.DirFS(dir)
			snap := t.TempDir()
			if err := os.CopyFS(snap, saved); err != nil {
				t.Fatal(err)
			}
			// decide serves req from the saved state and returns whether
			// the new batch applied and the entries it replaced.
			decide := func(req engine.Request, msgs []hostMsg) (bool, []string) {
				t.Helper()
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.CopyFS(dir, os.DirFS(snap)); err != nil {
					t.Fatal(err)
				}
				v, err := e.Assemble(ctx, ref, req)
				if err != nil || v.Passthrough != "" {
					t.Fatalf("assemble: %v, passthrough %q", err, v.Passthrough)
				}
				var ids []string
				for _, r := range v.Replace {
					ids = append(ids, msgs[r.Index].id)
				}
				return slices.Contains(v.Layers, "collapse"), ids
			}
			startChars, hostChars := 0, 0
			for _, m := range full {
				startChars += m.Chars
			}
			for _, m := range host {
				hostChars += m.Chars
			}
			startApplied, startIDs := decide(turnStart(), full)
			reqApplied, reqIDs := decide(modelRequest(host), host)
			t.Logf("turn start: %d characters, batch applied %v; model request: %d characters, batch applied %v", startChars, startApplied, hostChars, reqApplied)
			if startApplied != reqApplied || !slices.Equal(startIDs, reqIDs) {
				t.Errorf("turn-start call: batch applied %v, replaced %v; model-request call: %v, %v; want the same decision", startApplied, startIDs, reqApplied, reqIDs)
			}
			if startApplied != tc.want {
				t.Errorf("batch applied %v, want %v", startApplied, tc.want)
			}
		})
	}
}
