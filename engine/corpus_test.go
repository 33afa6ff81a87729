package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// contextSkeleton builds the host's messages of the session at path as the
// plugin would send them: the "message" entries of the active path's
// context, in order (custom and summary messages are left out: the
// engine must pass what it cannot join).
func contextSkeleton(t *testing.T, path string) []hostMsg {
	t.Helper()
	st, ref := openStore(t, path)
	ctx := context.Background()
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := tr.Nodes()
	var lines []int
	for _, i := range tr.Context().Messages {
		if nodes[i].Type == "message" {
			lines = append(lines, nodes[i].Line)
		}
	}
	var out []hostMsg
	for e, err := range tr.Lines(ctx, lines) {
		if err != nil {
			t.Fatal(err)
		}
		var j struct {
			ID      string `json:"id"`
			Message *struct {
				Role       string          `json:"role"`
				Timestamp  json.Number     `json:"timestamp"`
				ToolCallID string          `json:"toolCallId"`
				Content    json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(e.Raw, &j) != nil || j.Message == nil {
			continue
		}
		m := hostMsg{id: nodes[e.Line-1].ID, content: j.Message.Content}
		m.Role, m.ToolCallID = j.Message.Role, j.Message.ToolCallID
		if n, err := j.Message.Timestamp.Float64(); err == nil {
			m.Timestamp = int64(n)
		}
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if json.Unmarshal(j.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "toolCall" {
					m.ToolCallIDs = append(m.ToolCallIDs, b.ID)
				}
			}
		}
		m.Chars = jsChars(j.Message.Content)
		out = append(out, m)
	}
	return out
}

// TestCorpusCollapseIsExtractionShaped runs the view over every real
// transcript of the shared corpus (skipped without it; the synthetic twin
// is TestCollapseIsExtractionShaped): every host message joins its stored
// message, and every message the view collapses and an extraction pass
// with the same policy changes has, byte for byte, the content the
// extraction wrote.
func TestCorpusCollapseIsExtractionShaped(t *testing.T) {
	now := time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	total := 0
	for _, src := range testcorpus.Real(t) {
		t.Run(testcorpus.Name(src), func(t *testing.T) {
			_, path := testcorpus.Copy(t, src, "s1")
			host := contextSkeleton(t, path)
			st, ref := openStore(t, path)
			p := testPolicy()
			e := newEngine(t, st, p)
			e.Now = func() time.Time { return now }
			// Above the prune threshold from the first token: every
			// collapse applies at once.
			e.Settings.PruneTriggerPercent = 0.0001
			v, err := e.Assemble(context.Background(), ref, request(host, 0))
			if err != nil {
				t.Fatal(err)
			}
			if len(host) > 0 && (v.Passthrough != "" || v.Matched != len(host)) {
				t.Fatalf("passthrough %q, matched %d of %d", v.Passthrough, v.Matched, len(host))
			}
			cp := extractCopyAt(t, path, p, now)
			after := map[string][]byte{}
			for _, m := range contextSkeleton(t, cp) {
				if m.id != "" { // a v1 entry has none, and is never extracted
					after[m.id] = m.content
				}
			}
			same := 0
			for _, r := range v.Replace {
				h := host[r.Index]
				got, ok := after[h.id]
				if !ok || bytes.Equal(got, h.content) {
					continue // not extracted in the file (a duplicate id, for one)
				}
				if !bytes.Equal(r.Content, got) {
					t.Errorf("entry %s: the view's content differs from the extraction's (%d and %d bytes)", h.id, len(r.Content), len(got))
				}
				same++
			}
			replaced := map[int]bool{}
			for _, r := range v.Replace {
				replaced[r.Index] = true
			}
			for i, h := range host {
				if h.Role != "toolResult" {
					if replaced[i] {
						t.Errorf("entry %s: a %s message replaced in the view", h.id, h.Role)
					}
					continue // the extraction may move thinking out; the view never does
				}
				if got, ok := after[h.id]; ok && h.id != "" && !bytes.Equal(got, h.content) && !replaced[i] {
					t.Errorf("entry %s: the extraction changed its content, the view did not", h.id)
				}
			}
			total += same
			t.Logf("%d messages, %d collapsed, %d compared with the extraction", len(host), len(v.Replace), same)
		})
	}
	if total == 0 {
		t.Errorf("no collapsed message compared across the corpus")
	}
}
