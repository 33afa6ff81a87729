package compact_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// localSummarizer is a tiny deterministic summarizer: a heading and the
// number of lines it was given, or err.
type localSummarizer struct {
	calls    int
	lines    int
	focus    string
	degraded bool
	err      error
}

func (s *localSummarizer) Summarize(_ context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	s.calls++
	s.lines, s.focus = len(messages), focus
	if s.err != nil {
		return compact.Summary{}, s.err
	}
	sum := compact.Summary{Text: fmt.Sprintf("## Goal\nSummary of %d lines.", len(messages)), Degraded: s.degraded, Method: "local"}
	if s.degraded {
		sum.Reason = "model unreachable (test)"
	}
	return sum, nil
}

// extractiveSummarizer is a deterministic extractive summarizer in the
// spirit of summarize.Deterministic, for the benchmark: the user requests
// and the tool names of the span, bounded to 8 KB.
type extractiveSummarizer struct{}

func (extractiveSummarizer) Summarize(_ context.Context, messages [][]byte, _ string) (compact.Summary, error) {
	var b strings.Builder
	b.WriteString("## Goal\n")
	for _, m := range messages {
		if b.Len() > 8<<10 {
			break
		}
		if i := strings.Index(string(m[:min(len(m), 400)]), `"role":"user"`); i >= 0 {
			fmt.Fprintf(&b, "- user request at byte %d\n", i)
		}
	}
	return compact.Summary{Text: b.String(), Degraded: true}, nil
}

// newStore copies a transcript into a fresh agents dir and returns a JSONL
// store over it with no quiet period, and the session's ref.
func newStore(t testing.TB, src string) (*session.Store, bs.SessionRef) {
	t.Helper()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	id := "0f0e0d0c-0000-4000-8000-000000000001"
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(agents)
	st.Writer.Quiet = 0
	return st, bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: id, Path: path}
}

// genTranscript writes a v3 transcript of turns tool turns (user, assistant
// with a tool call, tool result of resultBytes, assistant answer) and
// returns its path. Entry ids are e<n>.
func genTranscript(t testing.TB, turns, resultBytes int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gen.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	n, parent := 0, ""
	add := func(body string) {
		n++
		id := fmt.Sprintf("e%07d", n)
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		fmt.Fprintf(w, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T00:%02d:%02d.000Z",%s}`+"\n", id, p, (n/60)%60, n%60, body)
		parent = id
	}
	w.WriteString(`{"type":"session","version":3,"id":"gen","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/"}` + "\n")
	out := strings.Repeat("x", resultBytes)
	for i := range turns {
		add(fmt.Sprintf(`"message":{"role":"user","content":[{"type":"text","text":"step %d"}]}`, i))
		add(fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"toolCall","id":"c%d","name":"read","arguments":{"path":"/src/f%d.go"}}]}`, i, i%7))
		add(fmt.Sprintf(`"message":{"role":"toolResult","toolCallId":"c%d","toolName":"read","content":[{"type":"text","text":"%s"}]}`, i, out))
		add(fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"text","text":"done %d"}]}`, i))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustBe fails unless err wraps target and mentions every word.
func mustBe(t *testing.T, err, target error, words ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want one wrapping %v", err, target)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
