package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// now is the fixed time of the tests.
var now = time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func ctx() context.Context { return context.Background() }

// ln is one entry of a hand-made transcript: its id, its parent ("" is the
// entry before it, "-" is null) and its message body.
type ln struct{ id, parent, body string }

// transcript builds a small v3 transcript of message entries.
func transcript(lines ...ln) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}` + "\n")
	prev := "null"
	for i, l := range lines {
		if l.id == "" { // a raw line
			b.WriteString(l.body + "\n")
			continue
		}
		parent := prev
		switch l.parent {
		case "":
		case "-":
			parent = "null"
		default:
			parent = fmt.Sprintf("%q", l.parent)
		}
		ts := now.Add(-48*time.Hour + time.Duration(i)*time.Minute).Format("2006-01-02T15:04:05.000Z")
		if typ, rest, ok := strings.Cut(l.body, "|"); ok { // another entry type: "type|members"
			fmt.Fprintf(&b, `{"type":%q,"id":%q,"parentId":%s,"timestamp":%q,%s}`+"\n", typ, l.id, parent, ts, rest)
			prev = fmt.Sprintf("%q", l.id)
			continue
		}
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":%s}`+"\n", l.id, parent, ts, l.body)
		prev = fmt.Sprintf("%q", l.id)
	}
	return []byte(b.String())
}

// compaction is a compaction entry body for ln that keeps the path from
// firstKept on.
func compaction(firstKept string) string {
	return fmt.Sprintf(`compaction|"summary":"earlier work","firstKeptEntryId":%q,"tokensBefore":1000`, firstKept)
}

func user(text string) string {
	return fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1771500000000}`, text)
}

func text(t string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"api":"openai-completions","provider":"x","model":"m","stopReason":"stop","timestamp":1771500000000}`, t)
}

// calls is an assistant message calling "read" with each id; stop is its
// stopReason.
func calls(stop string, ids ...string) string {
	var bl []string
	for _, id := range ids {
		bl = append(bl, fmt.Sprintf(`{"type":"toolCall","id":%q,"name":"read","arguments":{"path":"/x"}}`, id))
	}
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"ok"},%s],"api":"openai-completions","provider":"x","model":"m","stopReason":%q,"timestamp":1771500000000}`, strings.Join(bl, ","), stop)
}

func result(id string) string {
	return fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":"read","content":[{"type":"text","text":"file body"}],"isError":false,"timestamp":1771500000000}`, id)
}

// env is a doctor over a fresh agents dir holding one transcript.
type env struct {
	dir  string
	ref  bs.SessionRef
	path string
	st   bs.Store
	doc  *doctor.Doctor
}

// install writes data as session id of agent (pi when agent is "": then
// the file lives in a pi sessions dir) and returns a doctor over it.
func install(t testing.TB, agent, id string, data []byte) *env {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "agents")
	if err := os.MkdirAll(filepath.Join(dir, "main", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "main", "sessions", id+".jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	st := sidetest.Store(dir)
	r := restore.New(st, sidedir.New(st), config.StateDir(dir))
	r.Clock = &clock{now}
	ref, err := st.Resolve(ctx(), "main/"+id)
	if err != nil {
		t.Fatal(err)
	}
	if agent == "" {
		ref.Agent = "" // judged as a pi session
	}
	return &env{dir: dir, ref: ref, path: path, st: st,
		doc: &doctor.Doctor{Store: st, Side: sidedir.New(st), Restorer: r, Clock: &clock{now}}}
}
