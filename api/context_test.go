package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testtree"
	"github.com/brainsurgeon/brainsurgeon/summarize"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// smallWindow is a compaction setup whose window the synthetic sessions
// fill: chars/4 tokens, the deterministic summarizer.
func smallWindow(f *fixture) *api.Compaction {
	// The synthetic sessions record a Claude model, whose window the model
	// table knows: the host's config caps it (agents.defaults.contextTokens),
	// as a host configured with a small window does.
	if err := os.WriteFile(filepath.Join(f.root, "openclaw.json"), []byte(`{"agents":{"defaults":{"contextTokens":8000}}}`), 0o600); err != nil {
		panic(err)
	}
	s := compact.DefaultSettings()
	s.ContextWindow, s.SummarizeKeepRecent, s.PruneProtectRecent, s.PruneMinToolTokens = 8000, 1500, 1500, 1000
	return &api.Compaction{Settings: s, Tokens: compact.TokenOptions{Tokenizer: tokens.CharsPer4{}},
		Summarizer: func() compact.Summarizer { return &summarize.Deterministic{} }}
}

type grepAnswer struct {
	Pattern   string `json:"pattern"`
	Regex     bool   `json:"regex"`
	Max       int    `json:"max"`
	Count     int    `json:"count"`
	Truncated bool   `json:"truncated"`
	Error     string `json:"error"`
	Hits      []struct {
		EntryID string `json:"entry_id"`
		Where   string `json:"where"`
		Snippet string `json:"snippet"`
	} `json:"hits"`
}

// TestContextEndpoints drives status, inspect, history, compact (dry run,
// then for real, twice) and grep on a synthetic session, and every bad
// parameter of them.
func TestContextEndpoints(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Compaction: smallWindow(f)})
	c := &client{tb: t, srv: srv}
	id := f.synthIDs[1]
	base := "/api/sessions/alpha/" + id + "/context"
	path := filepath.Join(f.agents, "alpha", "sessions", id+".jsonl")

	var st compact.StatusReport
	c.json("GET", base+"/status", "", 200, &st)
	if st.Session != "alpha/"+id || st.Tokens <= 0 || st.Window != 8000 || st.WindowSource != compact.WindowHostConfig ||
		!strings.Contains(st.WindowFrom, "agents.defaults.contextTokens") || st.Percent <= 0 || st.Tokenizer != "chars/4" ||
		st.Compactions != 0 || st.Risk != compact.RiskLow || !st.CanCompact || st.Warnings == nil {
		t.Fatalf("status = %+v", st)
	}
	var in compact.InspectReport
	c.json("GET", base+"/inspect", "", 200, &in)
	if in.Conversation.Messages == 0 || in.Conversation.Tokens == 0 || in.Tokens != st.Tokens || in.Pinned == nil {
		t.Fatalf("inspect = %+v", in)
	}
	var h compact.HistoryReport
	c.json("GET", base+"/history?depth=5", "", 200, &h)
	if h.Compactions != 0 || len(h.Events) != 0 || h.Events == nil {
		t.Fatalf("history before = %+v", h)
	}

	// Dry run: before and after, nothing written.
	orig, _ := os.ReadFile(path)
	var dry compact.Result
	c.json("POST", base+"/compact", `{"layer":"summarize","focus":"the tests","dry_run":true}`, 200, &dry)
	if !dry.DryRun || dry.Layer != compact.LayerSummarize || dry.TokensAfter >= dry.TokensBefore || dry.Summary == "" ||
		dry.EntryID != "" || !dry.Degraded {
		t.Fatalf("dry run = %+v", dry)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("the dry run changed the transcript")
	}

	// For real, twice: two compaction entries, newest first in history.
	var res compact.Result
	c.json("POST", base+"/compact", `{"layer":"summarize","focus":"the tests"}`, 200, &res)
	if res.DryRun || res.EntryID == "" || res.TokensAfter >= res.TokensBefore || res.FirstKeptEntryID == "" {
		t.Fatalf("compact = %+v", res)
	}
	now, _ := os.ReadFile(path)
	if !bytes.HasPrefix(now, orig) || !bytes.Contains(now[len(orig):], []byte(`"type":"compaction"`)) {
		t.Fatal("the compaction was not appended after the original bytes")
	}
	var res2 compact.Result
	c.json("POST", base+"/compact", `{"layer":"full"}`, 200, &res2)
	if res2.EntryID == "" || res2.Layer != compact.LayerFull || res2.Warning == "" {
		t.Fatalf("second compact = %+v", res2)
	}
	c.json("GET", base+"/history?depth=1", "", 200, &h)
	if h.Compactions != 2 || len(h.Events) != 1 || h.Events[0].ID != res2.EntryID || h.Events[0].Layer != compact.LayerFull {
		t.Fatalf("history depth 1 = %+v", h)
	}
	c.json("GET", base+"/history", "", 200, &h)
	if len(h.Events) != 2 || h.Events[1].ID != res.EntryID || h.Events[1].Trigger != compact.TriggerManual ||
		h.Events[1].Focus != "the tests" || !h.Events[1].Degraded || h.Events[1].TokensAfter != res.TokensAfter {
		t.Fatalf("history = %+v", h)
	}
	c.json("GET", base+"/status", "", 200, &st)
	if st.Compactions != 2 || st.LastCompactionAt == nil {
		t.Fatalf("status after = %+v", st)
	}
	audit, err := os.ReadFile(filepath.Join(f.set.StateDir, "audit.jsonl"))
	if err != nil || bytes.Count(audit, []byte(`"action":"compact"`)) != 2 || !bytes.Contains(audit, []byte(res.EntryID)) {
		t.Errorf("audit log: %v\n%s", err, audit)
	}

	// Grep: plain, regex, bounded.
	var g grepAnswer
	c.json("GET", base+"/grep?q=tool&max=3", "", 200, &g)
	if g.Count != 3 || len(g.Hits) != 3 || !g.Truncated || g.Max != 3 || g.Hits[0].EntryID == "" || g.Hits[0].Where == "" {
		t.Fatalf("grep = %+v", g)
	}
	wheres := map[string]bool{}
	c.json("GET", base+"/grep?q=to%2Bl&regex=1&max=1000", "", 200, &g)
	for _, hit := range g.Hits {
		wheres[hit.Where] = true
	}
	if !g.Regex || g.Count == 0 || !wheres["compacted"] || !wheres["extracted"] {
		t.Errorf("regex grep: %d hits in %v, want compacted and extracted ones", g.Count, wheres)
	}
	all := g.Count
	c.json("GET", base+"/grep?q=to%2Bl&regex=1&max="+fmt.Sprint(all), "", 200, &g)
	if g.Count != all || g.Truncated {
		t.Errorf("grep with max = the number of hits (%d): count %d, truncated %v; want all, not truncated", all, g.Count, g.Truncated)
	}
	c.json("GET", base+"/grep?q=to%2Bl&regex=1&max="+fmt.Sprint(all-1), "", 200, &g)
	if g.Count != all-1 || !g.Truncated {
		t.Errorf("grep with max = %d: count %d, truncated %v", all-1, g.Count, g.Truncated)
	}
	c.json("GET", base+"/grep?q=no-such-text-anywhere", "", 200, &g)
	if g.Count != 0 || g.Hits == nil || g.Truncated {
		t.Errorf("grep without hits = %+v", g)
	}

	for _, tc := range []struct {
		method, target, body string
		code                 int
		want                 string
	}{
		{"GET", base + "/history?depth=-1", "", 400, "depth"},
		{"GET", base + "/history?depth=abc", "", 400, "depth"},
		{"GET", base + "/history?depth=1001", "", 400, "depth"},
		{"POST", base + "/compact", `{"layer":"everything"}`, 400, "layer"},
		{"POST", base + "/compact", `{"focus":1}`, 400, "request body"},
		{"POST", base + "/compact", `{"dryrun":true}`, 400, "dryrun"},
		{"POST", base + "/compact", `{"focus":"` + strings.Repeat("x", 5000) + `"}`, 400, "focus"},
		{"GET", base + "/grep", "", 400, "q"},
		{"GET", base + "/grep?q=(&regex=1", "", 400, "regular expression"},
		{"GET", base + "/grep?q=a&regex=maybe", "", 400, "regex"},
		{"GET", base + "/grep?q=a&max=5000", "", 400, "max"},
		{"GET", "/api/sessions/alpha/no-such-session/context/status", "", 404, "has no session id"},
		{"GET", "/api/sessions/nobody/" + id + "/context/inspect", "", 404, "no sessions"},
		{"POST", "/api/sessions/alpha/no-such-session/context/compact", "", 404, "has no session id"},
		{"GET", "/api/sessions/alpha/no-such-session/context/grep?q=a", "", 404, "has no session id"},
		{"GET", "/api/sessions/alpha/..%2Fx/context/history", "", 400, "session_id"},
		{"PUT", base + "/compact", "", 405, "allowed: POST"},
		{"POST", base + "/status", "", 405, "allowed: GET"},
	} {
		code, b, _ := c.do(tc.method, tc.target, tc.body)
		if code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s %.40s: %d %s, want %d naming %q", tc.method, tc.target, tc.body, code, b, tc.code, tc.want)
		}
	}
	// "(" as plain text is fine.
	c.json("GET", base+"/grep?q="+"%28", "", 200, &g)
}

// TestContextCompactRefused: a busy session is a 409 with the reason and
// stays as it was; the SQLite store is a 422 with the reason (BrainSurgeon
// never inserts rows there), while its status, inspect and history work.
func TestContextCompactRefused(t *testing.T) {
	f := newFixture(t, true)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Compaction: smallWindow(f)})
	c := &client{tb: t, srv: srv}
	id := f.synthIDs[0]
	path := filepath.Join(f.agents, "alpha", "sessions", id+".jsonl")
	sj := filepath.Join(filepath.Dir(path), "sessions.json")
	done, err := os.ReadFile(sj)
	if err != nil {
		t.Fatal(err)
	}
	running := fmt.Appendf(nil, `{"agent:alpha:%s":{"sessionId":%q,"updatedAt":1767225600000,"status":"running"}}`, id[len(id)-4:], id)
	if err := os.WriteFile(sj, running, 0o600); err != nil {
		t.Fatal(err)
	}
	before := testtree.Snapshot(t, filepath.Dir(path))
	code, b, _ := c.do("POST", "/api/sessions/alpha/"+id+"/context/compact", `{"layer":"summarize"}`)
	if code != http.StatusConflict || !strings.Contains(string(b), "in use") {
		t.Errorf("compact of a busy session: %d %s, want 409 with the reason", code, b)
	}
	testtree.Unchanged(t, filepath.Dir(path), before)
	// A dry run of a busy session still previews.
	var dry compact.Result
	c.json("POST", "/api/sessions/alpha/"+id+"/context/compact", `{"layer":"summarize","dry_run":true}`, 200, &dry)
	if !dry.DryRun || dry.Summary == "" {
		t.Errorf("dry run of a busy session = %+v", dry)
	}
	if err := os.WriteFile(sj, done, 0o600); err != nil {
		t.Fatal(err)
	}

	var list sessionsAnswer
	c.json("GET", "/api/agents/main/sessions", "", 200, &list)
	var sq string
	for _, in := range list.Sessions {
		if in.Backend == bs.BackendSQLite && in.Messages > 4 {
			sq = in.SessionID
			break
		}
	}
	if sq == "" {
		t.Fatalf("no SQLite session with messages among %+v", list.Sessions)
	}
	base := "/api/sessions/main/" + sq + "/context"
	var st compact.StatusReport
	c.json("GET", base+"/status", "", 200, &st)
	if st.Backend != bs.BackendSQLite || st.CanCompact || st.Refusal == "" {
		t.Errorf("SQLite status = %+v, want can_compact false with the refusal", st)
	}
	c.json("GET", base+"/inspect", "", 200, nil)
	c.json("GET", base+"/history", "", 200, nil)
	db := filepath.Join(f.agents, "main", "agent")
	before = testtree.Snapshot(t, db)
	code, b, _ = c.do("POST", base+"/compact", `{"layer":"summarize"}`)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "refused") {
		t.Errorf("compact on SQLite: %d %s, want 422 with the reason", code, b)
	}
	testtree.Unchanged(t, db, before)
}

// TestContextDefaultsFromConfig: without Options.Compaction the runtime
// config's compaction object is used (the calibrated tokenizer by
// default, the thresholds as configured; the window is the one of the
// model the transcript records, which the model table knows).
func TestContextDefaultsFromConfig(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set)})
	c := &client{tb: t, srv: srv}
	t.Setenv(summarize.EnvModel, "")
	c.json("POST", "/api/config", `{"compaction":{"context_window":50000,"auto_enabled":true}}`, 200, nil)
	var st compact.StatusReport
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/status", "", 200, &st)
	if st.Window != 200000 || st.WindowSource != compact.WindowModelTable || st.Model != "anthropic/claude-sonnet-4-6" ||
		!st.AutoEnabled || st.Tokenizer != "calibrated" || st.Tokens == 0 {
		t.Errorf("status with the config's compaction = %+v", st)
	}
	var res compact.Result
	c.json("POST", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/compact", `{"layer":"full","dry_run":true}`, 200, &res)
	if !res.Degraded || res.Summary == "" {
		t.Errorf("dry run with no model = %+v, want the deterministic summary", res)
	}
	var raw map[string]any
	_, b, _ := c.do("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/inspect", "")
	if err := json.Unmarshal(b, &raw); err != nil || raw["system_prompt"] == nil || raw["conversation"].(map[string]any)["tool_outputs"] == nil {
		t.Errorf("inspect JSON: %v %s", err, b)
	}
}

// TestContextReadOnly: in read-only mode the context reads work and every
// compaction, a dry run included, is refused with 403.
func TestContextReadOnly(t *testing.T) {
	f := newFixture(t, false)
	cp := smallWindow(f)
	d := newDaemon(t, f.set) // writes its config before the snapshot
	before := testtree.Snapshot(t, f.root)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: d, Compaction: cp, ReadOnly: true})
	c := &client{tb: t, srv: srv}
	base := "/api/sessions/alpha/" + f.synthIDs[0] + "/context"
	for _, p := range []string{"/status", "/inspect", "/history?depth=3", "/grep?q=tool&max=2"} {
		c.json("GET", base+p, "", 200, nil)
	}
	for _, body := range []string{`{"dry_run":true}`, `{"layer":"summarize"}`, ``} {
		code, b, _ := c.do("POST", base+"/compact", body)
		if code != http.StatusForbidden || !strings.Contains(string(b), "read-only") {
			t.Errorf("compact %s in read-only mode: %d %s, want 403", body, code, b)
		}
	}
	testtree.Unchanged(t, f.root, before)
}

// TestContextWindowFromHostConfig: a host whose config gives the session's
// model a 1,000,000-token window is reported with that window and says
// so; the host's config is only read.
func TestContextWindowFromHostConfig(t *testing.T) {
	f := newFixture(t, false)
	cfg := filepath.Join(f.root, "openclaw.json")
	body := "{\n  // the live host's config\n  models: { providers: { anthropic: { models: [ { id: 'claude-sonnet-4-6', contextWindow: 1000000 }, ], }, }, },\n}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set)})
	c := &client{tb: t, srv: srv}
	var st compact.StatusReport
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/status", "", 200, &st)
	if st.Window != 1_000_000 || st.WindowSource != compact.WindowHostConfig || st.Model != "anthropic/claude-sonnet-4-6" ||
		!strings.Contains(st.WindowFrom, "models.providers.anthropic.models[claude-sonnet-4-6].contextWindow in "+cfg) {
		t.Errorf("status = %+v, want the window 1,000,000 from the host config", st)
	}
	var raw map[string]any
	_, b, _ := c.do("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/status", "")
	if err := json.Unmarshal(b, &raw); err != nil || raw["window_source"] != "host_config" || raw["window_from"] == nil || raw["model"] == nil {
		t.Errorf("status JSON: %v %s", err, b)
	}
	after, err := os.Stat(cfg)
	if err != nil || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() || after.Mode() != before.Mode() {
		t.Errorf("the host's config changed: %v %v", before, after)
	}
}
