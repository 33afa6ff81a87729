package summarize

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/compact"
)

func TestEscalate(t *testing.T) {
	long := strings.Repeat("This summary is far longer than its input. ", 200)
	for _, tc := range []struct {
		name       string
		answers    []http.HandlerFunc
		unreach    bool
		attempts   int
		degraded   bool
		summarizer string
		reasonHas  []string
		calls      int
	}{
		{name: "normal prompt succeeds", answers: []http.HandlerFunc{completion("## Goal\nRename the loader.")},
			attempts: 1, summarizer: "openai:test-model", calls: 1},
		{name: "too long, then aggressive succeeds", answers: []http.HandlerFunc{completion(long), completion("## Goal\nRename.")},
			attempts: 2, summarizer: "openai:test-model", calls: 2},
		{name: "empty answers fall back", answers: []http.HandlerFunc{raw(`{"choices":[{"message":{"content":"  "}}]}`)},
			attempts: 3, degraded: true, summarizer: "deterministic", calls: 2,
			reasonHas: []string{"normal prompt:", "aggressive prompt:", "expected text in choices[0].message.content"}},
		{name: "garbage JSON falls back", answers: []http.HandlerFunc{raw(`{"choices": [`)},
			attempts: 3, degraded: true, summarizer: "deterministic", calls: 2,
			reasonHas: []string{"expected a chat completion (JSON)"}},
		{name: "HTML answer rejected", answers: []http.HandlerFunc{completion("<!DOCTYPE html><html>login</html>")},
			attempts: 3, degraded: true, summarizer: "deterministic", calls: 2,
			reasonHas: []string{"got an HTML page"}},
		{name: "continuation rejected", answers: []http.HandlerFunc{completion("[Assistant]: Sure, renaming now.")},
			attempts: 3, degraded: true, summarizer: "deterministic", calls: 2,
			reasonHas: []string{"continuation of the conversation"}},
		{name: "401 skips the aggressive prompt", answers: []http.HandlerFunc{status(401, `{"error":{"message":"bad key"}}`)},
			attempts: 2, degraded: true, summarizer: "deterministic", calls: 1,
			reasonHas: []string{"got 401 Unauthorized", "bad key"}},
		{name: "500s exhausted fall back", answers: []http.HandlerFunc{status(500, "oops")},
			attempts: 3, degraded: true, summarizer: "deterministic", calls: 8,
			reasonHas: []string{"after 4 attempts", "got 500"}},
		{name: "unreachable falls back", unreach: true,
			attempts: 3, degraded: true, summarizer: "deterministic",
			reasonHas: []string{"got a transport error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o *OpenAI
			var f *fakeServer
			if tc.unreach {
				o = &OpenAI{BaseURL: "http://127.0.0.1:1/v1", Model: "test-model", Timeout: time.Second}
			} else {
				f = newFakeServer(t, tc.answers...)
				o = f.client()
			}
			o.sleep = func(ctx context.Context, d time.Duration) error { return nil }
			e := &Escalate{Model: o}
			s, err := e.SummarizeDetailed(context.Background(), sampleLines, "")
			if err != nil {
				t.Fatal(err)
			}
			if s.Attempts != tc.attempts || s.Degraded != tc.degraded || s.Summarizer != tc.summarizer {
				t.Errorf("got attempts %d degraded %v summarizer %q; want %d %v %q (reason %q)", s.Attempts, s.Degraded, s.Summarizer, tc.attempts, tc.degraded, tc.summarizer, s.Reason)
			}
			if len(s.Steps) != s.Attempts {
				t.Errorf("%d steps for %d attempts", len(s.Steps), s.Attempts)
			}
			if tc.degraded {
				if !strings.HasPrefix(s.Reason, "fell back to the deterministic summary: ") {
					t.Errorf("reason = %q", s.Reason)
				}
				if !strings.Contains(s.Text, "Extractive summary written without a model (degraded)") || !strings.Contains(s.Text, "config/load.go") {
					t.Errorf("fallback text = %q", s.Text)
				}
			} else if s.Reason != "" {
				t.Errorf("reason %q on a model summary", s.Reason)
			}
			for _, r := range tc.reasonHas {
				if !strings.Contains(s.Reason, r) {
					t.Errorf("reason %q lacks %q", s.Reason, r)
				}
			}
			if strings.Contains(s.Reason, testKey) {
				t.Error("reason leaks the key")
			}
			if f != nil {
				if n := int(f.calls.Load()); n != tc.calls {
					t.Errorf("server calls = %d, want %d", n, tc.calls)
				}
				if tc.name == "too long, then aggressive succeeds" {
					f.mu.Lock()
					u := f.reqs[1].body.Messages[1].Content
					f.mu.Unlock()
					if !strings.Contains(u, "Be TERSE") {
						t.Error("second request is not the aggressive prompt")
					}
				}
			}
			sum, err := e.Summarize(context.Background(), sampleLines, "")
			text, degraded := sum.Text, sum.Degraded
			if err != nil || degraded != tc.degraded || text == "" {
				t.Errorf("Summarize = %q, %v, %v", text, degraded, err)
			}
		})
	}
}

// plain is a Summarizer without prompt variants.
type plain struct {
	focuses []string
	answer  func(n int) (string, error)
}

func (p *plain) Summarize(ctx context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	p.focuses = append(p.focuses, focus)
	s, err := p.answer(len(p.focuses))
	return compact.Summary{Text: s}, err
}

func TestEscalatePlainSummarizer(t *testing.T) {
	p := &plain{answer: func(n int) (string, error) {
		if n == 1 {
			return "", errors.New("model overloaded")
		}
		return "short summary", nil
	}}
	e := &Escalate{Model: p}
	s, err := e.SummarizeDetailed(context.Background(), sampleLines, "aliases")
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != "short summary" || s.Degraded || s.Attempts != 2 || !strings.HasPrefix(s.Summarizer, "*summarize.plain") {
		t.Errorf("got %+v", s)
	}
	if len(p.focuses) != 2 || p.focuses[0] != "aliases" || !strings.HasPrefix(p.focuses[1], "aliases Be extremely brief") {
		t.Errorf("focuses = %q", p.focuses)
	}
}

func TestEscalateNoModel(t *testing.T) {
	e := &Escalate{Fallback: &Deterministic{MaxBytes: 600}}
	s, err := e.SummarizeDetailed(context.Background(), sampleLines, "")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Degraded || s.Attempts != 1 || !strings.Contains(s.Reason, "no model summarizer is configured") || len(s.Text) > 600 {
		t.Errorf("got %+v", s)
	}
	var _ compact.Summarizer = e
	var _ compact.Summarizer = &OpenAI{}
	var _ compact.Summarizer = &Deterministic{}
	var _ VariantSummarizer = &OpenAI{}
}

func TestEscalateNilClient(t *testing.T) {
	var o *OpenAI
	s, err := (&Escalate{Model: o}).SummarizeDetailed(context.Background(), sampleLines, "")
	if err != nil || !s.Degraded || s.Attempts != 2 || !strings.Contains(s.Reason, "expected an OpenAI client, found nil") {
		t.Errorf("got %+v, %v", s, err)
	}
}

func TestEscalateCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &plain{answer: func(int) (string, error) { cancel(); return "", context.Canceled }}
	_, err := (&Escalate{Model: p}).SummarizeDetailed(ctx, sampleLines, "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestGarbage(t *testing.T) {
	for _, tc := range []struct {
		text  string
		input int
		want  error
	}{
		{"## Goal\nok", 1000, nil},
		{"", 1000, ErrEmpty},
		{" \n\t", 1000, ErrEmpty},
		{"abc\x00def", 1000, ErrGarbage},
		{"bad \xff utf8", 1000, ErrGarbage},
		{"\x01\x02\x03\x04\x05 control", 1000, ErrGarbage},
		{"<html><body>502</body></html>", 1000, ErrGarbage},
		{`{"error":{"message":"nope"}}`, 1000, ErrGarbage},
		{"[Tool result]: ok", 1000, ErrGarbage},
		{strings.Repeat("x", 1001), 1000, ErrGarbage},
	} {
		err := garbage(tc.text, tc.input)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("garbage(%q) = %v, want %v", tc.text, err, tc.want)
		}
	}
}
