package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// upgradeLines is a JSONL-era session: a long user message, tool results,
// a flat tool_result entry ({"__id":…,"type":"tool_result","output":…})
// and a thinking block, each long enough to be extracted.
func upgradeLines(id string) []string {
	long := func(tag string, n int) string {
		return strings.Repeat(tag+" words of a long value, ", n/(len(tag)+23)+1)
	}
	return []string{
		`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"` + long("pasted log", 1500) + `"}]}}`,
		`{"type":"message","id":"c1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"` + long("thinking", 1200) + `","thinkingSignature":"sig"},{"type":"toolCall","id":"call_1","name":"exec","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"r1","parentId":"c1","timestamp":"2026-02-18T09:00:03.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":"` + long("listing", 2000) + `"}],"isError":false}}`,
		`{"__id":"f1","id":"f1","parentId":"r1","type":"tool_result","timestamp":"2026-02-18T09:00:04.000Z","output":"` + long("flat output", 1800) + `"}`,
		`{"type":"message","id":"a1","parentId":"f1","timestamp":"2026-02-18T09:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"stopReason":"stop"}}`,
		`{"type":"message","id":"u2","parentId":"a1","timestamp":"2026-02-18T09:00:06.000Z","message":{"role":"user","content":[{"type":"text","text":"and now?"}]}}`,
		`{"type":"message","id":"c2","parentId":"u2","timestamp":"2026-02-18T09:00:07.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_2","name":"exec","arguments":{"command":"cat"}}],"stopReason":"toolUse"}}`,
		`{"type":"message","id":"r2","parentId":"c2","timestamp":"2026-02-18T09:00:08.000Z","message":{"role":"toolResult","toolCallId":"call_2","toolName":"exec","content":[{"type":"text","text":"` + long("file body", 2500) + `"}],"isError":false}}`,
		`{"type":"message","id":"a2","parentId":"r2","timestamp":"2026-02-18T09:00:09.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`,
	}
}

// upgradedStore makes what the upgrade path leaves: a JSONL session pruned
// by BrainSurgeon (every trigger type, user text included), then moved
// into an OpenClaw SQLite store as OpenClaw's importer does (the pruned
// lines become the rows, the JSONL file goes, the side records stay). It
// returns the agents dir, the store's path, the original lines and the
// pruned ones.
func upgradedStore(t *testing.T, id string) (agents, db string, orig, pruned []string) {
	t.Helper()
	ctx := context.Background()
	agents = filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orig = upgradeLines(id)
	file := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(orig, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.MinValueLength, c.KeepRecent, c.MinSavingTokens, c.AgeThresholdHours = true, 0, 500, 0, 0, 0
	c.TriggerTypes = nil
	for _, tt := range bs.TriggerTypes() {
		c.TriggerTypes = append(c.TriggerTypes, string(tt))
	}
	if err := config.Save(agents, c); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, agents, backend.FromConfig(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].Status != prune.StatusExtracted {
		t.Fatalf("prune of the JSONL session: %+v", rep.Sessions)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pruned = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, i := range []int{1, 2, 3, 4, 8} {
		if pruned[i] == orig[i] || !strings.Contains(pruned[i], "[[extracted-") {
			t.Fatalf("line %d was not extracted in the JSONL era:\n%s", i+1, pruned[i])
		}
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	db = testcorpus.WriteStore(t, agents, "main", testcorpus.StoreSession{ID: id, Rows: pruned, Zstd: map[int]bool{4: true}})
	return agents, db, orig, pruned
}

// storeEvents returns the rows of a session as OpenClaw stores them
// (event_json, or the zstd frame's text) and checks the database with
// PRAGMA integrity_check.
func storeEvents(t *testing.T, db, id string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file://"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ok string
	if err := conn.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("PRAGMA integrity_check: %q %v", ok, err)
	}
	rows, err := conn.Query("SELECT event_json IS NULL, coalesce(event_json, '') FROM transcript_events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var zstd bool
		var ev string
		if err := rows.Scan(&zstd, &ev); err != nil {
			t.Fatal(err)
		}
		if zstd {
			ev = "<zstd>"
		}
		out = append(out, ev)
	}
	return out
}

// TestRestoreAllUpgradedStore is the upgrade path on a self-made store: a
// session pruned in the JSONL era, then imported into OpenClaw's SQLite
// store, holds a flat tool_result entry and a user message's text among
// ordinary values. restore --all (then --pristine) puts back every value
// the store accepts, the flat entry's output included, byte for byte;
// the user text (OpenClaw's search indexes it) is refused, reported by
// entry id with the reason and how to get it, and the exit status is 1;
// restore <entry> prints it without writing it back; PRAGMA
// integrity_check stays ok.
func TestRestoreAllUpgradedStore(t *testing.T) {
	const id = "0badc0de-0000-4000-8000-000000000031"
	agents, db, orig, pruned := upgradedStore(t, id)
	code, out, errs := run(t, "restore", "main/"+id, "--all", "--json", "--agents-dir", agents)
	if code != 1 {
		t.Fatalf("restore --all: exit %d, want 1\n%s\n%s", code, out, errs)
	}
	var res restore.AllResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("restore --all --json: %v\n%s", err, out)
	}
	if len(res.Refused) != 1 {
		t.Fatalf("refused %+v, want only u1's text", res.Refused)
	}
	f := res.Refused[0]
	if f.EntryID != "u1" || f.Key != "/message/content/0/text" || !strings.Contains(f.Reason, "indexed by OpenClaw") ||
		!strings.Contains(f.How, "brainsurgeon restore main/"+id+" u1 --keys /message/content/0/text") {
		t.Fatalf("refusal %+v", f)
	}
	t.Logf("restore --all: %d values (%d bytes) in %d entries; refused %s", res.Values, res.Bytes, res.Entries, f)
	// Four values came back (two tool results, the thinking block, the
	// flat output), counted exactly, in one write.
	if !res.Applied || res.Values != 4 || res.Entries != 4 || res.Remaining.Refused != 1 || res.Remaining.Placeholders != 1 ||
		len(res.Lost) != 1 || res.Lost[0].Kind != restore.ProblemRefused || res.Pristine {
		t.Fatalf("restore --all: %+v", res)
	}
	if !strings.Contains(errs, "1 value the store does not accept back stays extracted") {
		t.Errorf("stderr does not say what was refused:\n%s", errs)
	}
	for i, ev := range storeEvents(t, db, id) {
		switch {
		case i == 1:
			if ev != pruned[1] {
				t.Errorf("row 1 (refused) changed:\n%s", ev)
			}
		case ev != orig[i] && !strings.Contains(ev, `"_restored":`):
			t.Errorf("row %d neither original nor restored:\n%.300s", i, ev)
		case strings.Contains(ev, "[[extracted-"):
			t.Errorf("row %d still holds a placeholder:\n%.300s", i, ev)
		}
	}

	code, out, errs = run(t, "restore", "main/"+id, "--all", "--pristine", "--agents-dir", agents)
	if code != 1 || !strings.Contains(out, "refused   u1 /message/content/0/text (line 2)") ||
		!strings.Contains(out, "get it: brainsurgeon restore main/"+id+" u1") || !strings.Contains(out, "Written     yes") {
		t.Fatalf("restore --all --pristine: exit %d\n%s\n%s", code, out, errs)
	}
	events := storeEvents(t, db, id)
	if len(events) != len(orig) {
		t.Fatalf("%d rows, want %d", len(events), len(orig))
	}
	for i, ev := range events {
		want := orig[i]
		if i == 1 {
			want = pruned[1]
		}
		if ev != want {
			t.Errorf("row %d after the pristine restore:\n got %.300s\nwant %.300s", i, ev, want)
		}
	}

	code, out, errs = run(t, "restore", "main/"+id, "u1", "--agents-dir", agents)
	var u1 struct {
		Message struct {
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal([]byte(orig[1]), &u1); err != nil {
		t.Fatal(err)
	}
	if code != 0 || out != u1.Message.Content[0].Text || !strings.Contains(errs, "not written back") {
		t.Fatalf("restore u1: exit %d\n%.200s\n%s", code, out, errs)
	}
	if got := storeEvents(t, db, id)[1]; got != pruned[1] {
		t.Errorf("restore u1 wrote the row:\n%s", got)
	}
}
