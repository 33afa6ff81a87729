package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestViewCollapsesToolResultsOnly proves that the view replaces the
// content of tool results only: an assistant's thinking and tool-call
// arguments and a user's words stay as the host sends them, even when the
// extraction policy would move them out and even when an earlier state
// recorded such a message as collapsed.
func TestViewCollapsesToolResultsOnly(t *testing.T) {
	s := newSession(t)
	for k := range 8 {
		s.turn(k, 3000, 1000, false)
	}
	// A long user message the policy's length would take.
	s.add(`"role":"user","content":[{"type":"text","text":` + text(3000, 99) + `}]`)
	for k := 8; k < 12; k++ {
		s.turn(k, 3000, 1000, true)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	e.Settings.PruneTriggerPercent = 0.0001 // every collapse applies at once
	host := skeleton(t, s.path)
	ctx := context.Background()
	v, err := e.Assemble(ctx, ref, request(host, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Replace) == 0 {
		t.Fatalf("no collapse; want the old tool results collapsed")
	}
	for _, r := range v.Replace {
		if role := host[r.Index].Role; role != "toolResult" {
			t.Errorf("message %d: a %s message replaced in the view", r.Index, role)
		}
	}
	// A state written by a version that collapsed thinking: the entry is
	// shown as the host sends it, and the view says so.
	path := filepath.Join(e.StateDir, "engine", ref.Agent, ref.ID+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatal(err)
	}
	collapsed := state["collapsed"].(map[string]any)
	asst := host[1]
	if asst.Role != "assistant" {
		t.Fatalf("message 1 is a %s", asst.Role)
	}
	collapsed[asst.id] = map[string]any{"at": clock, "chars": 500}
	if b, err = json.Marshal(state); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	v2, err := e.Assemble(ctx, ref, request(host, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range v2.Replace {
		if host[r.Index].Role != "toolResult" {
			t.Errorf("second view: message %d (%s) replaced", r.Index, host[r.Index].Role)
		}
	}
	if !v2.Changed || !slices.Contains(v2.Layers, "restore") {
		t.Errorf("second view: changed %v layers %v; want the assistant shown in full again, a changed prefix", v2.Changed, v2.Layers)
	}
	stat, err := e.Status(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if stat.Collapsed != len(v2.Replace) {
		t.Errorf("status: %d collapsed, the view replaces %d", stat.Collapsed, len(v2.Replace))
	}
}

// infoLog records the Info messages.
type infoLog struct {
	mu   sync.Mutex
	info []string
}

func (l *infoLog) Debug(string, ...any) {}
func (l *infoLog) Warn(string, ...any)  {}
func (l *infoLog) Error(string, ...any) {}
func (l *infoLog) Info(msg string, _ ...any) {
	l.mu.Lock()
	l.info = append(l.info, msg)
	l.mu.Unlock()
}

// TestAssembleTooLateSavesNothing proves that a view answered after its
// caller gave up is returned but not recorded: the next view compares
// with the last one the host really sent.
func TestAssembleTooLateSavesNothing(t *testing.T) {
	s := newSession(t)
	for k := range 6 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	e.Settings.PruneTriggerPercent = 0.0001
	log := &infoLog{}
	e.Logger = log
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The caller gives up while the view is being decided (the engine
	// reads its clock after the session was read).
	e.Now = func() time.Time { cancel(); return clock }
	v, err := e.Assemble(ctx, ref, request(skeleton(t, s.path), 0))
	if err != nil {
		t.Fatalf("a late view: %v", err)
	}
	if len(v.Replace) == 0 || v.Turn != 1 {
		t.Fatalf("a late view: %d replacements, turn %d", len(v.Replace), v.Turn)
	}
	if _, err := os.Stat(filepath.Join(e.StateDir, "engine", ref.Agent, ref.ID+".json")); !os.IsNotExist(err) {
		t.Fatalf("state file after a late view: %v; want none", err)
	}
	if !slices.ContainsFunc(log.info, func(m string) bool { return strings.Contains(m, "not saved") }) {
		t.Errorf("info log %q: want the unsaved state said", log.info)
	}
	e.Now = func() time.Time { return clock }
	v, err = e.Assemble(context.Background(), ref, request(skeleton(t, s.path), 0))
	if err != nil || v.Turn != 1 {
		t.Fatalf("next view: turn %d, %v; want turn 1 (the late one was not recorded)", v.Turn, err)
	}
}

// TestPassthroughKeepsCompactions proves that a summary the view cannot
// serve (a host message it would cover matches nothing) does not count
// toward the degradation warning.
func TestPassthroughKeepsCompactions(t *testing.T) {
	s := newSession(t)
	for k := range 12 {
		s.turn(k, 3000, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	e.SummaryWait = -1
	host := skeleton(t, s.path)
	// A message the session does not hold, early in the span.
	in := append(slices.Clone(host[:2]), hostMsg{Message: engine.Message{Role: "user", Timestamp: 1, Chars: 10}})
	in = append(in, host[2:]...)
	ctx := context.Background()
	v, err := e.Assemble(ctx, ref, request(in, 4000))
	if err != nil {
		t.Fatal(err)
	}
	if v.Passthrough == "" || !strings.Contains(v.Passthrough, "summary") {
		t.Fatalf("view passthrough %q; want the span check to refuse the summary", v.Passthrough)
	}
	stat, err := e.Status(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if stat.Compactions != 0 || v.SystemPromptAddition != "" {
		t.Fatalf("compactions %d, warning %q after a summary the model never saw; want 0 and none", stat.Compactions, v.SystemPromptAddition)
	}
}

// served returns the messages a view makes of the host's: the summary
// message, then the host's messages from FirstKept on with Replace
// applied. The host keeps them as its own and hands them to the next
// loop-hook call.
func served(host []hostMsg, v engine.View) []hostMsg {
	if v.Passthrough != "" {
		return slices.Clone(host)
	}
	var out []hostMsg
	if v.Summary != nil {
		q, _ := json.Marshal(v.Summary.Text)
		out = append(out, hostMsg{Message: engine.Message{Role: "compactionSummary", Timestamp: v.Summary.Timestamp, Chars: jsChars(q)}, content: q})
	}
	repl := map[int][]byte{}
	for _, r := range v.Replace {
		repl[r.Index] = r.Content
	}
	for i := v.FirstKept; i < len(host); i++ {
		m := host[i]
		if r, ok := repl[i]; ok {
			m.content = r
			m.Chars = jsChars(r)
		}
		out = append(out, m)
	}
	return out
}

// rendered is what the model receives of messages: each one's role and
// content.
func rendered(msgs []hostMsg) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role + "\x00" + string(m.content)
	}
	return out
}

// keepsPrefix reports whether cur starts with prev, less prev's trailing
// user messages.
func keepsPrefix(prev, cur []string) bool {
	for len(prev) > 0 && strings.HasPrefix(prev[len(prev)-1], "user\x00") {
		prev = prev[:len(prev)-1]
	}
	return len(cur) >= len(prev) && slices.Equal(cur[:len(prev)], prev)
}

// TestPrefixChangedReplaysHostTurns replays what the host sends over
// several turns and proves that each view says its prefix changed exactly
// when the messages it sends do not start with the previous view's (less
// its trailing user messages). At a turn's start the host hands the
// stored history (and the prompt apart); at a loop hook, the messages of
// the view it was served, then the turn's messages appended since (the
// prompt, the tool call and its result, stored or not yet); after an
// overflow the same start again.
func TestPrefixChangedReplaysHostTurns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int
		prune  float64
	}{
		{"collapse", 0, 0.0001},
		{"collapse batched", 0, 95},
		{"summaries", 2500, 95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t)
			const turns = 14
			for k := range turns {
				s.turn(k, 2500, 1000, k%3 == 0)
			}
			full := s.lines
			s.write()
			all := skeleton(t, s.path) // turn k's messages are 4k..4k+3
			st, ref := openStore(t, s.path)
			e := newEngine(t, st, testPolicy())
			e.Settings.PruneTriggerPercent = tc.prune
			e.SummaryWait = -1
			ctx := context.Background()
			var prev []string
			changes := 0
			layers := map[string]int{}
			n := 0
			assemble := func(stored int, host []hostMsg, prompt int) []hostMsg {
				t.Helper()
				s.lines = full[:1+stored]
				s.write()
				req := request(host, tc.budget)
				req.PromptChars = prompt
				v, err := e.Assemble(ctx, ref, req)
				if err != nil {
					t.Fatal(err)
				}
				out := served(host, v)
				cur := rendered(out)
				if n > 0 {
					if want := !keepsPrefix(prev, cur); v.Changed != want {
						t.Errorf("view %d (stored %d, host %d): changed %v, want %v (layers %v, passthrough %q, first kept %d, %d replaced, summary %v)",
							n, stored, len(host), v.Changed, want, v.Layers, v.Passthrough, v.FirstKept, len(v.Replace), v.Summary != nil)
					}
				}
				if v.Changed {
					changes++
				}
				for _, l := range v.Layers {
					layers[l]++
				}
				if v.Summary != nil {
					layers["with summary"]++
				}
				prev = cur
				n++
				return out
			}
			for k := 4; k < turns; k++ {
				start := assemble(4*k, all[:4*k], 40)
				if k%4 == 1 {
					start = assemble(4*k, all[:4*k], 40) // an overflow retry
				}
				stored := 4*k + 1 // the prompt; the call and its result not yet
				if k%2 == 0 {
					stored = 4*k + 3
				}
				assemble(stored, append(start, all[4*k:4*k+3]...), 0)
			}
			t.Logf("%d views, %d prefix changes, layers %v", n, changes, layers)
		})
	}
}

// TestPrefixChangedWhenHistoryLeftThePath proves that a view whose
// previous view's newest message is no longer on the session's active
// path (the host rewrote its history) says its prefix changed.
func TestPrefixChangedWhenHistoryLeftThePath(t *testing.T) {
	s := newSession(t)
	for k := range 6 {
		s.turn(k, 300, 1000, false)
	}
	s.write()
	st, ref := openStore(t, s.path)
	e := newEngine(t, st, testPolicy())
	ctx := context.Background()
	if _, err := e.Assemble(ctx, ref, request(skeleton(t, s.path), 0)); err != nil {
		t.Fatal(err)
	}
	// The last turn is replaced by another.
	s.lines, s.ids = s.lines[:len(s.lines)-4], s.ids[:len(s.ids)-4]
	s.parent = s.ids[len(s.ids)-1]
	s.turn(9, 300, 1000, false)
	s.write()
	v, err := e.Assemble(ctx, ref, request(skeleton(t, s.path), 0))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Changed {
		t.Fatalf("view after the history changed: prefix_changed false; want true")
	}
}
