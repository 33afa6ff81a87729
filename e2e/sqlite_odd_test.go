//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	bsprune "github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// oddSession is a JSONL session with one kind of unusual line, made by the test.
type oddSession struct {
	name, id string
	lines    []string
	eol      string // "\n", or "\r\n" for a CRLF file
}

// bigText returns a tool output of about n bytes.
func bigText(tag string, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s output line %04d: some words to make a large value that is worth extracting\\n", tag, i)
	}
	return b.String()
}

// oddSessions returns sessions with lone surrogates, flat entries, CRLF lines, glued JSON values and malformed
// lines, each around ordinary large tool results.
func oddSessions() []oddSession {
	ts := func(i int) string { return fmt.Sprintf("2026-10-01T09:%02d:00.000Z", i) }
	chain := func(id string, lines []string) []string {
		return append([]string{`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-10-01T09:00:00.000Z","cwd":"/tmp/w"}`}, lines...)
	}
	user := func(id, parent string, i int, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":` + parent + `,"timestamp":"` + ts(i) + `","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}],"timestamp":1790000000000}}`
	}
	call := func(id, parent string, i int, callID string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"` + ts(i) + `","message":{"role":"assistant","content":[{"type":"thinking","thinking":"` + bigText("thinking "+id, 900) + `","thinkingSignature":"sig"},{"type":"toolCall","id":"` + callID + `","name":"exec","arguments":{"command":"ls -la"}}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1790000000001}}`
	}
	result := func(id, parent string, i int, callID, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"` + ts(i) + `","message":{"role":"toolResult","toolCallId":"` + callID + `","toolName":"exec","content":[{"type":"text","text":"` + text + `"}],"isError":false,"timestamp":1790000000002}}`
	}
	reply := func(id, parent string, i int, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"` + ts(i) + `","message":{"role":"assistant","content":[{"type":"text","text":"` + text + `"}],"api":"openai-completions","provider":"p","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1790000000003}}`
	}
	// turns returns n tool turns starting after parent, with ids prefixed p; extra(i) may add text to the i-th
	// result.
	turns := func(p, parent string, n int, extra func(i int) string) ([]string, string) {
		var out []string
		for i := 0; i < n; i++ {
			u, c, r, a := fmt.Sprintf("%su%d", p, i), fmt.Sprintf("%sc%d", p, i), fmt.Sprintf("%sr%d", p, i), fmt.Sprintf("%sa%d", p, i)
			q := `"` + parent + `"`
			if parent == "" {
				q = "null"
			}
			text := bigText(p+" result "+fmt.Sprint(i), 1500)
			if extra != nil {
				text += extra(i)
			}
			out = append(out, user(u, q, 4*i, fmt.Sprintf("question %d", i)), call(c, u, 4*i+1, "call_"+c),
				result(r, c, 4*i+2, "call_"+c, text), reply(a, r, 4*i+3, fmt.Sprintf("answer %d", i)))
			parent = a
		}
		return out, parent
	}
	var out []oddSession

	// Lone surrogates: a string cut in the middle of an emoji, as JSON.stringify writes it, in tool output
	// (extracted) and in a user message (never edited).
	l, last := turns("s", "", 6, func(i int) string { return `cut here \ud83d and on` })
	l = append(l, user("slone", `"`+last+`"`, 40, `a user message cut \ud83d mid-emoji`), reply("sfin", "slone", 41, `ok \udc00 low half`))
	out = append(out, oddSession{name: "surrogates", id: "5e55e55e-0000-4000-8000-000000000001", lines: chain("5e55e55e-0000-4000-8000-000000000001", l), eol: "\n"})

	// Flat entries ({"__id":…,"type":"tool_result","output":…}) among ordinary ones.
	l, last = turns("f", "", 5, nil)
	l = append(l, `{"__id":"flat1","id":"flat1","parentId":"`+last+`","type":"tool_result","timestamp":"`+ts(40)+`","output":"`+bigText("flat", 2000)+`"}`)
	l2, _ := turns("g", "flat1", 4, nil)
	l = append(l, l2...)
	out = append(out, oddSession{name: "flat", id: "f1a7f1a7-0000-4000-8000-000000000002", lines: chain("f1a7f1a7-0000-4000-8000-000000000002", l), eol: "\n"})

	// CRLF line ends throughout.
	l, _ = turns("c", "", 6, nil)
	out = append(out, oddSession{name: "crlf", id: "c21fc21f-0000-4000-8000-000000000003", lines: chain("c21fc21f-0000-4000-8000-000000000003", l), eol: "\r\n"})

	// Two JSON values glued on one line, in the middle.
	l, last = turns("j", "", 4, nil)
	l = append(l, `{"type":"custom","customType":"note","id":"glue1","parentId":"`+last+`","timestamp":"`+ts(30)+`","data":{}}{"type":"custom","customType":"note","id":"glue2","parentId":"glue1","timestamp":"`+ts(31)+`","data":{}}`)
	l2, _ = turns("k", last, 4, nil)
	l = append(l, l2...)
	out = append(out, oddSession{name: "glued", id: "61ced61c-0000-4000-8000-000000000004", lines: chain("61ced61c-0000-4000-8000-000000000004", l), eol: "\n"})

	// A malformed line (torn JSON) in the middle.
	l, last = turns("m", "", 4, nil)
	l = append(l, `{"type":"message","id":"torn","parentId":"`+last+`","message":{"role":"user","content":[`)
	l2, _ = turns("n", last, 4, nil)
	l = append(l, l2...)
	out = append(out, oddSession{name: "malformed", id: "3a1f03ed-0000-4000-8000-000000000005", lines: chain("3a1f03ed-0000-4000-8000-000000000005", l), eol: "\n"})
	return out
}

// sideFiles counts the files under the agents dir's extracted/ dirs.
func sideFiles(t *testing.T, agents string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(agents, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, string(filepath.Separator)+"extracted"+string(filepath.Separator)) {
			n++
		}
		return nil
	})
	return n
}

// TestImportedOddSessions is the held-out check of the SQLite era on unusual sessions: OpenClaw 2026.9.6's own
// importer moves sessions with lone surrogates, flat entries, CRLF lines, glued JSON values and malformed lines into
// its store; then prune succeeds on every session, repeated passes over the unchanged store add no side files, and
// restore --all --pristine leaves every row byte-identical with PRAGMA integrity_check ok.
func TestImportedOddSessions(t *testing.T) {
	in := openclaw.Require(t, openclaw.V9)
	e := openclaw.NewEnv(in.Node)
	t.Cleanup(func() {
		if pids := openclaw.KillLeftovers(e.Marker); len(pids) > 0 {
			t.Errorf("processes left over (killed): %v", pids)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := openclaw.NewState(filepath.Join(t.TempDir(), "state"), openclaw.ConfigOptions{MockURL: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	sessions := oddSessions()
	for _, s := range sessions {
		p := filepath.Join(src, s.id+".jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(s.lines, s.eol)+s.eol), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Seed("main", "agent:main:"+s.name, s.id, p); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := openclaw.Import(ctx, e, in, st)
	if err != nil {
		t.Fatal(err)
	}
	db := storePath(st)
	before := map[string][]storeRow{}
	for _, s := range sessions {
		before[s.id] = sessionRows(t, db, s.id)
		if len(before[s.id]) == 0 {
			t.Fatalf("%s: the importer stored no rows: %.3000s", s.name, rep)
		}
		t.Logf("%s: imported %d of %d lines", s.name, len(before[s.id]), len(s.lines))
	}

	cfg := enable(t, st.AgentsDir(), 300)
	set, err := backend.Open(ctx, st.AgentsDir(), backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != len(sessions) {
		t.Fatalf("the store lists %d sessions, want %d", len(refs), len(sessions))
	}
	res, err := bsprune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for _, sr := range res.Sessions {
		if sr.Status != bsprune.StatusExtracted {
			t.Errorf("%s: prune: %s %s", sr.Session, sr.Status, sr.Note)
			continue
		}
		t.Logf("%s: extracted %d values of %d entries", sr.Session, sr.Result.Values, sr.Result.Entries)
	}
	files := sideFiles(t, st.AgentsDir())
	for i := 0; i < 2; i++ {
		res, err = bsprune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		for _, sr := range res.Sessions {
			if sr.Status != bsprune.StatusUnchanged {
				t.Errorf("pass %d over the unchanged store: %s %s %s", i+2, sr.Session, sr.Status, sr.Note)
			}
		}
		if got := sideFiles(t, st.AgentsDir()); got != files {
			t.Errorf("pass %d over the unchanged store: %d side files, %d before", i+2, got, files)
		}
	}

	r := restore.New(set.Store, set.Side, set.StateDir)
	for _, ref := range refs {
		if _, err := r.RestoreAll(ctx, ref, true); err != nil {
			t.Fatalf("%s: restore --all --pristine: %v", ref, err)
		}
	}
	for _, s := range sessions {
		after := sessionRows(t, db, s.id)
		if len(after) != len(before[s.id]) {
			t.Errorf("%s: %d rows after the pristine restore, %d before", s.name, len(after), len(before[s.id]))
			continue
		}
		for i := range after {
			if after[i] != before[s.id][i] {
				t.Errorf("%s: row %d is not byte-identical after the pristine restore:\n got %.300q\nwant %.300q",
					s.name, after[i].Seq, after[i].Event, before[s.id][i].Event)
			}
		}
	}
	integrity(t, db)
}
