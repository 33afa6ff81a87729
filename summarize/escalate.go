package summarize

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// VariantSummarizer is a Summarizer that can be asked for a prompt
// variant; [OpenAI] is one. Escalate uses it for the aggressive attempt.
type VariantSummarizer interface {
	compact.Summarizer
	// SummarizeVariant returns the summary of messages with the prompt
	// of variant v.
	SummarizeVariant(ctx context.Context, messages [][]byte, focus string, v Variant) (string, error)
	// Name names the summarizer in a Summary's Method
	// ("openai:<model>").
	Name() string
}

// Summary is a summary with how it was made.
type Summary struct {
	// Text is the summary.
	Text string `json:"text"`
	// Degraded is true when the summary was made without a model.
	Degraded bool `json:"degraded"`
	// Reason says why the summary is degraded ("" when it is not).
	Reason string `json:"reason,omitempty"`
	// Attempts counts the summarizer calls made, the deterministic one
	// included.
	Attempts int `json:"attempts"`
	// Summarizer names what wrote Text ("openai:<model>", "deterministic").
	Summarizer string `json:"summarizer"`
	// Steps lists each attempt in order.
	Steps []Step `json:"steps"`
}

// Step is one attempt of an escalation.
type Step struct {
	// Stage is "normal", "aggressive" or "deterministic".
	Stage string `json:"stage"`
	// Error says why the attempt's answer was not used ("" when it was).
	Error string `json:"error,omitempty"`
	// Chars is the size of the answer in bytes.
	Chars int `json:"chars"`
	// Millis is how long the attempt took.
	Millis int64 `json:"millis"`
}

// Escalate summarizes with Model using the normal prompt, then the
// aggressive prompt, then falls back to Fallback. An answer is rejected as
// garbage when it is empty, is not text, continues the conversation
// instead of summarizing it, or is longer than its input. A failure that
// another prompt cannot fix (401, 403, 404, a bad configuration) skips the
// aggressive attempt. Escalate implements the root package's Summarizer.
type Escalate struct {
	// Model is the model summarizer; nil goes straight to Fallback. When
	// it is not a VariantSummarizer, the aggressive attempt calls it with a
	// focus asking for brevity.
	Model compact.Summarizer
	// Fallback is the deterministic summarizer (the zero Deterministic
	// when nil).
	Fallback *Deterministic
	// Logger receives a warning when the summary degrades (nil discards).
	Logger bs.Logger
}

// Summarize returns SummarizeDetailed's summary as the root package's
// Summary: its text, whether and why it degraded, and what wrote it.
func (e *Escalate) Summarize(ctx context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	s, err := e.SummarizeDetailed(ctx, messages, focus)
	return compact.Summary{Text: s.Text, Degraded: s.Degraded, Reason: s.Reason, Method: s.Summarizer}, err
}

// SummarizeDetailed summarizes messages (raw transcript lines) and says
// how. It fails only when ctx is done; every other failure degrades to the
// deterministic summary, with the reason. A nil Escalate is the zero one.
func (e *Escalate) SummarizeDetailed(ctx context.Context, messages [][]byte, focus string) (Summary, error) {
	if e == nil {
		e = &Escalate{}
	}
	var s Summary
	var reasons []string
	input := 0
	for _, m := range messages {
		input += len(m)
	}
	if e.Model == nil {
		reasons = append(reasons, "no model summarizer is configured")
	} else {
		for _, v := range []Variant{Normal, Aggressive} {
			start := time.Now()
			sum, err := e.try(ctx, messages, focus, v)
			text, degraded, name := sum.Text, sum.Degraded, sum.Method
			if name == "" {
				name = fmt.Sprintf("%T", e.Model)
			}
			s.Attempts++
			step := Step{Stage: string(v), Chars: len(text), Millis: time.Since(start).Milliseconds()}
			if err == nil {
				err = garbage(text, input)
			}
			if ctx.Err() != nil {
				return s, fmt.Errorf("summarize: %w", ctx.Err())
			}
			if err == nil {
				s.Steps = append(s.Steps, step)
				s.Text, s.Degraded, s.Summarizer = text, degraded, name
				if degraded {
					s.Reason = name + " returned a degraded summary"
				}
				return s, nil
			}
			step.Error = err.Error()
			s.Steps = append(s.Steps, step)
			reasons = append(reasons, fmt.Sprintf("%s prompt: %v", v, err))
			if !worthAnotherPrompt(err) {
				break
			}
		}
	}
	fb := e.Fallback
	if fb == nil {
		fb = &Deterministic{}
	}
	start := time.Now()
	fs, err := fb.Summarize(ctx, messages, focus)
	text := fs.Text
	s.Attempts++
	s.Steps = append(s.Steps, Step{Stage: "deterministic", Chars: len(text), Millis: time.Since(start).Milliseconds()})
	if err != nil {
		return s, fmt.Errorf("summarize: %w", err)
	}
	s.Text, s.Degraded, s.Summarizer = text, true, fb.Name()
	s.Reason = "fell back to the deterministic summary: " + strings.Join(reasons, "; ")
	bs.LoggerOrDiscard(e.Logger).Warn("summary degraded", "reason", s.Reason)
	return s, nil
}

// try runs one attempt of variant v.
func (e *Escalate) try(ctx context.Context, messages [][]byte, focus string, v Variant) (compact.Summary, error) {
	if vs, ok := e.Model.(VariantSummarizer); ok {
		text, err := vs.SummarizeVariant(ctx, messages, focus, v)
		return compact.Summary{Text: text, Method: vs.Name()}, err
	}
	if v == Aggressive {
		brief := "Be extremely brief: keep only the goal, files modified, unresolved errors and next steps."
		if strings.TrimSpace(focus) != "" {
			focus = strings.TrimSpace(focus) + " " + brief
		} else {
			focus = brief
		}
	}
	return e.Model.Summarize(ctx, messages, focus)
}

// worthAnotherPrompt reports whether the aggressive prompt may succeed
// where err happened: not after an authentication, permission or
// not-found answer, nor a bad configuration.
func worthAnotherPrompt(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		switch he.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusPaymentRequired:
			return false
		}
	}
	return !errors.Is(err, bs.ErrInvalid)
}

// ErrGarbage is wrapped by the error of a model answer rejected as a
// summary.
var ErrGarbage = errors.New("garbage summary")

// garbage returns an error wrapping ErrGarbage (or ErrEmpty) when text is
// not a usable summary of input bytes of transcript.
func garbage(text string, input int) error {
	t := strings.TrimSpace(text)
	if t == "" {
		return fmt.Errorf("expected a summary, got an empty answer: %w", ErrEmpty)
	}
	if !utf8.ValidString(t) || strings.ContainsRune(t, 0) {
		return fmt.Errorf("expected text, got bytes that are not UTF-8 text: %w", ErrGarbage)
	}
	ctrl := 0
	for _, r := range t {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			ctrl++
		}
	}
	if ctrl > len(t)/100+2 {
		return fmt.Errorf("expected text, got %d control characters: %w", ctrl, ErrGarbage)
	}
	low := strings.ToLower(t[:min(len(t), 200)])
	if strings.HasPrefix(low, "<!doctype html") || strings.HasPrefix(low, "<html") {
		return fmt.Errorf("expected a summary, got an HTML page: %w", ErrGarbage)
	}
	if strings.HasPrefix(t, "{") && strings.Contains(low, `"error"`) {
		return fmt.Errorf("expected a summary, got a JSON error object: %w", ErrGarbage)
	}
	for _, marker := range []string{"[User]:", "[Assistant]:", "[Assistant tool calls]:", "[Tool result]:"} {
		if strings.HasPrefix(t, marker) {
			return fmt.Errorf("expected a summary, got a continuation of the conversation (starts with %q): %w", marker, ErrGarbage)
		}
	}
	if input > 0 && len(t) > input {
		return fmt.Errorf("expected a summary shorter than its input, got %d bytes for %d bytes of input: %w", len(t), input, ErrGarbage)
	}
	return nil
}
