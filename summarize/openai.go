package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// Environment variables FromEnv reads. The API key comes from the first
// of the key variables that is set; it is never read from a file.
const (
	// EnvAPIKey holds the summarizer's API key; it wins over
	// OPENAI_API_KEY and OPENROUTER_API_KEY.
	EnvAPIKey = "BRAINSURGEON_SUMMARY_API_KEY"
	// EnvBaseURL holds the API root, e.g. "http://localhost:11434/v1".
	EnvBaseURL = "BRAINSURGEON_SUMMARY_BASE_URL"
	// EnvModel holds the model name.
	EnvModel      = "BRAINSURGEON_SUMMARY_MODEL"
	envOpenAI     = "OPENAI_API_KEY"
	envOpenRouter = "OPENROUTER_API_KEY"
)

// Defaults of the OpenAI client.
const (
	// DefaultBaseURL is OpenAI's API root.
	DefaultBaseURL = "https://api.openai.com/v1"
	// OpenRouterBaseURL is OpenRouter's API root, the default when the key
	// comes from OPENROUTER_API_KEY.
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	// DefaultTemperature is the temperature FromEnv sets.
	DefaultTemperature = 0.2
	// DefaultMaxTokens bounds an answer when MaxTokens is 0.
	DefaultMaxTokens = 4096
	// DefaultTimeout bounds an attempt when Timeout is 0.
	DefaultTimeout = 120 * time.Second
	// DefaultRetries is the number of retries FromEnv sets.
	DefaultRetries = 3
	// DefaultBackoff is the first wait between attempts when Backoff is 0.
	DefaultBackoff = 1 * time.Second
	// DefaultMaxBackoff caps the wait between attempts when MaxBackoff is 0.
	DefaultMaxBackoff = 30 * time.Second

	maxResponseBytes     = 8 << 20
	errorExcerptBytes    = 300
	maxRetryAfter        = 5 * time.Minute
	aggressiveMaxTokens  = 2048
	minAggressiveTokens  = 256
	redactedKeyReplaceBy = "[redacted]"
)

// ErrEmpty is wrapped by the error of a model answer that holds no text.
var ErrEmpty = errors.New("empty summary")

// HTTPError is the error of a chat-completions request the server
// answered with a status other than 200, or with an error object.
type HTTPError struct {
	// URL is the request URL.
	URL string
	// StatusCode is the HTTP status (or the error object's numeric code
	// when a 200 answer carried one).
	StatusCode int
	// Body is a bounded excerpt of the answer, with the API key removed.
	Body string
	// RetryAfter is the wait the server asked for, or 0.
	RetryAfter time.Duration
}

// Error says what was expected and what was found.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("POST %s: expected 200 with a chat completion, got %d %s: %s",
		e.URL, e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// Temporary reports whether a retry may succeed: 408, 409, 425, 429 and
// every 5xx.
func (e *HTTPError) Temporary() bool {
	switch e.StatusCode {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return e.StatusCode >= 500
}

// Message is one chat message of a request.
type Message struct {
	// Role is "system", "user" or "assistant".
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
}

// OpenAI is a client of an OpenAI-compatible chat-completions API
// (POST {BaseURL}/chat/completions) that implements the root package's
// Summarizer. It works with OpenAI, OpenRouter, Ollama (BaseURL
// "http://localhost:11434/v1", no key), vLLM and llama.cpp's server.
//
// Zero fields take the defaults noted, except Temperature and Retries,
// which are used as they are (FromEnv sets DefaultTemperature and
// DefaultRetries). An OpenAI is safe for concurrent use once configured.
// Its String method, and its slog value, never show the key.
type OpenAI struct {
	// BaseURL is the API root, e.g. "https://openrouter.ai/api/v1"
	// (DefaultBaseURL when empty).
	BaseURL string
	// Model is the model name the server knows. Required.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>"; no header is sent
	// when it is empty (Ollama, a local vLLM).
	APIKey string
	// KeySource names the environment variable the key came from, for
	// reports; never the key itself.
	KeySource string
	// Temperature is sent as is.
	Temperature float64
	// MaxTokens bounds the answer (DefaultMaxTokens when 0). The aggressive
	// variant asks for at most min(MaxTokens, 2048).
	MaxTokens int
	// Timeout bounds each attempt (DefaultTimeout when 0).
	Timeout time.Duration
	// Retries is how many times a failed attempt is retried: after a
	// network error, a timeout, 408/409/425/429 or a 5xx answer. Other 4xx
	// answers are not retried.
	Retries int
	// Backoff is the first wait between attempts, doubled each time with
	// jitter up to MaxBackoff (DefaultBackoff and DefaultMaxBackoff when
	// 0). A Retry-After header of a 429 or 503 answer is honoured instead,
	// up to five minutes.
	Backoff, MaxBackoff time.Duration
	// HTTPClient sends the requests (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Logger receives a warning per failed attempt (nil discards).
	Logger bs.Logger

	// sleep waits between attempts; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// FromEnv returns a client configured from the environment: the key from
// BRAINSURGEON_SUMMARY_API_KEY, else OPENAI_API_KEY, else
// OPENROUTER_API_KEY (then the base URL defaults to OpenRouter's); the
// base URL and model from BRAINSURGEON_SUMMARY_BASE_URL and
// BRAINSURGEON_SUMMARY_MODEL when set; DefaultTemperature and
// DefaultRetries. The caller sets what its configuration says (base URL,
// model, …) on the result.
func FromEnv() *OpenAI { return fromEnv(os.Getenv) }

func fromEnv(getenv func(string) string) *OpenAI {
	o := &OpenAI{Temperature: DefaultTemperature, Retries: DefaultRetries}
	for _, k := range []string{EnvAPIKey, envOpenAI, envOpenRouter} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			o.APIKey, o.KeySource = v, k
			break
		}
	}
	if o.KeySource == envOpenRouter {
		o.BaseURL = OpenRouterBaseURL
	}
	if v := strings.TrimSpace(getenv(EnvBaseURL)); v != "" {
		o.BaseURL = v
	}
	o.Model = strings.TrimSpace(getenv(EnvModel))
	return o
}

// errNilClient is returned by the methods of a nil *OpenAI.
var errNilClient = fmt.Errorf("summarizer: expected an OpenAI client, found nil: %w", bs.ErrInvalid)

// Name returns "openai:<model>".
func (o *OpenAI) Name() string {
	if o == nil {
		return "openai:"
	}
	return "openai:" + o.Model
}

// String describes the client without its key.
func (o OpenAI) String() string {
	key := "none"
	if o.APIKey != "" {
		key = "set"
		if o.KeySource != "" {
			key = "from " + o.KeySource
		}
	}
	return fmt.Sprintf("OpenAI{base_url: %s, model: %s, api_key: %s}", o.baseURL(), o.Model, key)
}

// GoString is String, so that %#v does not show the key either.
func (o OpenAI) GoString() string { return o.String() }

// LogValue is what slog records of the client: no key.
func (o OpenAI) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", o.baseURL()),
		slog.String("model", o.Model),
		slog.Bool("api_key_set", o.APIKey != ""),
	)
}

func (o OpenAI) baseURL() string {
	if o.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimRight(o.BaseURL, "/")
}

// Summarize returns the model's summary of messages (raw transcript
// lines) with the normal prompt; it is never degraded, and its Method is
// Name's.
func (o *OpenAI) Summarize(ctx context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	s, err := o.SummarizeVariant(ctx, messages, focus, Normal)
	return compact.Summary{Text: s, Method: o.Name()}, err
}

// SummarizeVariant returns the model's summary of messages with the
// prompt of variant v.
func (o *OpenAI) SummarizeVariant(ctx context.Context, messages [][]byte, focus string, v Variant) (string, error) {
	if o == nil {
		return "", errNilClient
	}
	p := BuildPrompt(messages, focus, v)
	maxTokens := o.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if v == Aggressive {
		maxTokens = max(min(maxTokens, aggressiveMaxTokens), minAggressiveTokens)
	}
	s, err := o.complete(ctx, []Message{{Role: "system", Content: p.System}, {Role: "user", Content: p.User}}, maxTokens)
	if err != nil {
		return "", fmt.Errorf("summarize with %s (%s prompt): %w", o.Name(), v, err)
	}
	return s, nil
}

// Chat sends messages and returns the answer's text, retrying as
// configured.
func (o *OpenAI) Chat(ctx context.Context, messages []Message) (string, error) {
	if o == nil {
		return "", errNilClient
	}
	maxTokens := o.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return o.complete(ctx, messages, maxTokens)
}

type chatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens"`
	Stream      bool      `json:"stream"`
}

func (o *OpenAI) complete(ctx context.Context, messages []Message, maxTokens int) (string, error) {
	if strings.TrimSpace(o.Model) == "" {
		return "", fmt.Errorf("summarizer model: expected a model name, found none (set the model in the configuration or %s): %w", EnvModel, bs.ErrInvalid)
	}
	body, err := json.Marshal(chatRequest{Model: o.Model, Messages: messages, Temperature: o.Temperature, MaxTokens: maxTokens})
	if err != nil {
		return "", fmt.Errorf("encode chat request: %w", err)
	}
	url := o.baseURL() + "/chat/completions"
	log := bs.LoggerOrDiscard(o.Logger)
	retries := max(o.Retries, 0)
	var lastErr error
	for attempt := 0; ; attempt++ {
		text, retryAfter, err := o.attempt(ctx, url, body)
		if err == nil {
			return text, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return "", fmt.Errorf("%w (after %d attempts; last: %v)", ctx.Err(), attempt+1, err)
		}
		if !retryable(err) || attempt >= retries {
			if attempt > 0 {
				return "", fmt.Errorf("after %d attempts: %w", attempt+1, lastErr)
			}
			return "", lastErr
		}
		wait := o.backoff(attempt)
		if retryAfter > 0 {
			wait = min(retryAfter, maxRetryAfter)
		}
		log.Warn("summarizer request failed, retrying", "model", o.Model, "attempt", attempt+1, "attempts", retries+1, "wait", wait.String(), "err", err.Error())
		sleep := o.sleep
		if sleep == nil {
			sleep = sleepCtx
		}
		if err := sleep(ctx, wait); err != nil {
			return "", fmt.Errorf("%w (waiting to retry after: %v)", err, lastErr)
		}
	}
}

// backoff returns the wait before retry attempt+1: Backoff × 2^attempt,
// capped at MaxBackoff, with the upper half drawn at random.
func (o *OpenAI) backoff(attempt int) time.Duration {
	base, maxB := o.Backoff, o.MaxBackoff
	if base <= 0 {
		base = DefaultBackoff
	}
	if maxB <= 0 {
		maxB = DefaultMaxBackoff
	}
	d := base << min(attempt, 20)
	if d <= 0 || d > maxB {
		d = maxB
	}
	half := d / 2
	return half + rand.N(half+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errTimeout marks an attempt that ran out of its own time.
var errTimeout = errors.New("attempt timed out")

// retryable reports whether a failed attempt may succeed when repeated.
func retryable(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Temporary()
	}
	var ne *netError
	return errors.Is(err, errTimeout) || errors.As(err, &ne)
}

// netError wraps a transport failure (connection refused, reset, …).
type netError struct{ err error }

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// attempt sends one request and returns the answer's text, or an error
// and the wait the server asked for.
func (o *OpenAI) attempt(ctx context.Context, url string, body []byte) (string, time.Duration, error) {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	actx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", 0, fmt.Errorf("summarizer base URL %q: expected an http(s) URL: %v: %w", o.baseURL(), err, bs.ErrInvalid)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, o.transportError(ctx, actx, url, timeout, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return "", 0, o.transportError(ctx, actx, url, timeout, err)
	}
	if resp.StatusCode != http.StatusOK {
		he := &HTTPError{URL: url, StatusCode: resp.StatusCode, Body: o.excerpt(raw)}
		he.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return "", he.RetryAfter, he
	}
	if len(raw) > maxResponseBytes {
		return "", 0, fmt.Errorf("POST %s: expected a chat completion of at most %d bytes, got more", url, maxResponseBytes)
	}
	text, err := o.parseCompletion(url, raw)
	var he *HTTPError
	if errors.As(err, &he) {
		return "", 0, err
	}
	return text, 0, err
}

// transportError describes a request that got no answer.
func (o *OpenAI) transportError(ctx, actx context.Context, url string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(context.Cause(actx), errTimeout) {
		return fmt.Errorf("POST %s: expected an answer within %s, got none: %w", url, timeout, errTimeout)
	}
	return &netError{fmt.Errorf("POST %s: expected an answer, got a transport error: %w", url, err)}
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error *struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// parseCompletion reads the text of a 200 answer.
func (o *OpenAI) parseCompletion(url string, raw []byte) (string, error) {
	var r chatResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("POST %s: expected a chat completion (JSON), got %s: %v", url, o.excerpt(raw), err)
	}
	if r.Error != nil {
		code := http.StatusBadGateway
		if n, err := strconv.Atoi(strings.Trim(string(r.Error.Code), `"`)); err == nil && n >= 400 && n < 600 {
			code = n
		}
		return "", &HTTPError{URL: url, StatusCode: code, Body: o.excerpt(raw)}
	}
	if len(r.Choices) == 0 {
		return "", fmt.Errorf("POST %s: expected at least one choice, got none: %s", url, o.excerpt(raw))
	}
	c := r.Choices[0]
	text := contentString(c.Message.Content)
	if text == "" {
		text = c.Text
	}
	text = strings.TrimSpace(stripThink(text))
	if text == "" {
		return "", fmt.Errorf("POST %s: expected text in choices[0].message.content, got none (finish_reason %q): %w", url, c.FinishReason, ErrEmpty)
	}
	if c.FinishReason == "length" {
		bs.LoggerOrDiscard(o.Logger).Warn("summary cut by the max_tokens limit", "model", o.Model, "max_tokens", o.MaxTokens)
	}
	return text, nil
}

// contentString reads a message content: a string, or an array of parts
// whose text parts are joined.
func contentString(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "" || p.Type == "text" || p.Type == "output_text" {
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// stripThink removes a leading <think>…</think> block that reasoning
// models served by Ollama or vLLM put in the content.
func stripThink(s string) string {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "<think>") {
		if i := strings.Index(t, "</think>"); i >= 0 {
			return t[i+len("</think>"):]
		}
		return ""
	}
	return s
}

// excerpt returns a bounded, single-line excerpt of an answer body with
// the API key removed.
func (o *OpenAI) excerpt(raw []byte) string {
	s := string(raw)
	if o.APIKey != "" {
		s = strings.ReplaceAll(s, o.APIKey, redactedKeyReplaceBy)
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > errorExcerptBytes {
		cut := errorExcerptBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + fmt.Sprintf("… (%d bytes)", len(raw))
	}
	if s == "" {
		return "(empty body)"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// parseRetryAfter reads a Retry-After header: seconds or an HTTP date.
func parseRetryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseFloat(h, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(n * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
