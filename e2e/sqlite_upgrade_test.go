//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	brainsurgeon "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// upgradeSession is a JSONL-era session of the upgrade test: ordinary tool turns around flat tool_result entries
// (one parent-linked, one bare, as the first BrainSurgeon wrote them) and, in the second session, a long user
// message and a long assistant text, which a JSONL-era config with every trigger type extracted too.
func upgradeSessions() map[string][]string {
	ts := func(i int) string { return fmt.Sprintf("2026-10-02T10:%02d:00.000Z", i) }
	msg := func(id, parent string, i int, body string) string {
		p := `"` + parent + `"`
		if parent == "" {
			p = "null"
		}
		return `{"type":"message","id":"` + id + `","parentId":` + p + `,"timestamp":"` + ts(i) + `","message":` + body + `}`
	}
	user := func(text string) string {
		return `{"role":"user","content":[{"type":"text","text":"` + text + `"}],"timestamp":1790000000000}`
	}
	call := func(callID string) string {
		return `{"role":"assistant","content":[{"type":"thinking","thinking":"` + bigText("thinking "+callID, 900) + `","thinkingSignature":"sig"},{"type":"toolCall","id":"` + callID + `","name":"exec","arguments":{"command":"ls -la"}}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1790000000001}`
	}
	result := func(callID, text string) string {
		return `{"role":"toolResult","toolCallId":"` + callID + `","toolName":"exec","content":[{"type":"text","text":"` + text + `"}],"isError":false,"timestamp":1790000000002}`
	}
	reply := func(text string) string {
		return `{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1790000000003}`
	}
	turn := func(p, parent string, i int, question, answer string) ([]string, string) {
		u, c, r, a := p+"u", p+"c", p+"r", p+"a"
		return []string{msg(u, parent, 4*i, user(question)), msg(c, u, 4*i+1, call("call_"+c)),
			msg(r, c, 4*i+2, result("call_"+c, bigText(p+" result", 1500))), msg(a, r, 4*i+3, reply(answer))}, a
	}
	head := func(id string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-10-02T10:00:00.000Z","cwd":"/tmp/w"}`
	}
	out := map[string][]string{}

	const flat = "f1a70031-0000-4000-8000-000000000001"
	l := []string{head(flat)}
	t, last := turn("a", "", 0, "question 0", "answer 0")
	l = append(l, t...)
	l = append(l, `{"__id":"flat1","id":"flat1","parentId":"`+last+`","type":"tool_result","timestamp":"`+ts(20)+`","output":"`+bigText("flat one", 2000)+`"}`)
	t, last = turn("b", "flat1", 6, "question 1", "answer 1")
	l = append(l, t...)
	l = append(l, `{"__id":"flat2","type":"tool_result","timestamp":"`+ts(30)+`","output":"`+bigText("flat two", 1200)+`"}`)
	t, _ = turn("c", last, 8, "question 2", "answer 2")
	out[flat] = append(l, t...)

	const text = "7e470031-0000-4000-8000-000000000002"
	l = []string{head(text)}
	t, last = turn("d", "", 0, bigText("a pasted log", 1500), "answer 0")
	l = append(l, t...)
	t, last = turn("e", last, 1, "question 1", bigText("a long answer", 1500))
	l = append(l, t...)
	t, _ = turn("g", last, 2, "question 2", "answer 2")
	out[text] = append(l, t...)
	return out
}

// entryID returns a row's entry id ("__id", else "id"), "" for the session header.
func entryID(t *testing.T, row string) string {
	t.Helper()
	var e struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Flat string `json:"__id"`
	}
	if err := json.Unmarshal([]byte(row), &e); err != nil {
		t.Fatalf("row is not JSON: %v: %.200s", err, row)
	}
	switch {
	case e.Type == "session":
		return ""
	case e.Flat != "":
		return e.Flat
	}
	return e.ID
}

// TestUpgradePathRestoresAll is the held-out upgrade path: JSONL-era sessions holding flat tool_result entries,
// user and assistant text among ordinary values are pruned by BrainSurgeon with every trigger type, then OpenClaw
// 2026.9.6's own importer moves them into its SQLite store. restore --all puts back every value the store accepts
// (tool results, thinking, the flat entries' output) and reports the others (user and assistant text, which
// OpenClaw's search indexes) by entry id with the reason and how to get them, exiting 1; restore --all --pristine
// then leaves every accepted row byte-identical to its JSONL-era original, the refused rows as imported; restore
// <entry> prints each refused value exactly without writing it; PRAGMA integrity_check stays ok.
func TestUpgradePathRestoresAll(t *testing.T) {
	in := openclaw.Require(t, openclaw.V9)
	e := openclaw.NewEnv(in.Node)
	t.Cleanup(func() {
		if pids := openclaw.KillLeftovers(e.Marker); len(pids) > 0 {
			t.Errorf("processes left over (killed): %v", pids)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	st, err := openclaw.NewState(filepath.Join(t.TempDir(), "state"), openclaw.ConfigOptions{MockURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	sessions := upgradeSessions()
	src := t.TempDir()
	orig := map[string]map[string]string{} // session → entry id → original line
	for id, lines := range sessions {
		p := filepath.Join(src, id+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Seed("main", "agent:main:"+id[:8], id, p); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(st.SessionsDir("main"), id+".jsonl"), old, old)
		orig[id] = map[string]string{}
		for _, l := range lines {
			orig[id][entryID(t, l)] = l
		}
	}

	// JSONL era: every trigger type, user and assistant text included.
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.MinValueLength, c.KeepRecent, c.MinSavingTokens, c.AgeThresholdHours = true, 0, 300, 0, 0, 0
	c.TriggerTypes = nil
	for _, tt := range brainsurgeon.TriggerTypes() {
		c.TriggerTypes = append(c.TriggerTypes, string(tt))
	}
	if err := config.Save(st.AgentsDir(), c); err != nil {
		t.Fatal(err)
	}
	if r := bs(t, "prune", "--agents-dir", st.AgentsDir(), "--json"); r.code != 0 || strings.Count(r.stdout, `"status": "extracted"`)+strings.Count(r.stdout, `"status":"extracted"`) != len(sessions) {
		t.Fatalf("JSONL-era prune: %s", r)
	}
	pruned := map[string]map[string]string{}
	for id := range sessions {
		data, err := os.ReadFile(filepath.Join(st.SessionsDir("main"), id+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		pruned[id] = map[string]string{}
		for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			pruned[id][entryID(t, l)] = l
		}
		for _, want := range []string{"flat1", "flat2", "du", "ea"} {
			if l, ok := pruned[id][want]; ok && !strings.Contains(l, "[[extracted-") {
				t.Fatalf("%s: %s was not extracted in the JSONL era: %.300s", id, want, l)
			}
		}
	}

	// OpenClaw's importer.
	if _, err := openclaw.Import(ctx, e, in, st); err != nil {
		t.Fatal(err)
	}
	db := storePath(st)
	for id := range sessions {
		rows := sessionRows(t, db, id)
		if len(rows) != len(sessions[id]) {
			t.Fatalf("%s: the importer stored %d rows of %d lines", id, len(rows), len(sessions[id]))
		}
		for _, r := range rows {
			if eid := entryID(t, r.Event); eid != "" && r.Event != pruned[id][eid] {
				t.Fatalf("%s: the importer did not keep entry %s as it was:\n got %.300s\nwant %.300s", id, eid, r.Event, pruned[id][eid])
			}
		}
	}
	t.Logf("JSONL-era prune and OpenClaw's import: %s", time.Since(start).Round(time.Millisecond))

	wantRefused := map[string]bool{"du": true, "ea": true} // the user's pasted log, the assistant's long answer
	for id := range sessions {
		session := "main/" + id
		r := bs(t, "restore", session, "--all", "--json", "--agents-dir", st.AgentsDir())
		var res restore.AllResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
			t.Fatalf("%s: restore --all --json: %v\n%s", id, err, r)
		}
		refused := map[string]restore.Refusal{}
		for _, f := range res.Refused {
			refused[f.EntryID] = f
			if !wantRefused[f.EntryID] || f.Reason == "" || !strings.Contains(f.How, "brainsurgeon restore "+session+" "+f.EntryID) {
				t.Errorf("%s: refusal %+v", id, f)
			}
		}
		placeholders := 0
		for eid, l := range pruned[id] {
			n := strings.Count(l, "[[extracted-")
			placeholders += n
			if wantRefused[eid] && refused[eid].EntryID == "" {
				t.Errorf("%s: %s is not reported refused", id, eid)
			}
		}
		wantCode := 0
		if len(res.Refused) > 0 {
			wantCode = 1
		}
		if r.code != wantCode || res.Values != placeholders-len(res.Refused) || res.Remaining.Refused != len(res.Refused) ||
			res.Remaining.Placeholders != len(res.Refused) || len(res.Lost) != len(res.Refused) || !res.Applied {
			t.Fatalf("%s: restore --all: %d of %d placeholders back, %d refused, exit %d (want %d): %s",
				id, res.Values, placeholders, len(res.Refused), r.code, wantCode, r)
		}
		t.Logf("%s: restore --all: %d values back (%d bytes), %d refused", id, res.Values, res.Bytes, len(res.Refused))

		r = bs(t, "restore", session, "--all", "--pristine", "--json", "--agents-dir", st.AgentsDir())
		if r.code != wantCode {
			t.Fatalf("%s: restore --all --pristine: %s", id, r)
		}
		for _, row := range sessionRows(t, db, id) {
			eid := entryID(t, row.Event)
			if eid == "" {
				continue
			}
			want := orig[id][eid]
			if wantRefused[eid] {
				want = pruned[id][eid]
			}
			if row.Event != want {
				t.Errorf("%s: row %d (entry %s) after the pristine restore:\n got %.300s\nwant %.300s", id, row.Seq, eid, row.Event, want)
			}
		}
		for eid := range refused {
			r := bs(t, "restore", session, eid, "--agents-dir", st.AgentsDir())
			var m struct {
				Message struct{ Content []struct{ Text string } }
			}
			if err := json.Unmarshal([]byte(orig[id][eid]), &m); err != nil {
				t.Fatal(err)
			}
			if r.code != 0 || r.stdout != m.Message.Content[0].Text || !strings.Contains(r.stderr, "not written back") {
				t.Errorf("%s: restore %s does not print the refused value: %.500s", id, eid, r)
			}
		}
	}
	for id := range sessions {
		for _, row := range sessionRows(t, db, id) {
			if eid := entryID(t, row.Event); wantRefused[eid] && row.Event != pruned[id][eid] {
				t.Errorf("%s: restore <entry> wrote the refused row %s", id, eid)
			}
		}
	}
	integrity(t, db)
	t.Logf("the upgrade path took %s", time.Since(start).Round(time.Millisecond))
}
