package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

// transcript builds an OpenClaw-shaped JSONL session: a v3 header, then
// message entries chained by parentId, each with an ISO timestamp and the
// message's own timestamp in milliseconds.
type transcript struct {
	lines  []string
	n      int
	parent string
	t0     time.Time
}

func newTranscript() *transcript {
	return &transcript{
		lines: []string{`{"type":"session","version":3,"id":"0f0e0d0c-0000-4000-8000-000000000001","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/work"}`},
		t0:    time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
	}
}

// add appends a message entry with the given role, message members after
// role (without the timestamp) and top-level extra members; it returns
// the entry's id.
func (b *transcript) add(role, members, extra string) string {
	b.n++
	id := fmt.Sprintf("%08x", 0xa0000000+b.n)
	at := b.t0.Add(time.Duration(b.n) * time.Second)
	parent := "null"
	if b.parent != "" {
		parent = `"` + b.parent + `"`
	}
	if extra != "" {
		extra = "," + extra
	}
	b.lines = append(b.lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":%q,%s,"timestamp":%d}%s}`,
		id, parent, at.Format("2006-01-02T15:04:05.000Z"), role, members, at.UnixMilli(), extra))
	b.parent = id
	return id
}

// turn appends one tool turn: a user request, an assistant tool call, its
// result of resultChars characters and the assistant's answer.
func (b *transcript) turn(i, resultChars int) {
	b.add("user", fmt.Sprintf(`"content":[{"type":"text","text":"step %d: read the file"}]`, i), "")
	b.add("assistant", fmt.Sprintf(`"content":[{"type":"toolCall","id":"call_%d","name":"read","arguments":{"path":"/src/f%d.go"}}],"provider":"ollama","model":"x","stopReason":"toolUse"`, i, i), "")
	b.add("toolResult", fmt.Sprintf(`"toolCallId":"call_%d","toolName":"read","content":[{"type":"text","text":"%s"}],"isError":false`, i, strings.Repeat("y", resultChars)), "")
	b.add("assistant", fmt.Sprintf(`"content":[{"type":"text","text":"done %d"}],"provider":"ollama","model":"x","stopReason":"stop"`, i), "")
}

// store writes the session into a fresh agents dir and returns a JSONL
// store over it and the session's ref.
func (b *transcript) store(t testing.TB) (*session.Store, bs.SessionRef) {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "0f0e0d0c-0000-4000-8000-000000000001"
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(b.lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(agents)
	return st, bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: id, Path: path}
}

// lineOf returns the stored line of entry id, byte for byte.
func lineOf(t *testing.T, ref bs.SessionRef, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(ref.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(l, []byte(`"id":"`+id+`"`)) {
			return l
		}
	}
	t.Fatalf("no line holds entry %s", id)
	return nil
}

// model is an OpenAI-compatible chat-completions server for the tests.
type model struct {
	srv   *httptest.Server
	calls atomic.Int32
}

// newModel starts a server that answers every chat completion with a short
// markdown summary (mode "ok"; "late" after 150 ms), a 500 (mode
// "down"), or nothing until the request is cancelled (mode "slow").
func newModel(t *testing.T, mode string) *model {
	m := &model{}
	stop := make(chan struct{})
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		n := m.calls.Add(1)
		switch mode {
		case "down":
			http.Error(w, `{"error":"model unavailable"}`, http.StatusInternalServerError)
			return
		case "late":
			select {
			case <-time.After(150 * time.Millisecond):
			case <-stop:
				return
			}
		case "slow":
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"## Goal\n- model summary %d"},"finish_reason":"stop"}]}`, n, n)
	}))
	t.Cleanup(m.srv.Close)
	t.Cleanup(func() { close(stop) })
	return m
}

// client returns a summarizer of the server that fails fast.
func (m *model) client() *summarize.OpenAI {
	return &summarize.OpenAI{BaseURL: m.srv.URL + "/v1", Model: "m", Timeout: 2 * time.Second, Retries: 0,
		Backoff: time.Millisecond, MaxBackoff: time.Millisecond}
}

// failing is a summarizer that is not a VariantSummarizer and always fails.
type failing struct{}

func (failing) Summarize(context.Context, [][]byte, string) (compact.Summary, error) {
	return compact.Summary{}, errors.New("connection refused (test)")
}

// logs records what the engine logs.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) add(level, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+msg+" "+fmt.Sprint(args...))
}
func (l *logs) Debug(msg string, args ...any) { l.add("DEBUG", msg, args...) }
func (l *logs) Info(msg string, args ...any)  { l.add("INFO", msg, args...) }
func (l *logs) Warn(msg string, args ...any)  { l.add("WARN", msg, args...) }
func (l *logs) Error(msg string, args ...any) { l.add("ERROR", msg, args...) }
func (l *logs) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(x string) bool { return strings.Contains(x, s) })
}

// testSettings: a 4000-token window, summarize above 50 %, full above
// 95 %, keep the newest 400 tokens.
func testSettings() compact.Settings {
	s := compact.DefaultSettings()
	s.ContextWindow = 4000
	s.SummarizeTriggerPercent = 50
	s.FullTriggerPercent = 95
	s.SummarizeKeepRecent = 400
	return s
}

func newEngine(t *testing.T, st bs.Store, sum compact.Summarizer) (*Engine, *logs) {
	l := &logs{}
	e := &Engine{Store: st, StateDir: t.TempDir(), Settings: testSettings(), Summarizer: sum, Logger: l}
	t.Cleanup(func() { waitJobs(t, e) })
	return e, l
}

// waitJobs waits for the engine's background jobs.
func waitJobs(t *testing.T, e *Engine) {
	e.mu.Lock()
	var jobs []*summaryJob
	for _, s := range e.sessions {
		if s.job != nil {
			jobs = append(jobs, s.job)
		}
	}
	e.mu.Unlock()
	for _, j := range jobs {
		select {
		case <-j.done:
		case <-time.After(5 * time.Second):
			t.Error("a summary job did not finish")
		}
	}
}

// viewOf opens the session and returns its transcript and messages.
func viewOf(t *testing.T, e *Engine, ref bs.SessionRef) (bs.Transcript, []viewMsg) {
	t.Helper()
	tr, err := e.Store.Open(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := e.messages(context.Background(), tr, nil, &State{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, msgs
}

func sumTokens(msgs []viewMsg) int {
	n := 0
	for _, m := range msgs {
		n += m.Tokens
	}
	return n
}

// plan runs planSummaries over msgs as one Assemble would, then saves the
// state.
func plan(t *testing.T, e *Engine, ref bs.SessionRef, tr bs.Transcript, msgs []viewMsg, st *State) summaryPlan {
	t.Helper()
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	p, err := e.planSummaries(context.Background(), summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: e.Settings.ContextWindow,
		Tokens: sumTokens(msgs), State: st, Wait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.saveState(ref, st); err != nil {
		t.Fatal(err)
	}
	return p
}

var headerRE = regexp.MustCompile(`^\[BrainSurgeon summary (sum-[0-9a-f]{12}): level (\d+), (\d+) messages; recall_expand \{"id":"(sum-[0-9a-f]{12})"\} returns them\]$`)

func TestValidCuts(t *testing.T) {
	u := func(id string) viewMsg { return viewMsg{ID: id, Role: "user", Tokens: 10} }
	a := func(id string, calls ...string) viewMsg {
		return viewMsg{ID: id, Role: "assistant", Calls: calls, Tokens: 10}
	}
	r := func(id, call string, tokens int) viewMsg {
		return viewMsg{ID: id, Role: "toolResult", CallID: call, Tokens: tokens}
	}
	for _, tc := range []struct {
		name string
		msgs []viewMsg
		want []bool
		keep int
		cut  int
	}{
		{"call and result", []viewMsg{u("1"), a("2", "c1"), r("3", "c1", 500), a("4")}, []bool{true, true, false, true}, 5, 3},
		{"the keep target is a result: the cut moves to the next valid message",
			[]viewMsg{u("1"), a("2"), u("3"), a("4", "c1"), r("5", "c1", 500), a("6"), u("7")}, []bool{true, true, true, true, false, true, true}, 510, 5},
		{"parallel calls: nothing between the call and its last result",
			[]viewMsg{u("1"), a("2", "c1", "c2"), r("3", "c1", 10), u("4"), r("5", "c2", 10), a("6"), u("7")},
			[]bool{true, true, false, false, false, true, true}, 25, 5},
		{"no id, no cut", []viewMsg{u("1"), {Role: "user", Tokens: 10}, a("3")}, []bool{true, false, true}, 5, 2},
		{"everything fits in keep", []viewMsg{u("1"), a("2")}, []bool{true, true}, 100, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := validCuts(tc.msgs)
			if !slices.Equal(ok, tc.want) {
				t.Fatalf("validCuts = %v, want %v", ok, tc.want)
			}
			if got := keepCut(tc.msgs, ok, 0, tc.keep); got != tc.cut {
				t.Fatalf("keepCut = %d, want %d", got, tc.cut)
			}
			if c := lastCut(ok, 0); c > 0 && tc.msgs[c].Role == "toolResult" {
				t.Fatalf("lastCut %d is a tool result", c)
			}
		})
	}
}

// checkCut fails when the kept part starts at a tool result or a call
// before the cut has its result after it.
func checkCut(t *testing.T, msgs []viewMsg, cut int) {
	t.Helper()
	if cut <= 0 || cut >= len(msgs) {
		t.Fatalf("cut %d outside (0, %d)", cut, len(msgs))
	}
	if msgs[cut].Role == "toolResult" {
		t.Fatalf("the kept part starts at a tool result (%s)", msgs[cut].ID)
	}
	calls := map[string]bool{}
	for _, m := range msgs[:cut] {
		for _, c := range m.Calls {
			calls[c] = true
		}
	}
	for _, m := range msgs[cut:] {
		if calls[m.CallID] {
			t.Fatalf("the cut separates call %s from its result %s", m.CallID, m.ID)
		}
	}
}

func TestPlanSummarizes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sum      func(t *testing.T) compact.Summarizer
		degraded bool
		reason   string
		method   string
	}{
		{"model", func(t *testing.T) compact.Summarizer { return newModel(t, "ok").client() }, false, "", "openai:m"},
		{"model down: deterministic, degraded", func(t *testing.T) compact.Summarizer { return newModel(t, "down").client() }, true, "fell back to the deterministic summary", "deterministic"},
		{"plain summarizer failing", func(t *testing.T) compact.Summarizer { return failing{} }, true, "the summarizer failed", "deterministic"},
		{"no summarizer", func(t *testing.T) compact.Summarizer { return nil }, true, "no summarizer is configured", "deterministic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTranscript()
			for i := range 8 {
				b.turn(i, 1200)
			}
			st, ref := b.store(t)
			e, _ := newEngine(t, st, tc.sum(t))
			tr, msgs := viewOf(t, e, ref)
			state := &State{Version: 1}
			p := plan(t, e, ref, tr, msgs, state)
			if p.Summary == nil || len(state.Summaries) != 1 {
				t.Fatalf("plan %+v, %d summaries: want one summary", p, len(state.Summaries))
			}
			checkCut(t, msgs, p.FirstKept)
			rec := state.Summaries[0]
			if rec.Level != 1 || rec.Layer != layerSummarize || !slices.Contains(p.Layers, layerSummarize) || state.Compactions != 1 {
				t.Fatalf("record %+v, layers %v, compactions %d", rec, p.Layers, state.Compactions)
			}
			var ids []string
			for _, m := range msgs[:p.FirstKept] {
				ids = append(ids, m.ID)
			}
			if !slices.Equal(rec.Entries, ids) {
				t.Fatalf("entries %v, want %v", rec.Entries, ids)
			}
			if rec.Degraded != tc.degraded || !strings.Contains(rec.Reason, tc.reason) || rec.Method != tc.method {
				t.Fatalf("degraded %v reason %q method %q, want %v %q %q", rec.Degraded, rec.Reason, rec.Method, tc.degraded, tc.reason, tc.method)
			}
			first, _, _ := strings.Cut(p.Summary.Text, "\n")
			h := headerRE.FindStringSubmatch(first)
			if h == nil || h[1] != rec.ID || h[4] != rec.ID || h[2] != "1" || h[3] != fmt.Sprint(len(ids)) {
				t.Fatalf("header %q", first)
			}
			if p.Summary.ID != rec.ID || p.Summary.Timestamp != rec.CreatedAt.UnixMilli() || p.Summary.TokensBefore != rec.TokensBefore {
				t.Fatalf("summary %+v, record %+v", p.Summary, rec)
			}
			// The next turn serves the same summary, byte for byte.
			again := plan(t, e, ref, tr, msgs, state)
			if again.Summary == nil || again.Summary.Text != p.Summary.Text || again.FirstKept != p.FirstKept || len(again.Layers) != 0 {
				t.Fatalf("second plan %+v differs from the first", again)
			}
		})
	}
}

// A value the agent restored within the restore protection window stays
// in the kept part: the summarize cut moves back to the turn that holds it,
// and once the protection is over the cut is the keep cut again.
func TestRestoredKeptOutOfSummary(t *testing.T) {
	b := newTranscript()
	for i := range 8 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "ok").client())
	tr, msgs := viewOf(t, e, ref)
	free := plan(t, e, ref, tr, msgs, &State{Version: 1})
	if free.Summary == nil || free.FirstKept < 4 {
		t.Fatalf("plan %+v: want a summary that keeps a tail", free)
	}
	restored := -1
	for k := free.FirstKept - 1; k >= 0; k-- {
		if msgs[k].Role == "toolResult" && msgs[k].ID != "" {
			restored = k
			break
		}
	}
	if restored < 1 || msgs[restored].Timestamp <= msgs[0].Timestamp {
		t.Fatalf("no tool result with a later timestamp before the first kept message %d", free.FirstKept)
	}
	for _, tc := range []struct {
		name  string
		age   time.Duration
		since bool
		kept  bool
	}{
		{"within the protection", time.Minute, false, true},
		{"protection over", e.policy().KeepAfterRestore + time.Minute, false, false},
		{"messages since a restore", time.Minute, true, true},
		{"messages since a restore, protection over", e.policy().KeepAfterRestore + time.Minute, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e2, _ := newEngine(t, st, newModel(t, "ok").client())
			state := &State{Version: 1, Restored: map[string]time.Time{msgs[restored].ID: e2.now().Add(-tc.age)}}
			if tc.since {
				// an entry of an older summary, restored when the message at restored was written: what
				// came since (the restore's call and result) stays in the kept part
				e2.Now = func() time.Time { return time.UnixMilli(msgs[restored].Timestamp).Add(tc.age) }
				state.Restored = map[string]time.Time{"0ld5umm4": time.UnixMilli(msgs[restored].Timestamp)}
			}
			p := plan(t, e2, ref, tr, msgs, state)
			checkCut(t, msgs, p.FirstKept)
			switch {
			case tc.kept && (p.Summary != nil && p.FirstKept > restored):
				t.Fatalf("first kept %d: the restored entry at %d was summarized", p.FirstKept, restored)
			case !tc.kept && (p.Summary == nil || p.FirstKept != free.FirstKept):
				t.Fatalf("plan %+v: want the keep cut %d once the protection is over", p, free.FirstKept)
			}
		})
	}
}

// A summary job started before the agent restored one of the entries it
// covers is dropped when it finishes; the next plan keeps the entry.
func TestSummaryStartedBeforeRestoreDropped(t *testing.T) {
	b := newTranscript()
	for i := range 8 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, l := newEngine(t, st, newModel(t, "ok").client())
	tr, msgs := viewOf(t, e, ref)
	state := &State{Version: 1}
	in := summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: e.Settings.ContextWindow, Tokens: sumTokens(msgs), State: state}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	p := &planner{e: e, in: &in, ss: ss}
	started, err := p.start(context.Background(), nil, 0)
	if err != nil || !started {
		t.Fatalf("start: %v, %v", started, err)
	}
	job := ss.job
	<-job.done
	var restored string
	for _, id := range job.work.rec.Entries {
		restored = id
	}
	state.Restored = map[string]time.Time{restored: e.now()}
	var got summaryPlan
	p.harvest(&got)
	if len(state.Summaries) != 0 || len(got.Layers) != 0 {
		t.Fatalf("summaries %d, layers %v: the summary covering the restored entry %s was applied", len(state.Summaries), got.Layers, restored)
	}
	if !l.has("it covers an entry the agent restored since") {
		t.Fatalf("log: %q", l.lines)
	}
}

func TestPinnedCarriedVerbatim(t *testing.T) {
	b := newTranscript()
	b.turn(0, 1200)
	pinned := b.add("user", `"content":[{"type":"text","text":"remember: deploy key is K-\u00e9\ud83d\ude00"}]`, `"_extractable":false`)
	b.add("assistant", `"content":[{"type":"text","text":"noted"}]`, "")
	for i := 1; i < 8; i++ {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "ok").client())
	res, err := e.Compact(context.Background(), ref, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Summary == nil {
		t.Fatalf("result %+v", res)
	}
	if !slices.Contains(res.Summary.Pinned, pinned) {
		t.Fatalf("pinned %v, want %s", res.Summary.Pinned, pinned)
	}
	raw := lineOf(t, ref, pinned)
	if !strings.Contains(res.Summary.Text, "\n"+string(raw)+"\n") {
		t.Fatalf("the summary does not carry the pinned line verbatim:\n%s", res.Summary.Text)
	}
}

func TestCondenseAfterFanout(t *testing.T) {
	b := newTranscript()
	for i := range 40 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "ok").client())
	tr, msgs := viewOf(t, e, ref)
	state := &State{Version: 1}
	var condensed *SummaryRecord
	var last summaryPlan
	for k := 4; k <= len(msgs) && condensed == nil; k += 4 {
		last = plan(t, e, ref, tr, msgs[:k], state)
		if last.Summary != nil {
			checkCut(t, msgs[:k], last.FirstKept)
		}
		for i := range state.Summaries {
			if state.Summaries[i].Level == 2 {
				condensed = &state.Summaries[i]
			}
		}
	}
	if condensed == nil {
		t.Fatalf("no condensation after %d summaries", len(state.Summaries))
	}
	if condensed.Layer != layerCondense || len(condensed.Children) != 4 || len(condensed.Entries) != 0 {
		t.Fatalf("condensed %+v", condensed)
	}
	level1 := 0
	byID := index(state)
	for _, s := range state.Summaries {
		if s.Level == 1 {
			level1++
		}
	}
	for _, c := range condensed.Children {
		if byID[c] == nil || byID[c].Parent != condensed.ID || byID[c].Level != 1 {
			t.Fatalf("child %s: %+v", c, byID[c])
		}
	}
	if state.Compactions != level1 || level1 < 4 {
		t.Fatalf("compactions %d, want the %d summaries of messages (condensations do not count)", state.Compactions, level1)
	}
	if !slices.Contains(last.Layers, layerCondense) || last.Summary.Level != 2 || !strings.HasPrefix(last.Summary.Text, "[BrainSurgeon summary "+condensed.ID+": level 2,") {
		t.Fatalf("view after the condensation: layers %v, summary %+v", last.Layers, last.Summary)
	}

	// Expand drills down: the condensed summary returns its children's
	// messages, each line byte-identical to the stored one.
	got, err := e.Expand(context.Background(), ref, condensed.ID)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for _, c := range condensed.Children {
		part, err := e.Expand(context.Background(), ref, c)
		if err != nil {
			t.Fatal(err)
		}
		for k, id := range byID[c].Entries {
			if !bytes.Equal(part[k], lineOf(t, ref, id)) {
				t.Fatalf("expand %s: line of %s differs from the stored one", c, id)
			}
		}
		want = append(want, part...)
	}
	if len(got) != len(want) || len(got) != len(leaves(byID, condensed)) {
		t.Fatalf("expand gave %d lines, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("line %d differs", i)
		}
	}
	d, err := e.Describe(context.Background(), ref, condensed.ID)
	if err != nil || d.ID != condensed.ID || !slices.Equal(d.Children, condensed.Children) {
		t.Fatalf("describe: %+v, %v", d, err)
	}
}

func TestExpandByteIdentical(t *testing.T) {
	b := newTranscript()
	odd := b.add("user", `"content":[{"type":"text","text":"lone \ud800 surrogate, caf\u00e9,  spaces"}]`, "")
	b.add("assistant", `"content" : [ {"type":"text","text":"ok"} ]`, "")
	for i := range 6 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, nil)
	res, err := e.Compact(context.Background(), ref, CompactOptions{Force: true})
	if err != nil || !res.Compacted {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	lines, err := e.Expand(context.Background(), ref, res.Summary.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != len(res.Summary.Entries) || res.Summary.Entries[0] != odd {
		t.Fatalf("expand gave %d lines for entries %v", len(lines), res.Summary.Entries)
	}
	for i, id := range res.Summary.Entries {
		if !bytes.Equal(lines[i], lineOf(t, ref, id)) {
			t.Fatalf("line of %s differs:\n%s\n%s", id, lines[i], lineOf(t, ref, id))
		}
	}
	for _, tc := range []struct {
		id   string
		want error
	}{{"sum-xyz", bs.ErrInvalid}, {"../../etc", bs.ErrInvalid}, {"sum-000000000000", bs.ErrNotFound}} {
		if _, err := e.Expand(context.Background(), ref, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("expand %q: %v, want %v", tc.id, err, tc.want)
		}
		if _, err := e.Describe(context.Background(), ref, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("describe %q: %v, want %v", tc.id, err, tc.want)
		}
	}
}

func TestStaleSummaryDropped(t *testing.T) {
	b := newTranscript()
	for i := range 3 {
		b.turn(i, 100)
	}
	st, ref := b.store(t)
	e, l := newEngine(t, st, nil)
	tr, msgs := viewOf(t, e, ref)
	ids := func(ms []viewMsg) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	at := time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		recs    []SummaryRecord
		first   int
		summary string
	}{
		{"the host compacted: the entries are gone", []SummaryRecord{{ID: "sum-00000000000a", Level: 1, Entries: []string{"gone-1", "gone-2"}, Text: "old"}}, 0, ""},
		{"the entries moved: no longer first", []SummaryRecord{{ID: "sum-00000000000a", Level: 1, Entries: ids(msgs[4:8]), Text: "old"}}, 0, ""},
		{"a valid summary, then a stale one", []SummaryRecord{
			{ID: "sum-00000000000a", Level: 1, Entries: ids(msgs[:4]), Text: "kept", CreatedAt: at},
			{ID: "sum-00000000000b", Level: 1, Entries: []string{"gone-3"}, Text: "old", CreatedAt: at},
		}, 4, "sum-00000000000a"},
		{"a stale one, then a valid one", []SummaryRecord{
			{ID: "sum-00000000000b", Level: 1, Entries: []string{"gone-3"}, Text: "old", CreatedAt: at},
			{ID: "sum-00000000000a", Level: 1, Entries: ids(msgs[:4]), Text: "kept", CreatedAt: at},
		}, 4, "sum-00000000000a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := &State{Version: 1, Summaries: tc.recs}
			p := plan(t, e, ref, tr, msgs, state)
			if p.FirstKept != tc.first || (p.Summary == nil) != (tc.summary == "") || (p.Summary != nil && p.Summary.ID != tc.summary) {
				t.Fatalf("plan %+v, want first kept %d, summary %q", p, tc.first, tc.summary)
			}
			if p.Summary != nil && strings.Contains(p.Summary.Text, "old") {
				t.Fatalf("the stale summary is in the view: %q", p.Summary.Text)
			}
			if !l.has("summary dropped from the view") {
				t.Fatal("the dropped summary was not logged")
			}
			if len(state.Summaries) != len(tc.recs) {
				t.Fatalf("the plan made %d summaries below the thresholds", len(state.Summaries)-len(tc.recs))
			}
		})
	}
}

func TestTopsInMessageOrder(t *testing.T) {
	b := newTranscript()
	for i := range 3 {
		b.turn(i, 100)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, nil)
	tr, msgs := viewOf(t, e, ref)
	var first, second []string
	for _, m := range msgs[:4] {
		first = append(first, m.ID)
	}
	for _, m := range msgs[4:8] {
		second = append(second, m.ID)
	}
	at := time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC)
	// The condensation of the older summary was made after the summary of
	// newer messages: the view still shows the older part first.
	state := &State{Version: 1, Summaries: []SummaryRecord{
		{ID: "sum-00000000000a", Level: 1, Entries: first, Parent: "sum-00000000000c", Text: "A", CreatedAt: at},
		{ID: "sum-00000000000b", Level: 1, Entries: second, Text: "B", CreatedAt: at.Add(time.Minute)},
		{ID: "sum-00000000000c", Level: 2, Children: []string{"sum-00000000000a"}, Text: "C", CreatedAt: at.Add(2 * time.Minute)},
	}}
	p := plan(t, e, ref, tr, msgs, state)
	if p.Summary == nil || p.FirstKept != 8 || p.Summary.ID != "sum-00000000000c" || p.Summary.Level != 2 {
		t.Fatalf("plan %+v", p)
	}
	want := header("sum-00000000000c", 2, 4) + "\nC\n\n" + header("sum-00000000000b", 1, 4) + "\nB"
	if p.Summary.Text != want {
		t.Fatalf("summary text\n%s\nwant\n%s", p.Summary.Text, want)
	}
}

func TestUrgentFallsBackAtDeadline(t *testing.T) {
	b := newTranscript()
	for i := range 12 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	m := newModel(t, "slow")
	e, _ := newEngine(t, st, m.client())
	tr, msgs := viewOf(t, e, ref)
	if sumTokens(msgs) <= 3800 {
		t.Fatalf("the session holds %d tokens, not above the full threshold", sumTokens(msgs))
	}
	state := &State{Version: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	ss := e.session(ref)
	ss.mu.Lock()
	start := time.Now()
	p, err := e.planSummaries(ctx, summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: 4000, Tokens: sumTokens(msgs), State: state, Wait: 50 * time.Millisecond})
	took := time.Since(start)
	ss.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if took > 400*time.Millisecond {
		t.Fatalf("the plan took %s, past the deadline", took)
	}
	if p.Summary == nil || len(state.Summaries) != 1 || !state.Summaries[0].Degraded || !strings.Contains(state.Summaries[0].Reason, "deadline") {
		t.Fatalf("plan %+v, summaries %+v: want one degraded summary", p, state.Summaries)
	}
	if l := state.Summaries[0].Layer; !slices.Contains(p.Layers, l) {
		t.Fatalf("layers %v, want %q", p.Layers, l)
	}
	checkCut(t, msgs, p.FirstKept)
	if m.calls.Load() == 0 {
		t.Fatal("the model was never asked")
	}
}

func TestCompact(t *testing.T) {
	tiny := func(n int) func(*transcript) {
		return func(b *transcript) {
			if n > 0 {
				b.add("user", `"content":[{"type":"text","text":"hello"}]`, "")
			}
			if n > 1 {
				b.add("assistant", `"content":[{"type":"text","text":"hi"}]`, "")
			}
			if n > 2 {
				b.add("user", `"content":[{"type":"text","text":"bye"}]`, "")
			}
		}
	}
	turns := func(n int) func(*transcript) {
		return func(b *transcript) {
			for i := range n {
				b.turn(i, 1200)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		build     func(*transcript)
		o         CompactOptions
		compacted bool
		layer     string
		reason    string
	}{
		{"empty session", tiny(0), CompactOptions{Force: true}, false, "", "no valid cut point"},
		{"one message", tiny(1), CompactOptions{Force: true}, false, "", "no valid cut point"},
		{"a tiny exchange", tiny(3), CompactOptions{Force: true}, false, "", "would not make the context smaller"},
		{"below the threshold, not forced", turns(2), CompactOptions{}, false, "", "below the summarize threshold"},
		{"forced", turns(4), CompactOptions{Force: true}, true, layerManual, "summarized"},
		{"above the summarize threshold", turns(12), CompactOptions{}, true, layerManual, "summarized"},
		{"still above the full threshold after the keep cut", turns(12), CompactOptions{CurrentTokens: 20000}, true, layerFull, "summarized"},
		{"the host's count decides", turns(3), CompactOptions{CurrentTokens: 3000}, true, layerManual, "summarized"},
		{"budget target: the view's own size decides, not the host's count of its history", turns(3),
			CompactOptions{Force: true, CurrentTokens: 30000, Target: TargetBudget}, false, "", "already under target"},
		{"budget target above the full threshold", turns(12), CompactOptions{Force: true, Target: TargetBudget}, true, layerManual, "summarized"},
		{"threshold target (a /compact) summarizes below the thresholds", turns(4), CompactOptions{Force: true, Target: TargetThreshold}, true, layerManual, "summarized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTranscript()
			tc.build(b)
			st, ref := b.store(t)
			before, _ := os.ReadFile(ref.Path)
			e, _ := newEngine(t, st, newModel(t, "ok").client())
			res, err := e.Compact(context.Background(), ref, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Compacted != tc.compacted || res.Layer != tc.layer || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("result %+v, want compacted %v layer %q reason containing %q", res, tc.compacted, tc.layer, tc.reason)
			}
			after, _ := os.ReadFile(ref.Path)
			if !bytes.Equal(before, after) {
				t.Fatal("compact changed the host's transcript")
			}
			state, err := e.loadState(ref)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.compacted {
				if len(state.Summaries) != 0 || state.Compactions != 0 || res.Summary != nil || res.TokensAfter != res.TokensBefore {
					t.Fatalf("nothing compacted, yet state %+v, result %+v", state, res)
				}
				return
			}
			if res.TokensAfter >= res.TokensBefore || state.Compactions != 1 || len(state.Summaries) != 1 || res.Summary.Layer != res.Layer {
				t.Fatalf("result %+v, state %+v", res, state)
			}
			_, msgs := viewOf(t, e, ref)
			checkCut(t, msgs, len(res.Summary.Entries))
			if _, err := e.Describe(context.Background(), ref, res.Summary.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompactCondensesWhenNoMessageCanBeSummarized(t *testing.T) {
	b := newTranscript()
	for i := range 3 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "ok").client())
	_, msgs := viewOf(t, e, ref)
	// Two summaries cover everything before the last turn.
	at := time.Date(2026, 11, 1, 1, 0, 0, 0, time.UTC)
	var first, second []string
	for _, m := range msgs[:4] {
		first = append(first, m.ID)
	}
	for _, m := range msgs[4:11] {
		second = append(second, m.ID)
	}
	long := strings.Repeat("a long summary line\n", 200)
	state := &State{Version: 1, Compactions: 2, Summaries: []SummaryRecord{
		{ID: "sum-00000000000a", Level: 1, Layer: layerSummarize, Entries: first, Text: long, Tokens: textTokens(long), CreatedAt: at},
		{ID: "sum-00000000000b", Level: 1, Layer: layerSummarize, Entries: second, Text: long, Tokens: textTokens(long), CreatedAt: at},
	}}
	if err := e.saveState(ref, state); err != nil {
		t.Fatal(err)
	}
	res, err := e.Compact(context.Background(), ref, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || res.Layer != layerCondense || res.Summary.Level != 2 || !slices.Equal(res.Summary.Children, []string{"sum-00000000000a", "sum-00000000000b"}) {
		t.Fatalf("result %+v", res)
	}
	state, err = e.loadState(ref)
	if err != nil {
		t.Fatal(err)
	}
	if state.Compactions != 2 {
		t.Fatalf("compactions %d: a condensation counted", state.Compactions)
	}
	lines, err := e.Expand(context.Background(), ref, res.Summary.ID)
	if err != nil || len(lines) != 11 {
		t.Fatalf("expand: %d lines, %v", len(lines), err)
	}
}

func TestCompactSlowModelStillShrinks(t *testing.T) {
	b := newTranscript()
	for i := range 6 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "slow").client())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := e.Compact(ctx, ref, CompactOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted || !res.Summary.Degraded || res.Summary.Method != "deterministic" || !strings.Contains(res.Reason, "degraded") {
		t.Fatalf("result %+v, summary %+v", res, res.Summary)
	}
}

func TestSummaryPickedUpNextTurn(t *testing.T) {
	b := newTranscript()
	for i := range 8 {
		b.turn(i, 1200)
	}
	st, ref := b.store(t)
	e, _ := newEngine(t, st, newModel(t, "late").client())
	e.SummaryWait = 20 * time.Millisecond
	tr, msgs := viewOf(t, e, ref)
	state := &State{Version: 1}
	ss := e.session(ref)
	run := func() summaryPlan {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		p, err := e.planSummaries(context.Background(), summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: 4000, Tokens: sumTokens(msgs), State: state})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := run(); p.Summary != nil || len(state.Summaries) != 0 || ss.job == nil {
		t.Fatalf("first turn: plan %+v, %d summaries, job %v: want the view without a summary while the model writes", p, len(state.Summaries), ss.job)
	}
	<-ss.job.done
	p := run()
	if p.Summary == nil || len(state.Summaries) != 1 || state.Summaries[0].Degraded || !slices.Contains(p.Layers, layerSummarize) {
		t.Fatalf("second turn: plan %+v, summaries %+v", p, state.Summaries)
	}
}

func TestIsSummaryID(t *testing.T) {
	for s, want := range map[string]bool{
		"sum-0123456789ab": true, "sum-0123456789AB": false, "sum-0123456789a": false, "sum-0123456789abc": false,
		"sum-0123456789ag": false, "tc-0123456789abcd": false, "": false, "sum-../../../etc": false,
	} {
		if got := IsSummaryID(s); got != want {
			t.Errorf("IsSummaryID(%q) = %v, want %v", s, got, want)
		}
	}
	st := &State{}
	for range 20 {
		id := newSummaryID(st)
		if !IsSummaryID(id) {
			t.Fatalf("newSummaryID made %q", id)
		}
		st.Summaries = append(st.Summaries, SummaryRecord{ID: id})
	}
}

// TestMessageJobLines checks that a summary job of an engine without a
// summarizer reads its lines again as it writes (no input held), that it
// writes what the deterministic summary of the read lines is, with the
// same record and pinned section, and that it fails when the file changed
// under it.
func TestMessageJobLines(t *testing.T) {
	b := newTranscript()
	for i := range 6 {
		b.turn(i, 300)
	}
	b.add("user", `"content":[{"type":"text","text":"remember: deploy key is K-\u00e9"}]`, `"_extractable":false`)
	for i := 6; i < 9; i++ {
		b.turn(i, 300)
	}
	st, ref := b.store(t)
	ctx := context.Background()
	tr, msgs := viewOf(t, &Engine{Store: st}, ref)
	to := len(msgs) - 4
	in := &summaryInput{Ref: ref, Tr: tr, Msgs: msgs}
	streamed, err := (&Engine{Store: st}).messageJob(ctx, in, layerSummarize, 0, to)
	if err != nil {
		t.Fatal(err)
	}
	held, err := (&Engine{Store: st, Summarizer: &summarize.Deterministic{}}).messageJob(ctx, in, layerSummarize, 0, to)
	if err != nil {
		t.Fatal(err)
	}
	if streamed.input != nil || streamed.lines == nil || held.lines != nil || len(held.input) != to {
		t.Fatalf("jobs: streamed has input %d and lines %t, held input %d and lines %t; want lines only, then %d lines of input only",
			len(streamed.input), streamed.lines != nil, len(held.input), held.lines != nil, to)
	}
	if !strings.Contains(streamed.pinned, "deploy key") || streamed.pinned != held.pinned {
		t.Errorf("pinned section: streamed %q, held %q; want the same, with the pinned entry", streamed.pinned, held.pinned)
	}
	if fmt.Sprint(streamed.rec) != fmt.Sprint(held.rec) {
		t.Errorf("records: streamed %+v, held %+v; want the same", streamed.rec, held.rec)
	}
	want, err := (&summarize.Deterministic{}).Summarize(ctx, held.input, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the sequence reads the lines again each time
		got, err := (&Engine{}).writeLines(streamed.lines, "")
		if err != nil || got.Text != want.Text || !got.Degraded {
			t.Fatalf("writeLines = %+v, %v; want the deterministic summary %q, degraded", got, err, want.Text)
		}
	}
	// Another session in the file's place: the lines are not the entries
	// the view knew.
	other := append([]string(nil), b.lines...)
	for i := 1; i < len(other); i++ {
		other[i] = strings.ReplaceAll(other[i], `"id":"a`, `"id":"b`)
	}
	if err := os.WriteFile(ref.Path, []byte(strings.Join(other, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Engine{}).writeLines(streamed.lines, ""); !errors.Is(err, bs.ErrChanged) {
		t.Errorf("writeLines of a changed file: err = %v, want one wrapping ErrChanged", err)
	}
}

// TestReadAhead checks that readAhead yields what it reads in order,
// across batches, with the error last, and that a consumer that stops
// early leaves no reader running.
func TestReadAhead(t *testing.T) {
	boom := errors.New("boom")
	big := bytes.Repeat([]byte("x"), readAheadBytes/3)
	for _, tc := range []struct {
		name    string
		n       int
		err     bool
		stopAt  int // the consumer stops after this many (-1: never)
		wantN   int
		wantErr bool
	}{
		{"none", 0, false, -1, 0, false},
		{"several batches", 20, false, -1, 20, false},
		{"an error after several batches", 20, true, -1, 20, true},
		{"the consumer stops early", 20, false, 4, 4, false},
		{"the consumer stops at once", 20, false, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var done atomic.Bool
			read := func(yield func(*bs.Entry, error) bool) {
				defer done.Store(true)
				for i := range tc.n {
					if !yield(&bs.Entry{Line: i + 1, Raw: big}, nil) {
						return
					}
				}
				if tc.err {
					yield(nil, boom)
				}
			}
			n, gotErr := 0, false
			for en, err := range readAhead(read) {
				if err != nil {
					gotErr = errors.Is(err, boom)
					break
				}
				if n == tc.stopAt {
					break
				}
				if en.Line != n+1 {
					t.Fatalf("entry %d is line %d, want %d", n, en.Line, n+1)
				}
				n++
			}
			if n != tc.wantN || gotErr != tc.wantErr {
				t.Errorf("read %d, error %t; want %d, %t", n, gotErr, tc.wantN, tc.wantErr)
			}
			if !done.Load() {
				t.Error("the reader still runs after readAhead returned")
			}
		})
	}
}
