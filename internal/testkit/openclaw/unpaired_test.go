package openclaw

import (
	"net/http"
	"strings"
	"testing"
)

func TestCheckPairing(t *testing.T) {
	const (
		user      = `{"role":"user","content":"hi"}`
		text      = `{"role":"assistant","content":"ok"}`
		callsAB   = `{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"read"}},{"id":"b","function":{"name":"exec"}}]}`
		callNoID  = `{"role":"assistant","content":"","tool_calls":[{"function":{"name":"read","arguments":{}}}]}`
		toolA     = `{"role":"tool","tool_call_id":"a","content":"r"}`
		toolB     = `{"role":"tool","tool_call_id":"b","content":"r"}`
		toolX     = `{"role":"tool","tool_call_id":"x","content":"r"}`
		ollamaRes = `{"role":"tool","content":"r","tool_name":"read"}`
	)
	body := func(msgs ...string) []byte {
		return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`)
	}
	tests := []struct {
		name  string
		body  []byte
		index int    // -1: paired
		text  string // part of the error text
	}{
		{"no tools", body(user, text, user), -1, ""},
		{"paired, OpenAI ids", body(user, callsAB, toolA, toolB, text, user), -1, ""},
		{"paired, answered out of order", body(user, callsAB, toolB, toolA, user), -1, ""},
		{"paired, Ollama without ids", body(user, callNoID, ollamaRes, text, user), -1, ""},
		{"missing result before the next user message", body(user, callsAB, toolA, user), 1, "did not have response messages: b"},
		{"all results missing", body(user, callsAB, text, user), 1, "did not have response messages: a, b"},
		{"Ollama: missing result named by function", body(user, callNoID, user), 1, "did not have response messages: read#0"},
		{"calls at the end", body(user, callsAB), 1, "did not have response messages: a, b"},
		{"tool after a user message", body(user, toolA, user), 1, OrphanToolError},
		{"tool after a text answer", body(user, text, ollamaRes, user), 2, OrphanToolError},
		{"tool first", body(toolA, user), 0, OrphanToolError},
		{"tool answering an id of no call", body(user, callsAB, toolA, toolX, toolB, user), 3, OrphanToolError},
		{"a result too many (Ollama)", body(user, callNoID, ollamaRes, ollamaRes, user), 3, OrphanToolError},
		{"the same id answered twice", body(user, callsAB, toolA, toolA, toolB, user), 3, OrphanToolError},
		{"not JSON", []byte("nope"), -1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u := CheckPairing(tc.body)
			if tc.index < 0 {
				if u != nil {
					t.Fatalf("CheckPairing = %v, want paired", u)
				}
				return
			}
			if u == nil || u.Index != tc.index || !strings.Contains(u.Message, tc.text) {
				t.Fatalf("CheckPairing = %v, want messages.[%d] with %q", u, tc.index, tc.text)
			}
		})
	}
}

// TestModelRejectsUnpaired checks the switch on both chat endpoints: off, unpaired requests are answered; on,
// they are refused with the provider's 400 body and recorded, and paired ones are still answered.
func TestModelRejectsUnpaired(t *testing.T) {
	m, err := StartModel()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	orphan := `"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"r","tool_name":"read"},{"role":"user","content":"again"}]`
	paired := `"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"read","arguments":{}}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"again"}]`
	chat := func(msgs string) string { return `{"model":"x","stream":false,` + msgs + `,"tools":[]}` }
	sum := func(msgs string) string { return `{"model":"x",` + msgs + `}` }
	for _, ep := range []struct {
		path string
		body func(string) string
	}{{"/api/chat", chat}, {"/v1/chat/completions", sum}} {
		if status, _ := post(t, m, ep.path, ep.body(orphan)); status != http.StatusOK {
			t.Fatalf("%s with the switch off: HTTP %d, want 200", ep.path, status)
		}
	}
	m.RejectUnpaired(true)
	for _, ep := range []struct {
		path string
		body func(string) string
	}{{"/api/chat", chat}, {"/v1/chat/completions", sum}} {
		status, out := post(t, m, ep.path, ep.body(orphan))
		e, _ := out["error"].(map[string]any)
		if status != http.StatusBadRequest || e["message"] != OrphanToolError || e["type"] != "invalid_request_error" ||
			e["param"] != "messages.[1].role" {
			t.Fatalf("%s unpaired: HTTP %d, %v", ep.path, status, out)
		}
		if status, _ := post(t, m, ep.path, ep.body(paired)); status != http.StatusOK {
			t.Fatalf("%s paired: HTTP %d, want 200", ep.path, status)
		}
	}
	rej := m.Rejected()
	if len(rej) != 2 || rej[0].Status != http.StatusBadRequest || rej[0].Unpaired.Index != 1 || rej[1].Unpaired == nil {
		t.Fatalf("rejected: %+v", rej)
	}
	reqs := m.Requests()
	if len(reqs) != 3 || reqs[0].Unpaired != nil || reqs[1].Unpaired == nil || reqs[2].Unpaired != nil || reqs[2].Status != http.StatusOK {
		t.Fatalf("chat requests: %+v", reqs)
	}
	m.RejectUnpaired(false)
	if status, _ := post(t, m, "/api/chat", chat(orphan)); status != http.StatusOK {
		t.Fatalf("after RejectUnpaired(false): HTTP %d", status)
	}
}
