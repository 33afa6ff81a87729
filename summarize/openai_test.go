package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

const testKey = "sk-test-0123456789abcdef"

// fakeServer speaks the chat-completions protocol. Each request is
// answered by the next handler in answers (the last one repeats).
type fakeServer struct {
	t       *testing.T
	srv     *httptest.Server
	answers []http.HandlerFunc
	calls   atomic.Int32
	mu      sync.Mutex
	reqs    []capturedRequest
}

type capturedRequest struct {
	auth string
	body chatRequest
}

func newFakeServer(t *testing.T, answers ...http.HandlerFunc) *fakeServer {
	f := &fakeServer{t: t, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		var body chatRequest
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, capturedRequest{auth: r.Header.Get("Authorization"), body: body})
		f.mu.Unlock()
		n := int(f.calls.Add(1)) - 1
		h := f.answers[min(n, len(f.answers)-1)]
		h(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) client() *OpenAI {
	return &OpenAI{
		BaseURL:     f.srv.URL + "/v1",
		Model:       "test-model",
		APIKey:      testKey,
		Temperature: 0.2,
		MaxTokens:   1000,
		Timeout:     2 * time.Second,
		Retries:     3,
		Backoff:     time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	}
}

func completion(text string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"test-model","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, text)
	}
}

func status(code int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprint(w, body)
	}
}

func raw(body string) http.HandlerFunc { return status(http.StatusOK, body) }

var sampleLines = [][]byte{
	[]byte(`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-05-04T10:00:00.000Z","message":{"role":"user","content":"Rename the config loader and keep the old name as an alias. This line pads the input so that a short summary is shorter than it."}}`),
	[]byte(`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-05-04T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"config/load.go","oldText":"func Load(","newText":"func Read("}}],"stopReason":"toolUse"}}`),
	[]byte(`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-05-04T10:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"Applied 1 edit"}],"isError":false}}`),
}

func TestOpenAIProtocol(t *testing.T) {
	type want struct {
		text    string
		errHas  []string
		errIs   error
		calls   int
		retries bool
	}
	for _, tc := range []struct {
		name    string
		answers []http.HandlerFunc
		setup   func(o *OpenAI)
		want    want
	}{
		{"success", []http.HandlerFunc{completion("## Goal\nRename the loader.")}, nil,
			want{text: "## Goal\nRename the loader.", calls: 1}},
		{"429 then success honours Retry-After", []http.HandlerFunc{status(429, `{"error":{"message":"rate limited"}}`, "Retry-After", "1"), completion("ok summary")}, nil,
			want{text: "ok summary", calls: 2}},
		{"500s exhausted", []http.HandlerFunc{status(500, `{"error":{"message":"boom"}}`)}, nil,
			want{errHas: []string{"after 4 attempts", "expected 200 with a chat completion, got 500", "boom"}, calls: 4}},
		{"502 then 503 then success", []http.HandlerFunc{status(502, "bad gateway"), status(503, "unavailable"), completion("third time")}, nil,
			want{text: "third time", calls: 3}},
		{"401 is not retried", []http.HandlerFunc{status(401, `{"error":{"message":"Incorrect API key provided: `+testKey+`"}}`)}, nil,
			want{errHas: []string{"got 401 Unauthorized", "[redacted]"}, calls: 1}},
		{"400 is not retried", []http.HandlerFunc{status(400, `{"error":{"message":"context length exceeded"}}`)}, nil,
			want{errHas: []string{"got 400", "context length exceeded"}, calls: 1}},
		{"garbage JSON", []http.HandlerFunc{raw(`<html>not json`)}, nil,
			want{errHas: []string{"expected a chat completion (JSON)", "<html>not json"}, calls: 1}},
		{"empty choices", []http.HandlerFunc{raw(`{"choices":[]}`)}, nil,
			want{errHas: []string{"expected at least one choice, got none"}, calls: 1}},
		{"empty content", []http.HandlerFunc{raw(`{"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"stop"}]}`)}, nil,
			want{errHas: []string{"expected text in choices[0].message.content"}, errIs: ErrEmpty, calls: 1}},
		{"null content", []http.HandlerFunc{raw(`{"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"length"}]}`)}, nil,
			want{errIs: ErrEmpty, calls: 1}},
		{"content parts", []http.HandlerFunc{raw(`{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"part one, "},{"type":"text","text":"part two"}]}}]}`)}, nil,
			want{text: "part one, part two", calls: 1}},
		{"think block stripped", []http.HandlerFunc{completion("<think>let me think</think>\n## Goal\nX")}, nil,
			want{text: "## Goal\nX", calls: 1}},
		{"error object in a 200 answer", []http.HandlerFunc{raw(`{"error":{"message":"upstream overloaded","code":503}}`), completion("recovered")}, nil,
			want{text: "recovered", calls: 2}},
		{"timeout then success", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, completion("after timeout")}, func(o *OpenAI) { o.Timeout = 100 * time.Millisecond },
			want{text: "after timeout", calls: 2}},
		{"timeouts exhausted", []http.HandlerFunc{func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}}, func(o *OpenAI) { o.Timeout = 50 * time.Millisecond; o.Retries = 1 },
			want{errHas: []string{"after 2 attempts", "expected an answer within 50ms, got none"}, errIs: errTimeout, calls: 2}},
		{"no key sends no Authorization", []http.HandlerFunc{completion("local model")}, func(o *OpenAI) { o.APIKey = "" },
			want{text: "local model", calls: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t, tc.answers...)
			o := f.client()
			var waits []time.Duration
			o.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() }
			if tc.setup != nil {
				tc.setup(o)
			}
			sum, err := o.Summarize(context.Background(), sampleLines, "aliases")
			got, degraded := sum.Text, sum.Degraded
			if degraded {
				t.Error("model summary marked degraded")
			}
			if n := int(f.calls.Load()); n != tc.want.calls {
				t.Errorf("server saw %d calls, want %d", n, tc.want.calls)
			}
			if tc.want.text != "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got != tc.want.text {
					t.Errorf("text = %q, want %q", got, tc.want.text)
				}
			} else if err == nil {
				t.Fatalf("expected an error, got text %q", got)
			}
			if err != nil {
				for _, s := range tc.want.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tc.want.errIs != nil && !errors.Is(err, tc.want.errIs) {
					t.Errorf("error %v does not wrap %v", err, tc.want.errIs)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("error leaks the API key: %v", err)
				}
			}
			if tc.name == "429 then success honours Retry-After" && (len(waits) != 1 || waits[0] != time.Second) {
				t.Errorf("waits = %v, want [1s] from Retry-After", waits)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, r := range f.reqs {
				wantAuth := "Bearer " + o.APIKey
				if o.APIKey == "" {
					wantAuth = ""
				}
				if r.auth != wantAuth {
					t.Errorf("Authorization = %q, want %q", r.auth, wantAuth)
				}
				if r.body.Model != "test-model" || r.body.MaxTokens != 1000 || r.body.Temperature != 0.2 || len(r.body.Messages) != 2 {
					t.Errorf("request body = model %q max_tokens %d temperature %v messages %d", r.body.Model, r.body.MaxTokens, r.body.Temperature, len(r.body.Messages))
				}
				if len(r.body.Messages) == 2 {
					if r.body.Messages[0].Role != "system" || r.body.Messages[1].Role != "user" {
						t.Errorf("roles = %s, %s", r.body.Messages[0].Role, r.body.Messages[1].Role)
					}
					u := r.body.Messages[1].Content
					for _, s := range []string{"<conversation>", "[User]: Rename the config loader", `[Assistant tool calls]: edit(path="config/load.go"`, "[Tool result]: Applied 1 edit", "## Goal", "Additional focus: aliases"} {
						if !strings.Contains(u, s) {
							t.Errorf("prompt lacks %q", s)
						}
					}
				}
			}
		})
	}
}

func TestOpenAIBackoffGrowsWithJitter(t *testing.T) {
	f := newFakeServer(t, status(503, "down"))
	o := f.client()
	o.Retries = 4
	o.Backoff, o.MaxBackoff = 100*time.Millisecond, 350*time.Millisecond
	var waits []time.Duration
	o.sleep = func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	if _, err := o.Summarize(context.Background(), sampleLines, ""); err == nil {
		t.Fatal("expected an error")
	}
	if len(waits) != 4 {
		t.Fatalf("waits = %v, want 4", waits)
	}
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {175, 350}, {175, 350}}
	for i, w := range waits {
		lo, hi := bounds[i][0]*time.Millisecond, bounds[i][1]*time.Millisecond
		if w < lo || w > hi {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, w, lo, hi)
		}
	}
}

func TestOpenAIContextCancelled(t *testing.T) {
	f := newFakeServer(t, status(503, "down"))
	o := f.client()
	ctx, cancel := context.WithCancel(context.Background())
	o.sleep = func(c context.Context, d time.Duration) error { cancel(); return c.Err() }
	_, err := o.Summarize(ctx, sampleLines, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}

func TestOpenAIConfigErrors(t *testing.T) {
	o := &OpenAI{BaseURL: "http://127.0.0.1:1/v1"}
	if _, err := o.Summarize(context.Background(), sampleLines, ""); !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "expected a model name") {
		t.Errorf("no model: err = %v", err)
	}
	o = &OpenAI{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Retries: 0, Timeout: time.Second}
	_, err := o.Summarize(context.Background(), sampleLines, "")
	if err == nil || !strings.Contains(err.Error(), "got a transport error") {
		t.Errorf("unreachable: err = %v", err)
	}
}

func TestOpenAINeverShowsKey(t *testing.T) {
	o := fromEnv(func(k string) string {
		return map[string]string{"OPENAI_API_KEY": testKey, EnvModel: "gpt-x"}[k]
	})
	var buf strings.Builder
	slog.New(slog.NewTextHandler(&buf, nil)).Info("client", "summarizer", o)
	for _, s := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("%v", *o), buf.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("key shown in %q", s)
		}
	}
	if o.KeySource != "OPENAI_API_KEY" || o.Model != "gpt-x" || o.APIKey != testKey || o.BaseURL != "" {
		t.Errorf("fromEnv = %s source %s", o, o.KeySource)
	}
}

func TestFromEnvOrder(t *testing.T) {
	env := map[string]string{EnvAPIKey: "a", "OPENAI_API_KEY": "b", "OPENROUTER_API_KEY": "c"}
	get := func(k string) string { return env[k] }
	if o := fromEnv(get); o.APIKey != "a" || o.KeySource != EnvAPIKey {
		t.Errorf("got source %s", o.KeySource)
	}
	delete(env, EnvAPIKey)
	if o := fromEnv(get); o.APIKey != "b" {
		t.Errorf("got source %s", o.KeySource)
	}
	delete(env, "OPENAI_API_KEY")
	if o := fromEnv(get); o.APIKey != "c" || o.BaseURL != OpenRouterBaseURL {
		t.Errorf("got source %s base %s", o.KeySource, o.BaseURL)
	}
	env[EnvBaseURL] = "http://localhost:11434/v1"
	if o := fromEnv(get); o.BaseURL != "http://localhost:11434/v1" || o.Retries != DefaultRetries || o.Temperature != DefaultTemperature {
		t.Errorf("got %s", o)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"0.5", 500 * time.Millisecond}, {"-1", 0}, {"soon", 0},
		{now.Add(7 * time.Second).Format(http.TimeFormat), 7 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.h, got, tc.want)
		}
	}
}
