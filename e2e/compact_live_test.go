//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

// compactReport is `brainsurgeon compact --json`.
type compactReport struct {
	Layer            string `json:"layer"`
	EntryID          string `json:"entry_id"`
	FirstKeptEntryID string `json:"first_kept_entry_id"`
	Summary          string `json:"summary"`
	TokensBefore     int    `json:"tokens_before"`
	TokensAfter      int    `json:"tokens_after"`
	Degraded         bool   `json:"degraded"`
}

// TestCompactLive compacts a seeded corpus session next to a real OpenClaw 2026.7.35 gateway (loopback, mock
// model):
//
//	a. while a model call is held open, `brainsurgeon compact` refuses the busy session with the reason and
//	   writes nothing; the held run then finishes without a conflict;
//	b. once idle, `brainsurgeon compact --yes` appends a compaction entry as the last line, and the next turn's
//	   model request starts with our summary and continues from firstKeptEntryId; the turn succeeds. The bytes
//	   sent to the model before and after are logged.
func TestCompactLive(t *testing.T) {
	var transcript string
	h := openclaw.NewHost(t, openclaw.V7, func(st *openclaw.State) error {
		var err error
		transcript, err = st.Seed("main", sessionKey, seedSessionID, corpusFile(t, seedFile))
		return err
	})
	agents := h.State.AgentsDir()
	// The seeded session holds about 22K tokens of messages: keep the newest
	// 8K so that layer 2 has something to summarize and the cut falls inside
	// the conversation.
	writeConfig(t, agents, map[string]any{"enabled": false, "compaction": map[string]any{"summarize_keep_recent": 8000}})

	c1 := turn(t, h, "turn 1, before compact")

	// a. busy: a run in flight.
	held := holdTurn(t, h, "turn 2, held")
	sha := fileSHA(t, transcript)
	r := bs(t, "compact", "--session", seedSessionID, "--agents-dir", agents, "--layer", "summarize", "--yes", "--json")
	if out := strings.ToLower(r.stdout + r.stderr); r.code == 0 {
		t.Errorf("a: compact during a run succeeded: %s", r)
	} else if !strings.Contains(out, "busy") && !strings.Contains(out, "in use") && !strings.Contains(out, "running") {
		t.Errorf("a: compact during a run was refused without saying the session is busy: %s", r)
	}
	if fileSHA(t, transcript) != sha {
		t.Errorf("a: compact during a run changed the transcript")
	}
	t.Logf("a: compact refused while busy (exit %d)", r.code)
	endTurn(t, h, held, "a")

	// b. idle: compact, then one more turn.
	before := turn(t, h, "turn 3, last before compact")
	r = bs(t, "compact", "--session", seedSessionID, "--agents-dir", agents, "--layer", "summarize", "--yes", "--json")
	if r.code != 0 {
		t.Fatalf("b: compact failed: %s", r)
	}
	var rep compactReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("b: compact --json: %v\n%s", err, r)
	}
	if rep.EntryID == "" || rep.FirstKeptEntryID == "" || rep.Summary == "" {
		t.Fatalf("b: compact reported no entry, first kept entry or summary: %s", r)
	}
	last := lastLine(t, transcript)
	var ce struct {
		Type             string `json:"type"`
		ID               string `json:"id"`
		Summary          string `json:"summary"`
		FirstKeptEntryID string `json:"firstKeptEntryId"`
	}
	if err := json.Unmarshal(last, &ce); err != nil || ce.Type != "compaction" || ce.ID != rep.EntryID {
		t.Fatalf("b: the transcript's last line is not our compaction %s (%v): %.300s", rep.EntryID, err, last)
	}
	t.Logf("b: compaction %s (layer %s, degraded %v): first kept %s, tokens %d -> %d, summary %d bytes",
		rep.EntryID, rep.Layer, rep.Degraded, rep.FirstKeptEntryID, rep.TokensBefore, rep.TokensAfter, len(rep.Summary))

	after := turn(t, h, "turn 4, after compact")
	if got := entry(t, h).SessionID; got != seedSessionID {
		t.Fatalf("b: the turn after compact started a new session %s (was %s)", got, seedSessionID)
	}
	// The first message after the system prompt is the summary, as the host wraps it.
	i := 0
	for i < len(after.Messages) && after.Messages[i].Role == "system" {
		i++
	}
	if i >= len(after.Messages) {
		t.Fatalf("b: the model request after compact has no messages besides the system prompt")
	}
	head := firstLine(ce.Summary)
	if m := after.Messages[i]; !strings.Contains(m.Content, "<summary>") || !strings.Contains(m.Content, head) {
		t.Fatalf("b: the model request after compact does not start with our summary (first line %q); it starts with %s: %.300s",
			head, m.Role, m.Content)
	}
	// It continues from firstKeptEntryId: the kept entry's text is the next thing the model sees.
	if want := keptText(t, transcript, rep.FirstKeptEntryID); want != "" {
		found := false
		for _, m := range after.Messages[i+1:] {
			if strings.Contains(m.Content, want) || strings.Contains(string(m.Raw), want) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("b: the model request after compact does not carry the first kept entry %s (text %q)", rep.FirstKeptEntryID, want)
		}
		if i+1 < len(after.Messages) {
			if m := after.Messages[i+1]; !strings.Contains(m.Content, want) && !strings.Contains(string(m.Raw), want) {
				t.Errorf("b: the message right after the summary is not the first kept entry %s: %s %.200q",
					rep.FirstKeptEntryID, m.Role, m.Content)
			}
		}
	}
	if !chatHas(after, "turn 4, after compact") {
		t.Errorf("b: the model request after compact does not carry the new message")
	}
	t.Logf("model request bytes: turn 1 %d (%d messages), turn 3 (last before compact) %d (%d messages), turn 4 (after compact) %d (%d messages)",
		len(c1.Body), len(c1.Messages), len(before.Body), len(before.Messages), len(after.Body), len(after.Messages))
	if len(after.Body) >= len(before.Body) {
		t.Errorf("b: the model request after compact (%d bytes) is not smaller than before (%d bytes)", len(after.Body), len(before.Body))
	}
}

// lastLine returns the last non-empty line of the file at p.
func lastLine(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// keptText returns a short plain piece of the text of the entry id in the transcript at p, or "" when the
// entry carries no plain text (a tool call only), in which case the continuation is checked by the summary
// position alone.
func keptText(t *testing.T, p, id string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			ID      string `json:"id"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.ID != id {
			continue
		}
		var s string
		if json.Unmarshal(e.Message.Content, &s) != nil {
			var blocks []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			_ = json.Unmarshal(e.Message.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "text" && b.Text != "" {
					s = b.Text
					break
				}
			}
		}
		s = strings.TrimSpace(s)
		// A short, escape-free piece survives the host's conversion for the model.
		for _, part := range strings.Split(s, "\n") {
			part = strings.TrimSpace(part)
			if len(part) >= 12 && !strings.ContainsAny(part, "\"\\<>&") {
				if len(part) > 40 {
					part = part[:40]
				}
				return part
			}
		}
		return ""
	}
	t.Fatalf("entry %s not found in %s", id, p)
	return ""
}
