package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// TestMessageRuleMatchesHost checks the one rule for what counts as a
// message against the real pi SessionManager: a branch_summary entry on the
// active path becomes a context message, so the context, the message
// positions and the host agree on the count and on every message's place.
func TestMessageRuleMatchesHost(t *testing.T) {
	oracle.Require(t)
	for _, tt := range []struct {
		name string
		in   string
		// want lists the ids of the messages from the newest (position 0).
		want []string
	}{
		{"branch summary", `{"type":"session","version":3,"id":"s","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-07-01T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"two"}],"timestamp":2}}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-07-01T09:00:03.000Z","message":{"role":"user","content":"abandoned","timestamp":3}}
{"type":"branch_summary","id":"d","parentId":"b","timestamp":"2026-07-01T09:00:04.000Z","fromId":"c","summary":"tried the other way"}
{"type":"model_change","id":"e","parentId":"d","timestamp":"2026-07-01T09:00:05.000Z","provider":"p","modelId":"m"}
{"type":"custom_message","id":"f","parentId":"e","timestamp":"2026-07-01T09:00:06.000Z","customType":"note","content":"noted","display":true}
{"type":"message","id":"g","parentId":"f","timestamp":"2026-07-01T09:00:07.000Z","message":{"role":"user","content":"three","timestamp":7}}
`, []string{"g", "f", "d", "b", "a"}},
		{"after a compaction", `{"type":"session","version":3,"id":"s","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"branch_summary","id":"b","parentId":"a","timestamp":"2026-07-01T09:00:02.000Z","fromId":"a","summary":"kept summary"}
{"type":"message","id":"c","parentId":"b","timestamp":"2026-07-01T09:00:03.000Z","message":{"role":"user","content":"two","timestamp":3}}
{"type":"compaction","id":"d","parentId":"c","timestamp":"2026-07-01T09:00:04.000Z","summary":"sum","firstKeptEntryId":"a","tokensBefore":10}
{"type":"branch_summary","id":"e","parentId":"d","timestamp":"2026-07-01T09:00:05.000Z","fromId":"c","summary":"later summary"}
{"type":"message","id":"f","parentId":"e","timestamp":"2026-07-01T09:00:06.000Z","message":{"role":"user","content":"three","timestamp":6}}
`, []string{"f", "e", "c", "b", "a"}},
		{"branch summaries without a summary", `{"type":"session","version":3,"id":"s","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":"one","timestamp":1}}
{"type":"branch_summary","id":"b","parentId":"a","timestamp":"2026-07-01T09:00:02.000Z","fromId":"a","summary":""}
{"type":"branch_summary","id":"c","parentId":"b","timestamp":"2026-07-01T09:00:03.000Z","fromId":"a"}
{"type":"branch_summary","id":"d","parentId":"c","timestamp":"2026-07-01T09:00:04.000Z","fromId":"a","summary":null}
{"type":"branch_summary","id":"e","parentId":"d","timestamp":"2026-07-01T09:00:05.000Z","fromId":"a","summary":"real"}
{"type":"message","id":"f","parentId":"e","timestamp":"2026-07-01T09:00:06.000Z","message":{"role":"user","content":"two","timestamp":6}}
`, []string{"f", "e", "a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(f, []byte(tt.in), 0o600); err != nil {
				t.Fatal(err)
			}
			tr, err := session.ReadIndex(context.Background(), strings.NewReader(tt.in), "")
			if err != nil {
				t.Fatal(err)
			}
			pos := tr.MessagePositions()
			if len(pos) != len(tt.want) {
				t.Errorf("%d message positions, want %d: %v", len(pos), len(tt.want), pos)
			}
			for want, id := range tt.want {
				n, ok := tr.Node(id)
				if !ok {
					t.Fatalf("no node %q", id)
				}
				if got, ok := pos[n.Line]; !ok || got != want {
					t.Errorf("position of %s = %d,%v, want %d", id, got, ok, want)
				}
			}
			lc, err := session.LoadContext(context.Background(), f, bs.SessionRef{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(lc.Entries), len(tr.Context().Messages); got != want {
				t.Errorf("LoadContext has %d messages, Context %d", got, want)
			}
			sums, err := oracle.Summary(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			c := tr.Context()
			onPath := 0
			for _, i := range tr.ActivePath() {
				if tr.Nodes()[i].IsMessage() {
					onPath++
				}
			}
			// The host sends the compaction's summary, the kept messages
			// (here every message before the compaction) and those after.
			if got := c.Count(); got != sums[0].ContextMessageCount {
				t.Errorf("context messages = %d, host %d", got, sums[0].ContextMessageCount)
			}
			wantCount := onPath
			if c.Compaction >= 0 {
				wantCount++
			}
			if wantCount != sums[0].ContextMessageCount {
				t.Errorf("messages on the active path = %d, host sends %d", wantCount, sums[0].ContextMessageCount)
			}
			branch := 0
			for _, m := range sums[0].Messages {
				if m.Role == "branchSummary" {
					branch++
				}
			}
			if branch == 0 {
				t.Errorf("host sent no branchSummary message: %+v", sums[0].Messages)
			}
		})
	}
}
