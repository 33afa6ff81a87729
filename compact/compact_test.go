package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/restorelogtest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// lastLine returns the last line of a file.
func lastLine(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

// entryKeys is the member order of pi's CompactionEntry.
var entryKeys = regexp.MustCompile(`^\{"type":"compaction","id":"[0-9a-f]{8}","parentId":"[^"]+","timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","summary":".*","firstKeptEntryId":"[^"]+","tokensBefore":\d+,"details":\{"readFiles":\[.*\],"modifiedFiles":\[.*\],"brainsurgeon":\{.*\}\},"fromHook":true\}$`)

type written struct {
	ID           string `json:"id"`
	ParentID     string `json:"parentId"`
	Summary      string `json:"summary"`
	FirstKept    string `json:"firstKeptEntryId"`
	TokensBefore int    `json:"tokensBefore"`
	Details      struct {
		ReadFiles     []string `json:"readFiles"`
		ModifiedFiles []string `json:"modifiedFiles"`
		BrainSurgeon  struct {
			Layer             string   `json:"layer"`
			Trigger           string   `json:"trigger"`
			TokensAfter       int      `json:"tokensAfter"`
			MessagesCompacted int      `json:"messagesCompacted"`
			Focus             string   `json:"focus"`
			Degraded          bool     `json:"degraded"`
			DegradedReason    string   `json:"degradedReason"`
			Summarizer        string   `json:"summarizer"`
			Covers            []string `json:"covers"`
			Level             int      `json:"level"`
		} `json:"brainsurgeon"`
	} `json:"details"`
	FromHook bool `json:"fromHook"`
}

func TestCompactSummarizeWritesHostEntry(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 40, 4000))
	before, _ := os.ReadFile(ref.Path)
	sum := &localSummarizer{}
	s := compact.DefaultSettings()
	s.SummarizeKeepRecent = 10000
	res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, Focus: "the parser", Summarizer: sum, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	if res.EntryID == "" || res.Layer != compact.LayerSummarize || res.TokensAfter >= res.TokensBefore || res.MessagesCompacted == 0 {
		t.Fatalf("result %+v", res)
	}
	after, _ := os.ReadFile(ref.Path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the lines before the compaction changed")
	}
	line := lastLine(t, ref.Path)
	if !entryKeys.Match(line) {
		t.Fatalf("compaction line not in pi's shape:\n%s", line)
	}
	var w written
	if err := json.Unmarshal(line, &w); err != nil {
		t.Fatal(err)
	}
	o := w.Details.BrainSurgeon
	if w.ID != res.EntryID || w.ParentID != "e0000160" || w.FirstKept != res.FirstKeptEntryID || w.TokensBefore != res.TokensBefore ||
		o.Layer != "summarize" || o.Trigger != "manual" || o.TokensAfter != res.TokensAfter || o.MessagesCompacted != res.MessagesCompacted ||
		o.Focus != "the parser" || o.Degraded || o.Summarizer != "local" || len(o.Covers) != 0 || o.Level != 0 || !w.FromHook {
		t.Errorf("entry %+v\nresult %+v", w, res)
	}
	if sum.lines != res.MessagesCompacted || sum.focus != "the parser" {
		t.Errorf("summarizer saw %d lines, focus %q; want %d, the focus", sum.lines, sum.focus, res.MessagesCompacted)
	}
	if len(w.Details.ReadFiles) == 0 || !strings.HasPrefix(w.Details.ReadFiles[0], "/src/f") {
		t.Errorf("readFiles = %q", w.Details.ReadFiles)
	}
	// The kept part starts at a user or assistant message, and keeps at
	// least the requested recent tokens.
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Context()
	first := tr.Nodes()[c.Messages[0]]
	if first.ID != w.FirstKept || first.Role == "toolResult" {
		t.Errorf("context starts at %s (%s), want %s", first.ID, first.Role, w.FirstKept)
	}
	stat, err := compact.Status(ctx, tr, s, compact.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stat.Compactions != 1 || stat.Tokens != res.TokensAfter || stat.LastCompactionAt == nil || stat.Risk != compact.RiskLow {
		t.Errorf("status after: %+v", stat)
	}

	// A second compaction summarizes from the first one's firstKept, with
	// the previous summary first, and says what it covers.
	res2, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerFull, Summarizer: sum, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	var w2 written
	if err := json.Unmarshal(lastLine(t, ref.Path), &w2); err != nil {
		t.Fatal(err)
	}
	if sum.lines != res2.MessagesCompacted+1 || w2.ParentID != w.ID || len(w2.Details.BrainSurgeon.Covers) != 1 ||
		w2.Details.BrainSurgeon.Covers[0] != w.ID || w2.Details.BrainSurgeon.Level != 1 || w2.Details.BrainSurgeon.Layer != "full" {
		t.Errorf("second entry %+v (summarizer saw %d lines)", w2, sum.lines)
	}
	if !strings.Contains(res2.Warning, "full compaction") {
		t.Errorf("warning %q, want the full-compaction warning", res2.Warning)
	}
	// Full keeps only the last turn: the last valid cut is the final
	// assistant answer.
	if res2.FirstKeptEntryID != "e0000160" {
		t.Errorf("full layer keeps from %s, want e0000160", res2.FirstKeptEntryID)
	}
}

func TestCompactPinnedCarriedVerbatim(t *testing.T) {
	ctx := context.Background()
	src := genTranscript(t, 20, 2000)
	b, _ := os.ReadFile(src)
	pinned := `{"type":"message","id":"e0000005","parentId":"e0000004","timestamp":"2026-03-01T00:00:05.000Z","_extractable":false,"message":{"role":"user","content":[{"type":"text","text":"never forget: port 8443"}]}}`
	lines := strings.Split(string(b), "\n")
	lines[5] = pinned
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	st, ref := newStore(t, src)
	s := compact.DefaultSettings()
	s.SummarizeKeepRecent = 3000
	res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, Summarizer: &localSummarizer{}, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pinned != 1 || !strings.Contains(res.Summary, "## Pinned") || !strings.Contains(res.Summary, pinned) {
		t.Fatalf("pinned entry not carried: pinned %d, summary:\n%s", res.Pinned, res.Summary)
	}
	res2, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerFull, Summarizer: &localSummarizer{}, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(res2.Summary, pinned) != 1 || strings.Count(res2.Summary, "## Pinned") != 1 {
		t.Errorf("second summary does not carry the pinned entry once:\n%s", res2.Summary)
	}
}

func TestCompactDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 30, 4000))
	before, _ := os.ReadFile(ref.Path)
	res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerSummarize, DryRun: true, Summarizer: &localSummarizer{},
		Settings: compact.Settings{ContextWindow: 200000, SummarizeKeepRecent: 5000, WarnAt: 3, HardWarnAt: 5}})
	if err != nil || !res.DryRun || res.EntryID != "" || res.Summary == "" || res.TokensAfter >= res.TokensBefore {
		t.Fatalf("dry run: %+v, %v", res, err)
	}
	if res.Reason != "dry run: nothing was written" {
		t.Errorf("reason %q, want the dry run's", res.Reason)
	}
	after, _ := os.ReadFile(ref.Path)
	if !bytes.Equal(before, after) {
		t.Error("dry run changed the transcript")
	}
}

func TestCompactChoosesByThresholds(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 30, 4000)) // about 35.7K tokens (chars/4)
	sum := &localSummarizer{}
	for _, tt := range []struct {
		window int
		want   compact.Layer
	}{
		{200000, compact.LayerNone},
		{43000, compact.LayerNone},      // 83%: above prune, but tool output below 50K
		{39200, compact.LayerSummarize}, // 91%
		{36400, compact.LayerFull},      // 98%
	} {
		s := compact.DefaultSettings()
		s.ContextWindow = tt.window
		res, err := compact.Compact(ctx, st, ref, compact.Options{Summarizer: sum, Settings: s, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Layer != tt.want {
			t.Errorf("window %d: layer %q (tokens %d), want %q", tt.window, res.Layer, res.TokensBefore, tt.want)
		}
		// A result that changes nothing says why.
		if tt.want == compact.LayerNone && !strings.HasPrefix(res.Reason, "nothing to compact: the context holds") {
			t.Errorf("window %d: reason %q, want why nothing was compacted", tt.window, res.Reason)
		}
	}
}

func TestChoose(t *testing.T) {
	s := compact.DefaultSettings()
	for _, tt := range []struct {
		pct   float64
		tools int
		want  compact.Layer
	}{
		{50, 90000, compact.LayerNone},
		{80, 90000, compact.LayerNone},
		{81, 50000, compact.LayerNone},
		{81, 50001, compact.LayerPrune},
		{88.5, 0, compact.LayerSummarize},
		{95.1, 0, compact.LayerFull},
	} {
		if got := compact.Choose(compact.StatusReport{Percent: tt.pct, ToolOutputTokens: tt.tools}, s); got != tt.want {
			t.Errorf("Choose(%v%%, %d tool tokens) = %q, want %q", tt.pct, tt.tools, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int
		want compact.Risk
	}{{0, compact.RiskLow}, {2, compact.RiskLow}, {3, compact.RiskMedium}, {4, compact.RiskMedium}, {5, compact.RiskHigh}, {100, compact.RiskHigh}} {
		if got := compact.RiskOf(tt.n, s.WarnAt, s.HardWarnAt); got != tt.want {
			t.Errorf("RiskOf(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestCompactPrune(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 30, 8000)) // 30 results of 2K tokens
	s := compact.DefaultSettings()
	s.PruneProtectRecent = 10000
	res, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerPrune, Side: sidedir.New(st), Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	if res.Prune == nil || !res.Prune.Written || res.MessagesCompacted == 0 || res.TokensAfter >= res.TokensBefore {
		t.Fatalf("prune: %+v (%+v)", res, res.Prune)
	}
	// The most recent 10K tokens (about 4 turns of results) are untouched.
	b, _ := os.ReadFile(ref.Path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, l := range lines[len(lines)-16:] {
		if strings.Contains(l, "[[extracted-") {
			t.Errorf("recent line %d extracted", len(lines)-16+i+1)
		}
	}
	if !strings.Contains(lines[3], "[[extracted-e0000003]]") {
		t.Errorf("old tool result not extracted: %.200s", lines[3])
	}
	if res.MessagesCompacted > 27 {
		t.Errorf("%d results extracted, want the recent ones protected", res.MessagesCompacted)
	}
}

func TestCompactRefusals(t *testing.T) {
	ctx := context.Background()
	src := genTranscript(t, 30, 4000)
	opts := func() compact.Options {
		s := compact.DefaultSettings()
		s.SummarizeKeepRecent = 5000
		return compact.Options{Layer: compact.LayerSummarize, Summarizer: &localSummarizer{}, Settings: s}
	}
	t.Run("RunInFlight", func(t *testing.T) {
		st, ref := newStore(t, src)
		ref.Status = "running"
		_, err := compact.Compact(ctx, st, ref, opts())
		mustBe(t, err, bs.ErrBusy, "refused", "running")
	})
	t.Run("RecentlyModified", func(t *testing.T) {
		// The store's quiet period (a prompt-cache rule) holds automatic
		// compactions back; one asked for by hand goes through.
		st, ref := newStore(t, src)
		st.Writer.Quiet = time.Hour
		o := opts()
		o.Trigger = compact.TriggerAuto
		o.Settings.AutoQuiet = time.Nanosecond
		_, err := compact.Compact(ctx, st, ref, o)
		mustBe(t, err, bs.ErrBusy, "refused", "modified")
		if _, err := compact.Compact(ctx, st, ref, opts()); err != nil {
			t.Fatalf("a manual compaction inside the store's quiet period: %v", err)
		}
	})
	t.Run("AutoWithinQuietPeriod", func(t *testing.T) {
		st, ref := newStore(t, src)
		o := opts()
		o.Trigger = compact.TriggerAuto
		_, err := compact.Compact(ctx, st, ref, o)
		mustBe(t, err, bs.ErrBusy, "automatic", "quiet period")
		// The same request made by hand goes through.
		o.Trigger = compact.TriggerManual
		if _, err := compact.Compact(ctx, st, ref, o); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("AutoAfterQuietPeriod", func(t *testing.T) {
		st, ref := newStore(t, src)
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(ref.Path, old, old); err != nil {
			t.Fatal(err)
		}
		o := opts()
		o.Trigger = compact.TriggerAuto
		res, err := compact.Compact(ctx, st, ref, o)
		if err != nil || res.EntryID == "" {
			t.Fatalf("auto compaction after the quiet period: %+v, %v", res, err)
		}
		var w written
		_ = json.Unmarshal(lastLine(t, ref.Path), &w)
		if w.Details.BrainSurgeon.Trigger != "auto" {
			t.Errorf("trigger %q, want auto", w.Details.BrainSurgeon.Trigger)
		}
	})
	t.Run("SummarizerError", func(t *testing.T) {
		st, ref := newStore(t, src)
		before, _ := os.ReadFile(ref.Path)
		o := opts()
		o.Summarizer = &localSummarizer{err: errors.New("connection refused")}
		_, err := compact.Compact(ctx, st, ref, o)
		if err == nil || !strings.Contains(err.Error(), "summarizer failed") || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("error %v, want the summarizer's", err)
		}
		after, _ := os.ReadFile(ref.Path)
		if !bytes.Equal(before, after) {
			t.Error("a failed compaction changed the transcript")
		}
	})
	t.Run("NoSummarizer", func(t *testing.T) {
		st, ref := newStore(t, src)
		o := opts()
		o.Summarizer = nil
		_, err := compact.Compact(ctx, st, ref, o)
		mustBe(t, err, bs.ErrInvalid, "summarizer")
	})
	t.Run("Degraded", func(t *testing.T) {
		st, ref := newStore(t, src)
		o := opts()
		o.Summarizer = &localSummarizer{degraded: true}
		res, err := compact.Compact(ctx, st, ref, o)
		if err != nil || !res.Degraded || res.DegradedReason != "model unreachable (test)" || !strings.Contains(res.Warning, "degraded") {
			t.Fatalf("degraded: %+v, %v", res, err)
		}
		var w written
		_ = json.Unmarshal(lastLine(t, ref.Path), &w)
		if !w.Details.BrainSurgeon.Degraded || w.Details.BrainSurgeon.DegradedReason != res.DegradedReason {
			t.Errorf("entry does not say degraded: %+v", w.Details.BrainSurgeon)
		}
	})
	t.Run("SummaryNotSmaller", func(t *testing.T) {
		st, ref := newStore(t, src)
		before, _ := os.ReadFile(ref.Path)
		o := opts()
		o.Summarizer = bigSummarizer{}
		res, err := compact.Compact(ctx, st, ref, o)
		if err != nil || res.EntryID != "" || !strings.Contains(res.Warning, "not written") || !strings.Contains(res.Reason, "would not make the context smaller") {
			t.Fatalf("a summary larger than its span: %+v, %v", res, err)
		}
		after, _ := os.ReadFile(ref.Path)
		if !bytes.Equal(before, after) {
			t.Error("a compaction that saves nothing was written")
		}
	})
	t.Run("BadLayer", func(t *testing.T) {
		st, ref := newStore(t, src)
		o := opts()
		o.Layer = "everything"
		_, err := compact.Compact(ctx, st, ref, o)
		mustBe(t, err, bs.ErrInvalid, "unknown layer")
	})
	t.Run("V1Transcript", func(t *testing.T) {
		p := t.TempDir() + "/v1.jsonl"
		var b strings.Builder
		b.WriteString(`{"type":"session","id":"v1","timestamp":"2026-01-01T00:00:00.000Z"}` + "\n")
		for range 50 {
			b.WriteString(`{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"` + strings.Repeat("y", 2000) + `"}}` + "\n")
		}
		os.WriteFile(p, []byte(b.String()), 0o600)
		st, ref := newStore(t, p)
		_, err := compact.Compact(ctx, st, ref, opts())
		mustBe(t, err, bs.ErrUnsupported, "v1")
	})
}

func TestSQLiteRefusedButReadable(t *testing.T) {
	ctx := context.Background()
	root := testcorpus.Store(t)
	st := sqlite.NewStore(root, sqlite.Options{})
	refs, _, err := st.Sessions(ctx)
	if err != nil || len(refs) == 0 {
		t.Fatalf("sessions: %v (%d)", err, len(refs))
	}
	read := 0
	for _, ref := range refs {
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		stat, err := compact.Status(ctx, tr, compact.Settings{}, compact.TokenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if stat.Backend != bs.BackendSQLite || stat.CanCompact || !strings.Contains(stat.Refusal, "never inserts rows") {
			t.Errorf("status %+v", stat)
		}
		if _, err := compact.Inspect(ctx, tr, compact.Settings{}, compact.TokenOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := compact.History(ctx, tr, 0); err != nil {
			t.Fatal(err)
		}
		if stat.Tokens > 0 {
			read++
		}
		for _, l := range []compact.Layer{compact.LayerSummarize, compact.LayerFull} {
			_, err = compact.Compact(ctx, st, ref, compact.Options{Layer: l, Summarizer: &localSummarizer{}})
			mustBe(t, err, bs.ErrUnsupported, "SQLite", "never inserts rows")
		}
	}
	if read == 0 {
		t.Error("no SQLite session had a context")
	}
}

// TestStatusAndInspectGenerated checks the report's sums on a transcript
// whose sizes are known.
func TestStatusAndInspectGenerated(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 10, 4000))
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := compact.DefaultSettings()
	s.ContextWindow = 13000
	in, err := compact.Inspect(ctx, tr, s, compact.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(ref.Path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")[1:]
	want := 0
	for _, l := range lines {
		want += (len(l) + 3) / 4
	}
	if in.Tokens != want || in.Conversation.Tokens != want || in.Conversation.Messages != 40 || in.Conversation.ToolOutputs.Count != 10 || in.Tokenizer != "chars/4" {
		t.Errorf("inspect %+v, want %d tokens in 40 messages", in, want)
	}
	if in.Protected.Tokens+in.Compactable.Tokens != want || in.Protected.Messages+in.Compactable.Messages != 40 {
		t.Errorf("protected %+v + compactable %+v != conversation", in.Protected, in.Compactable)
	}
	if in.Percent < 90 || in.Layer != compact.LayerSummarize || len(in.Warnings) == 0 || len(in.Recommendations) == 0 || !in.CanCompact {
		t.Errorf("status part %+v", in.StatusReport)
	}
	j, _ := json.Marshal(in)
	// Tool outputs are a part of the conversation, not beside it.
	if !bytes.Contains(j, fmt.Appendf(nil, `"conversation":{"tokens":%d,"messages":40,"tool_outputs":{"tokens":`, want)) {
		t.Errorf("inspect JSON does not nest tool_outputs in conversation: %s", j)
	}
	for _, k := range []string{`"session"`, `"tokens"`, `"window"`, `"percent"`, `"tokenizer"`, `"auto_enabled"`, `"trigger_percent"`, `"compactions"`,
		`"last_compaction_at"`, `"risk"`, `"warnings"`, `"recommendations"`, `"conversation"`, `"tool_outputs"`, `"system_prompt"`, `"protected"`,
		`"compactable"`, `"savings"`, `"pinned"`} {
		if !bytes.Contains(j, []byte(k)) {
			t.Errorf("inspect JSON lacks %s", k)
		}
	}
}

// bigSummarizer answers with a summary larger than anything it is given.
type bigSummarizer struct{}

func (bigSummarizer) Summarize(context.Context, [][]byte, string) (compact.Summary, error) {
	return compact.Summary{Text: strings.Repeat("words ", 200000)}, nil
}

// fixedEstimator is an Estimator with an overhead, as a calibrated model
// has.
type fixedEstimator struct{ overhead int }

func (f fixedEstimator) Overhead() int         { return f.overhead }
func (f fixedEstimator) TokenizerName() string { return tokens.CharsPer4{}.Name() }
func (f fixedEstimator) Predict(m [][]byte) int {
	return f.overhead + compact.TokenizerEstimator{}.Predict(m)
}

func TestStatusUsesEstimator(t *testing.T) {
	ctx := context.Background()
	st, ref := newStore(t, genTranscript(t, 5, 100))
	tr, _ := st.Open(ctx, ref, nil)
	plain, err := compact.Status(ctx, tr, compact.Settings{}, compact.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tok := compact.TokenOptions{Estimator: func(context.Context, bs.Transcript) (compact.Estimator, error) { return fixedEstimator{7000}, nil }}
	est, err := compact.Status(ctx, tr, compact.Settings{}, tok)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := compact.Inspect(ctx, tr, compact.Settings{}, tok)
	if est.Tokens != plain.Tokens+7000 || in.SystemPrompt.Tokens != 7000 {
		t.Errorf("with overhead: %d tokens (plain %d), system prompt %d", est.Tokens, plain.Tokens, in.SystemPrompt.Tokens)
	}
	_, err = compact.Status(ctx, tr, compact.Settings{}, compact.TokenOptions{Estimator: func(context.Context, bs.Transcript) (compact.Estimator, error) {
		return nil, errors.New("no usage")
	}})
	if err == nil || !strings.Contains(err.Error(), "no usage") {
		t.Errorf("estimator error not returned: %v", err)
	}
}

// TestCompactPruneKeepsRestored checks that the prune layer protects a
// value the log says was restored, for the window of Options.Policy's
// KeepAfterRestore when the rest of the policy is the default, and for
// the default window otherwise.
func TestCompactPruneKeepsRestored(t *testing.T) {
	const id = "e0000003"
	restoredAgo := 15 * time.Minute
	for _, tt := range []struct {
		name string
		keep time.Duration
		kept bool
	}{
		{"default window of 10 minutes is over", 0, false},
		{"configured window of 1 hour holds", time.Hour, true},
		{"configured window of 5 minutes is over", 5 * time.Minute, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st, ref := newStore(t, genTranscript(t, 30, 8000))
			s := compact.DefaultSettings()
			s.PruneProtectRecent = 10000
			_, err := compact.Compact(ctx, st, ref, compact.Options{Layer: compact.LayerPrune, Side: sidedir.New(st), Settings: s,
				Policy: extract.Policy{KeepAfterRestore: tt.keep}, Restores: restorelogtest.Map{Times: map[string]time.Time{id: time.Now().Add(-restoredAgo)}}})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(ref.Path)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			if got := !strings.Contains(lines[3], "[[extracted-"+id+"]]"); got != tt.kept {
				t.Errorf("entry %s restored %s ago kept whole = %v, want %v", id, restoredAgo, got, tt.kept)
			}
			if !strings.Contains(lines[7], "[[extracted-e0000007]]") {
				t.Errorf("another old result was not extracted: %.200s", lines[7])
			}
		})
	}
}
