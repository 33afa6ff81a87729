package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// piMsg is the part of a pi context message the oracle test reads.
type piMsg struct {
	Role         string `json:"role"`
	Summary      string `json:"summary"`
	TokensBefore int    `json:"tokensBefore"`
	ToolCallID   string `json:"toolCallId"`
	Content      json.RawMessage
}

// toolPairs returns the tool results whose call is not before them and
// the tool calls whose result never comes, in a pi context.
func toolPairs(t *testing.T, msgs []json.RawMessage) (orphanResults, unanswered map[string]bool) {
	t.Helper()
	calls := map[string]bool{}
	answered := map[string]bool{}
	orphanResults = map[string]bool{}
	for _, raw := range msgs {
		var m piMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		switch m.Role {
		case "assistant":
			var blocks []struct{ Type, ID string }
			if json.Unmarshal(m.Content, &blocks) == nil {
				for _, b := range blocks {
					if b.Type == "toolCall" {
						calls[b.ID] = true
					}
				}
			}
		case "toolResult":
			if !calls[m.ToolCallID] {
				orphanResults[m.ToolCallID] = true
			}
			answered[m.ToolCallID] = true
		}
	}
	unanswered = map[string]bool{}
	for c := range calls {
		if !answered[c] {
			unanswered[c] = true
		}
	}
	return orphanResults, unanswered
}

// TestOracleCompactCorpus compacts a copy of every v2/v3 corpus
// transcript and has the real pi SessionManager build the context: it
// must begin with our summary, continue exactly with the entries from
// firstKeptEntryId on (byte for byte the messages pi built before), and
// every tool call keeps its result (no pairing the original had is
// broken).
func TestOracleCompactCorpus(t *testing.T) {
	oracle.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	compacted := 0
	for _, f := range testcorpus.Transcripts(t) {
		tr0, err := session.Open(ctx, f, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tr0.Header().Version < 2 || tr0.Context().Count() < 3 {
			continue
		}
		for _, layer := range []compact.Layer{compact.LayerSummarize, compact.LayerFull} {
			t.Run(testcorpus.Name(f)+"/"+string(layer), func(t *testing.T) {
				st, ref := newStore(t, f)
				before, err := oracle.Context(ctx, ref.Path)
				if err != nil {
					t.Fatal(err)
				}
				s := compact.DefaultSettings()
				s.SummarizeKeepRecent = 4000
				res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: layer, Summarizer: &localSummarizer{}, Settings: s})
				if err != nil {
					t.Fatal(err)
				}
				if res.EntryID == "" {
					t.Logf("not compacted: %s", res.Warning)
					return
				}
				compacted++
				after, err := oracle.Context(ctx, ref.Path)
				if err != nil {
					t.Fatal(err)
				}
				if after.LeafID == nil || *after.LeafID != res.EntryID {
					t.Errorf("pi's leaf is %v, want our entry %s", after.LeafID, res.EntryID)
				}
				var first piMsg
				if err := json.Unmarshal(after.Messages[0], &first); err != nil {
					t.Fatal(err)
				}
				if first.Role != "compactionSummary" || first.Summary != res.Summary || first.TokensBefore != res.TokensBefore {
					t.Fatalf("pi's context starts with %.200s, want our summary", after.Messages[0])
				}
				// Our index agrees on where the kept part starts.
				tr, err := st.Open(ctx, ref, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := tr.Context()
				if got := tr.Nodes()[c.Messages[0]].ID; got != res.FirstKeptEntryID {
					t.Errorf("kept part starts at %s, want firstKeptEntryId %s", got, res.FirstKeptEntryID)
				}
				kept := after.Messages[1:]
				if len(kept) != len(c.Messages) || len(kept) > len(before.Messages) {
					t.Fatalf("pi keeps %d messages, our index %d, pi had %d before", len(kept), len(c.Messages), len(before.Messages))
				}
				tail := before.Messages[len(before.Messages)-len(kept):]
				for i := range kept {
					if !bytes.Equal(kept[i], tail[i]) {
						t.Fatalf("kept message %d differs from the message pi built before", i)
					}
				}
				if got := len(before.Messages) - len(kept); res.MessagesCompacted > got {
					t.Errorf("messages_compacted %d, but only %d messages left the context", res.MessagesCompacted, got)
				}
				o0, u0 := toolPairs(t, before.Messages)
				o1, u1 := toolPairs(t, after.Messages)
				for id := range o1 {
					if !o0[id] {
						t.Errorf("tool result %s lost its call", id)
					}
				}
				for id := range u1 {
					if !u0[id] {
						t.Errorf("tool call %s lost its result", id)
					}
				}
			})
		}
	}
	if compacted < 10 {
		t.Errorf("only %d compactions were written over the corpus", compacted)
	}
	t.Logf("%d compactions checked by the pi oracle", compacted)
}
