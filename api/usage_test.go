package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/prune"
)

var placeholderRE = regexp.MustCompile(`\[\[extracted-([^\]]+)\]\]`)

// recordedTurns counts the assistant messages of a linear JSONL transcript
// whose recorded usage has a context (input + cacheRead + cacheWrite), and
// returns the context of each.
func recordedTurns(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type    string `json:"type"`
			Message struct {
				Role  string `json:"role"`
				Usage struct {
					Input, CacheRead, CacheWrite int64
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Type != "message" || e.Message.Role != "assistant" {
			continue
		}
		if u := e.Message.Usage; u.Input+u.CacheRead+u.CacheWrite > 0 {
			out = append(out, u.Input+u.CacheRead+u.CacheWrite)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUsageSeries checks GET …/usage on a session that was pruned, had an
// entry restored and was compacted: one point per recorded turn with the
// recorded context, an extraction marker whose values and bytes are the
// pass's, a restore marker for the restored entry, and a compaction marker
// with its tokens before and after.
func TestUsageSeries(t *testing.T) {
	root := t.TempDir()
	agents := filepath.Join(root, "agents")
	dir := filepath.Join(agents, "alpha", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	id := "5e1f0c2a-7b3d-4c5e-8f90-a1b2c3d4e5f6"
	writeSynth(t, dir, id, syntheticThinking())
	writeSessionsJSON(t, dir, "alpha", []string{id})
	path := filepath.Join(dir, id+".jsonl")
	set, err := backend.Open(context.Background(), agents, backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := prune.New(set.Store, set.Side, set.StateDir, pruneConfig(), nil).Run(context.Background(), nil)
	if err != nil || len(rep.Sessions) != 1 || rep.Sessions[0].Result == nil || rep.Sessions[0].Result.Values == 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	pass := rep.Sessions[0].Result
	srv := serve(t, api.Options{Installation: set.Installation, Backend: set, Daemon: newDaemon(t, set), Compaction: smallWindow(&fixture{root: root, agents: agents})})
	c := &client{tb: t, srv: srv}
	base := "/api/sessions/alpha/" + id

	// Restore one extracted entry.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := placeholderRE.FindSubmatch(data)
	if m == nil {
		t.Fatal("no placeholder after the pass")
	}
	restored := string(m[1])
	c.json("POST", base+"/entries/"+restored+"/restore", "", 200, nil)
	var comp compact.Result
	c.json("POST", base+"/context/compact", `{"layer":"summarize"}`, 200, &comp)
	if comp.EntryID == "" {
		t.Fatalf("compaction: %+v", comp)
	}

	var got api.UsageSeries
	c.json("GET", base+"/usage", "", 200, &got)
	want := recordedTurns(t, path)
	if len(got.Points) != len(want) || len(want) == 0 {
		t.Fatalf("%d points, want one per recorded turn: %d", len(got.Points), len(want))
	}
	for i, p := range got.Points {
		if p.Turn != i+1 || p.Tokens != want[i] || p.EntryID == "" || p.Timestamp.IsZero() {
			t.Errorf("point %d = %+v, want turn %d with %d tokens", i, p, i+1, want[i])
		}
	}
	var values int
	var saved int64
	var sawRestore, sawCompaction bool
	for _, mk := range got.Markers {
		if mk.AfterTurn < 0 || mk.AfterTurn > len(got.Points) {
			t.Errorf("marker %+v: after_turn outside 0..%d", mk, len(got.Points))
		}
		switch mk.Kind {
		case api.MarkerExtraction:
			values += mk.Values
			saved += mk.SavedBytes
		case api.MarkerRestore:
			sawRestore = mk.EntryID == restored && mk.SavedBytes < 0 && mk.Values < 0
		case api.MarkerCompaction:
			sawCompaction = mk.EntryID == comp.EntryID && mk.TokensBefore > 0 && mk.TokensAfter > 0 &&
				mk.SavedTokens == mk.TokensBefore-mk.TokensAfter && mk.AfterTurn == len(got.Points)
		default:
			t.Errorf("marker of unknown kind: %+v", mk)
		}
	}
	if values != pass.Values || saved != pass.BytesSaved {
		t.Errorf("extraction markers: %d values, %d bytes saved; the pass extracted %d values, saved %d bytes", values, saved, pass.Values, pass.BytesSaved)
	}
	if !sawRestore {
		t.Errorf("no restore marker of %s with its size: %+v", restored, got.Markers)
	}
	if !sawCompaction {
		t.Errorf("no compaction marker of %s with its tokens: %+v", comp.EntryID, got.Markers)
	}
	// snake_case on the wire.
	_, body, _ := c.do("GET", base+"/usage", "")
	for _, name := range []string{`"points"`, `"markers"`, `"entry_id"`, `"after_turn"`, `"saved_bytes"`, `"tokens_before"`} {
		if !bytes.Contains(body, []byte(name)) {
			t.Errorf("the answer has no %s member", name)
		}
	}
}

// TestUsageEveryBackend asks GET …/usage and GET /api/disk on every
// session of the fixture, the corpus's JSONL transcript and SQLite store
// included: every series has one point per recorded turn in order, and
// the disk counts the SQLite store as transcripts.
func TestUsageEveryBackend(t *testing.T) {
	f := newFixture(t, true)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	var list sessionsAnswer
	c.json("GET", "/api/sessions", "", 200, &list)
	recorded := 0
	for _, in := range list.Sessions {
		var u api.UsageSeries
		c.json("GET", "/api/sessions/"+in.Agent+"/"+in.SessionID+"/usage?backend="+in.Backend, "", 200, &u)
		for i, p := range u.Points {
			if p.Turn != i+1 || p.Tokens <= 0 {
				t.Errorf("%s/%s: point %d = %+v", in.Agent, in.SessionID, i, p)
			}
		}
		recorded += len(u.Points)
		t.Logf("%s/%s (%s): %d recorded turns, %d markers", in.Agent, in.SessionID, in.Backend, len(u.Points), len(u.Markers))
	}
	if recorded == 0 {
		t.Error("no session of the fixture has a recorded turn")
	}
	var disk api.DiskUse
	c.json("GET", "/api/disk", "", 200, &disk)
	for _, a := range disk.Agents {
		if a.Transcripts.Bytes == 0 {
			t.Errorf("agent %s: no transcript bytes: %+v", a.Agent, a)
		}
	}
}
