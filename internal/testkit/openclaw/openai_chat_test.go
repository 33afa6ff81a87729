package openclaw

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// sse posts body to the model's /v1/chat/completions and returns the status and the data of its events.
func sse(t *testing.T, m *Model, body string) (int, []string) {
	t.Helper()
	resp, err := http.Post(m.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	return resp.StatusCode, data
}

// TestModelOpenAIStream checks the streamed chat-completions answers an agent gets: the scripted tool call, the
// final text after its result, and the refusal of an unpaired request; all recorded as chat requests.
func TestModelOpenAIStream(t *testing.T) {
	m, err := StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.RejectUnpaired(true)
	tools := `"tools":[{"type":"function","function":{"name":"read","parameters":{}}}]`
	tests := []struct {
		name, msgs string
		status     int
		want       []string // substrings of the events, in order
	}{
		{"call", `[{"role":"system","content":"s"},{"role":"user","content":"go CALL:read:{\"path\":\"a\"}"}]`, http.StatusOK,
			[]string{`"tool_calls":[{"function":{"arguments":"{\"path\":\"a\"}","name":"read"},"id":"call_1","index":0,"type":"function"}]`,
				`"finish_reason":"tool_calls"`, `"usage":{"completion_tokens":5`, `[DONE]`}},
		{"final", `[{"role":"user","content":[{"type":"text","text":"go CALL:read:{\"path\":\"a\"}"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"r"}]`, http.StatusOK,
			[]string{`"content":"model final 2"`, `"finish_reason":"stop"`, `[DONE]`}},
		{"orphan", `[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"x","content":"r"}]`, http.StatusBadRequest,
			[]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, data := sse(t, m, `{"model":"mm","stream":true,"stream_options":{"include_usage":true},"messages":`+tt.msgs+`,`+tools+`}`)
			if status != tt.status {
				t.Fatalf("HTTP %d, want %d (%v)", status, tt.status, data)
			}
			all := strings.Join(data, "\n")
			at := 0
			for _, w := range tt.want {
				i := strings.Index(all[at:], w)
				if i < 0 {
					t.Fatalf("events lack %s after byte %d:\n%s", w, at, all)
				}
				at += i + len(w)
			}
			for _, d := range data {
				if d != "[DONE]" && !json.Valid([]byte(d)) {
					t.Errorf("event is not JSON: %s", d)
				}
			}
		})
	}
	reqs := m.Requests()
	if len(reqs) != 3 || reqs[2].Unpaired == nil || len(m.SummaryRequests()) != 0 {
		t.Fatalf("chat requests %+v, summary requests %d", reqs, len(m.SummaryRequests()))
	}
}
