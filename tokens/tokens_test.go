package tokens_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		err        bool
	}{
		{"o200k", "o200k", false},
		{"chars/4", "chars/4", false},
		{"calibrated", "", true},
		{"cl100k", "", true},
		{"", "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := tokens.New(tt.name)
			if tt.err {
				if !errors.Is(err, bs.ErrInvalid) {
					t.Fatalf("New(%q) error = %v, want ErrInvalid", tt.name, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Name(); got != tt.want {
				t.Errorf("Name() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestO200k(t *testing.T) {
	tok, err := tokens.O200k()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"The quick brown fox jumps over the lazy dog.", 10},
		{`{"command":"ls -la"}`, 7},
	} {
		if got := tok.Tokens([]byte(tt.text)); got != tt.want {
			t.Errorf("Tokens(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
	// Invalid UTF-8 is counted, not refused.
	if got := tok.Tokens([]byte{0xff, 0xfe, 'a'}); got <= 0 {
		t.Errorf("Tokens(invalid UTF-8) = %d, want > 0", got)
	}
}

// The synthetic transcripts below record a context of exactly
// overhead + ratio × chars/4(history) + 4 per message.
const (
	synthOverhead = 3000
	synthRatio    = 1.25
	perMessage    = 4
)

// writeSession writes a transcript of turns (each a user message, an
// assistant tool call, its result and an assistant answer) whose recorded
// usage follows the constants above, and opens it.
func writeSession(t *testing.T, turns int, usage bool, extra ...string) bs.Transcript {
	t.Helper()
	return writeSessionOpts(t, sessionOpts{turns: turns, usage: usage}, extra...)
}

// sessionOpts shape a synthetic transcript.
type sessionOpts struct {
	turns int
	usage bool
	// thinking adds a thinking block to every tool call; counted says
	// whether the recorded usage counts it (a provider that drops earlier
	// turns' thinking does not).
	thinking, counted bool
	// ceiling, when not 0, is the most context the provider records, as
	// Ollama does when it cuts the prompt to its window.
	ceiling int
}

func writeSessionOpts(t *testing.T, o sessionOpts, extra ...string) bs.Transcript {
	turns, usage := o.turns, o.usage
	t.Helper()
	var lines []string
	lines = append(lines, `{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/w"}`)
	parent, n := "null", 0
	hist, msgs := 0, 0
	add := func(body string, visible int) {
		n++
		id := fmt.Sprintf("e%07d", n)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-03-01T00:%02d:%02d.000Z","message":%s}`, id, parent, n/60%60, n%60, body))
		parent = `"` + id + `"`
		hist += visible
		msgs++
	}
	ctxNow := func() int {
		c := synthOverhead + int(synthRatio*float64(hist)) + perMessage*msgs
		if o.ceiling > 0 {
			c = min(c, o.ceiling)
		}
		return c
	}
	use := func() string {
		if !usage {
			return `"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`
		}
		return fmt.Sprintf(`"usage":{"input":%d,"output":20,"cacheRead":0,"cacheWrite":0,"totalTokens":%d}`, ctxNow(), ctxNow()+20)
	}
	for i := range turns {
		text := strings.Repeat("word ", 40*(i%5+1)) // 200–1000 bytes, a multiple of 4
		add(fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":"%s"}],"timestamp":1}`, text), len(text)/4)
		args := `{"command":"cat file.txt"}` // 26 bytes: 7 tokens of chars/4
		think, thinkTokens := "", 0
		if o.thinking {
			text := strings.Repeat("hmm ", 100*(i%4+1))
			think = fmt.Sprintf(`{"type":"thinking","thinking":"%s","thinkingSignature":"c2lnbmF0dXJl"},`, text)
			if o.counted {
				thinkTokens = len(text) / 4
			}
		}
		add(fmt.Sprintf(`{"role":"assistant","content":[%s{"type":"toolCall","id":"c%d","name":"exec","arguments":%s}],"api":"anthropic-messages","provider":"anthropic","model":"m",%s,"stopReason":"toolUse","timestamp":1}`, think, i, args, use()), 7+1+thinkTokens)
		out := strings.Repeat("line of output\n", 20*(i%3+1))
		add(fmt.Sprintf(`{"role":"toolResult","toolCallId":"c%d","toolName":"exec","content":[{"type":"text","text":%q}],"isError":false,"timestamp":1}`, i, out), (len(out)+3)/4)
		add(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"done and done"}],"api":"anthropic-messages","provider":"anthropic","model":"m",%s,"stopReason":"stop","timestamp":1}`, use()), 4)
	}
	lines = append(lines, extra...)
	p := filepath.Join(t.TempDir(), "s1.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := session.Open(context.Background(), p, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if got < want-tol || got > want+tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

func TestLearn(t *testing.T) {
	tr := writeSession(t, 30, true)
	m, err := tokens.Learn(context.Background(), tr, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "Ratio", m.Ratio(), synthRatio, 0.01)
	within(t, "Overhead", float64(m.Overhead()), synthOverhead, 30)
	if got := m.Tokenizer().Name(); got != "calibrated" {
		t.Errorf("Tokenizer().Name() = %q", got)
	}
	if got := m.Tokenizer().Tokens([]byte("abcdefgh")); got != 3 { // 2 × 1.25, rounded
		t.Errorf("calibrated Tokens(8 bytes) = %d, want 3", got)
	}
	cur := m.Current()
	if cur.Method != "usage+calibrated" || cur.Anchor == "" {
		t.Errorf("Current() = %+v, want an estimate anchored on recorded usage", cur)
	}
	if cur.Tokens != cur.Overhead+cur.History {
		t.Errorf("Current() = %+v: tokens is not overhead + history", cur)
	}
	// The anchored estimate and the whole-history prediction agree on a
	// transcript that follows the model exactly.
	within(t, "Current().Tokens", float64(cur.Tokens), float64(predictAll(t, m, tr)), 40)
}

// predictAll predicts the context of the whole active path.
func predictAll(t *testing.T, m *tokens.Model, tr bs.Transcript) int {
	t.Helper()
	var lines []int
	for _, i := range tr.ActivePath() {
		lines = append(lines, tr.Nodes()[i].Line)
	}
	var raws [][]byte
	for e, err := range tr.Lines(context.Background(), lines) {
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, e.Raw)
	}
	return m.Predict(raws)
}

func TestLearnThinking(t *testing.T) {
	for _, counted := range []bool{false, true} {
		t.Run(fmt.Sprintf("counted=%v", counted), func(t *testing.T) {
			tr := writeSessionOpts(t, sessionOpts{turns: 30, usage: true, thinking: true, counted: counted})
			m, err := tokens.Learn(context.Background(), tr, tokens.CharsPer4{})
			if err != nil {
				t.Fatal(err)
			}
			within(t, "Ratio", m.Ratio(), synthRatio, 0.01)
			within(t, "Overhead", float64(m.Overhead()), synthOverhead, 30)
		})
	}
}

func TestLearnTruncated(t *testing.T) {
	const ceiling = 9000
	tr := writeSessionOpts(t, sessionOpts{turns: 30, usage: true, ceiling: ceiling})
	m, err := tokens.Learn(context.Background(), tr, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	within(t, "Ratio", m.Ratio(), synthRatio, 0.01)
	within(t, "Overhead", float64(m.Overhead()), synthOverhead, 30)
	if cur := m.Current(); cur.Tokens <= ceiling+5000 || cur.Method != "usage+calibrated" {
		t.Errorf("Current() = %+v: want the context past the provider's ceiling of %d", cur, ceiling)
	}
}

func TestPredict(t *testing.T) {
	tr := writeSession(t, 20, true)
	m, err := tokens.Learn(context.Background(), tr, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	summary := strings.Repeat("abcd", 250) // 250 tokens of chars/4
	comp := fmt.Sprintf(`{"type":"compaction","id":"c0000001","parentId":"e0000080","timestamp":"2026-03-01T02:00:00.000Z","summary":"%s","firstKeptEntryId":"e0000077","tokensBefore":9000}`, summary)
	user := `{"type":"message","id":"e0000081","parentId":"c0000001","timestamp":"2026-03-01T02:00:01.000Z","message":{"role":"user","content":"abcdabcd","timestamp":1}}`
	label := `{"type":"label","id":"l1","parentId":"e0000081","timestamp":"2026-03-01T02:00:02.000Z","targetId":"e0000081","label":"x"}`
	wrapper := (len("The conversation history before this point was compacted into the following summary:\n\n<summary>\n") + len(summary) + len("\n</summary>") + 3) / 4
	want := float64(m.Overhead()) + synthRatio*float64(wrapper+2) + 2*perMessage
	within(t, "Predict(summary, user, label)", float64(m.Predict([][]byte{[]byte(comp), []byte(user), []byte(label)})), want, 3)
	if got := m.Predict(nil); got != m.Overhead() {
		t.Errorf("Predict(nil) = %d, want the overhead %d", got, m.Overhead())
	}
	// A transcript-only assistant and a failed turn do not reach the model.
	mirror := `{"type":"message","id":"x1","parentId":null,"timestamp":"2026-03-01T02:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"abcdabcd"}],"provider":"openclaw","model":"delivery-mirror","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":"stop","timestamp":1}}`
	failed := `{"type":"message","id":"x2","parentId":null,"timestamp":"2026-03-01T02:00:01.000Z","message":{"role":"assistant","content":[],"provider":"anthropic","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0},"stopReason":"error","errorMessage":"fetch failed","timestamp":1}}`
	if got := m.Predict([][]byte{[]byte(mirror), []byte(failed), []byte("not json")}); got != m.Overhead() {
		t.Errorf("Predict(mirror, failed, malformed) = %d, want the overhead %d", got, m.Overhead())
	}
}

func TestLearnAfterCompaction(t *testing.T) {
	summary := strings.Repeat("abcd", 500)
	comp := fmt.Sprintf(`{"type":"compaction","id":"c0000001","parentId":"e0000120","timestamp":"2026-03-01T02:00:00.000Z","summary":"%s","firstKeptEntryId":"e0000117","tokensBefore":9000}`, summary)
	tr := writeSession(t, 30, true, comp)
	m, err := tokens.Learn(context.Background(), tr, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	cur := m.Current()
	if cur.Method != "calibrated" || cur.Anchor != "" {
		t.Fatalf("Current() after a compaction = %+v, want the calibrated count with no anchor", cur)
	}
	// The context is the summary and the kept last turn (4 messages).
	if got, want := cur.Tokens, m.Predict(contextLines(t, tr)); got != want {
		t.Errorf("Current().Tokens = %d, Predict(context) = %d", got, want)
	}
	if cur.Tokens > synthOverhead+2000 {
		t.Errorf("Current() = %+v: the compacted history still counts", cur)
	}
}

// contextLines returns the raw lines of the context the host builds.
func contextLines(t *testing.T, tr bs.Transcript) [][]byte {
	t.Helper()
	c := tr.Context()
	var order []int
	if c.Compaction >= 0 {
		order = append(order, tr.Nodes()[c.Compaction].Line)
	}
	for _, i := range c.Messages {
		order = append(order, tr.Nodes()[i].Line)
	}
	lines := slices.Sorted(slices.Values(order))
	byLine := map[int][]byte{}
	for e, err := range tr.Lines(context.Background(), lines) {
		if err != nil {
			t.Fatal(err)
		}
		byLine[e.Line] = e.Raw
	}
	var raws [][]byte
	for _, l := range order {
		raws = append(raws, byLine[l])
	}
	return raws
}

func TestLearnWithoutUsage(t *testing.T) {
	tr := writeSession(t, 5, false)
	m, err := tokens.Learn(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur := m.Current()
	if m.Overhead() != 0 || cur.Overhead != 0 || !strings.Contains(cur.Method, "no recorded usage") || m.Ratio() != 1 {
		t.Errorf("Current() = %+v, overhead %d, ratio %v: want the base count alone", cur, m.Overhead(), m.Ratio())
	}
	if cur.Tokens <= 0 || cur.Tokens != cur.History {
		t.Errorf("Current() = %+v", cur)
	}
}

// serial is a tokenizer Learn does not know to be safe for concurrent
// use, so it measures lines one by one.
type serial struct{ tokens.CharsPer4 }

// TestLearnParallel checks that measuring on several goroutines gives
// what measuring in order gives. (The generated transcript records the
// same usage on every turn, a truncation ceiling to Learn, so the models
// count their whole history: every measured line shows in Current.)
func TestLearnParallel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.jsonl")
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: 3 << 20, Density: synth.DensityReal}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tr, err := session.Open(ctx, p, bs.SessionRef{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	par, err := tokens.Learn(ctx, tr, tokens.CharsPer4{})
	if err != nil {
		t.Fatal(err)
	}
	ser, err := tokens.Learn(ctx, tr, serial{})
	if err != nil {
		t.Fatal(err)
	}
	if par.Ratio() != ser.Ratio() || par.Overhead() != ser.Overhead() || par.Current() != ser.Current() {
		t.Errorf("parallel: ratio %v, overhead %d, %+v; serial: ratio %v, overhead %d, %+v",
			par.Ratio(), par.Overhead(), par.Current(), ser.Ratio(), ser.Overhead(), ser.Current())
	}
}
