package restore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// now is the fixed time of the tests.
var now = time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// corpusFiles returns every transcript of the shared corpus (read in
// place, never copied into the repository). A missing corpus fails. Under
// the race detector it is testcorpus.RaceSample of them: the round trips
// run the same goroutines on every file, and the run without -race checks
// every file.
func corpusFiles(t testing.TB) []string {
	return testcorpus.RaceSample(t, testcorpus.Transcripts(t))
}

func corpusName(p string) string { return testcorpus.Name(p) }

// agentsDir creates <tmp>/agents/main/sessions and returns the agents dir.
func agentsDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "agents")
	if err := os.MkdirAll(filepath.Join(dir, "main", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// install writes data as the transcript of session id in a fresh agents
// dir and returns its ref.
func install(t testing.TB, id string, data []byte) (string, bs.SessionRef) {
	t.Helper()
	dir := agentsDir(t)
	path := filepath.Join(dir, "main", "sessions", id+".jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// An old modification time, as a session at rest would have.
	old := now.Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	return dir, bs.SessionRef{Agent: "main", ID: id, Path: path}
}

func newRestorer(dir string) *restore.Restorer {
	st := sidetest.Store(dir)
	r := restore.New(st, sidedir.New(st), config.StateDir(dir))
	r.Clock = &clock{now}
	return r
}

func extractor(p extract.Policy) *extract.Extractor {
	return &extract.Extractor{Policy: p, Store: sidetest.Store(""), Side: sidedir.New(sidetest.Store("")), Clock: &clock{now}}
}

// allPolicy extracts everything long enough, anywhere.
func allPolicy(minLen int) extract.Policy {
	return extract.Policy{Enabled: true, KeepRecent: 0, MinValueLength: minLen, Triggers: bs.TriggerTypes(),
		AgeThreshold: 0, KeepAfterRestore: 0, MinSavingTokens: 0}
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string { return fmt.Sprintf("%x", sha256.Sum256(b)) }

// lineOf returns the raw line of the entry with the given id.
func lineOf(t testing.TB, data []byte, id string) []byte {
	t.Helper()
	var found []byte
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		if e := r.Entry(); e.Kind == bs.KindEntry && e.ID == id {
			found = bytes.Clone(r.Raw())
		}
	}
	if found == nil {
		t.Fatalf("entry %s not in transcript", id)
	}
	return found
}

// valueAt returns the raw value at ptr in line.
func valueAt(t testing.TB, line []byte, ptr string) string {
	t.Helper()
	s, e, ok := jsonedit.Find(line, ptr)
	if !ok {
		t.Fatalf("no value at %s in %.300s", ptr, line)
	}
	return string(line[s:e])
}

func hasValue(line []byte, ptr string) bool {
	_, _, ok := jsonedit.Find(line, ptr)
	return ok
}

// long returns a text of n characters.
func long(word string, n int) string {
	return strings.Repeat(word+" ", n/(len(word)+1)+1)[:n]
}

// transcript builds a small real-format (v3) transcript. msgs are message
// objects (JSON) given as id → message; they are chained in order.
type msg struct {
	id, body string
	extra    string // extra top-level members, with a leading comma
}

func transcript(msgs ...msg) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}` + "\n")
	parent := "null"
	for i, m := range msgs {
		ts := now.Add(-48*time.Hour + time.Duration(i)*time.Minute).Format("2006-01-02T15:04:05.000Z")
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":%s%s}`+"\n", m.id, parent, ts, m.body, m.extra)
		parent = fmt.Sprintf("%q", m.id)
	}
	return []byte(b.String())
}

func userMsg(text string) string {
	return fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1771500000000}`, text)
}

func assistantText(text string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"api":"openai-completions","provider":"x","model":"m","usage":{"input":10,"output":5},"stopReason":"stop","timestamp":1771500000000}`, text)
}

func assistantCall(thinking, callID, name, args string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"thinking","thinking":%q},{"type":"toolCall","id":%q,"name":%q,"arguments":%s}],"api":"openai-completions","provider":"x","model":"m","usage":{"input":10,"output":5},"stopReason":"toolUse","timestamp":1771500000000}`, thinking, callID, name, args)
}

func toolResult(callID, name, text string) string {
	return fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":%q,"content":[{"type":"text","text":%q}],"details":{"status":"completed"},"isError":false,"timestamp":1771500000000}`, callID, name, text)
}

func ctx() context.Context { return context.Background() }
