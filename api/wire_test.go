package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/engine"
)

// baseBody is an assemble body of session with a base member.
func baseBody(session, base, msgs string) string {
	return fmt.Sprintf(`{"agent_id":"main","session_id":%q,"token_budget":32768,"base":%s,"messages":%s}`, session, base, msgs)
}

// TestEngineAssembleBase checks the incremental wire: a base is checked
// and handed to the engine, the engine's ack comes back, and a base the
// engine does not hold is answered 409 with need_full.
func TestEngineAssembleBase(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{}
	c := serveEngine(t, f, eng, false)
	one := `[{"role":"user","timestamp":1,"chars":1}]`
	for _, tc := range []struct {
		name, body string
		want       string
	}{
		{"negative count", baseBody(plugSessA, `{"messages":-1,"fingerprint":"0123456789abcdef"}`, one), "base.messages: expected the count of messages the base names, ≥ 0, found -1"},
		{"short fingerprint", baseBody(plugSessA, `{"messages":3,"fingerprint":"0123"}`, one), `base.fingerprint: expected 16 lowercase hexadecimal digits (the chain fingerprint of an ack), found "0123"`},
		{"no fingerprint", baseBody(plugSessA, `{"messages":3}`, one), `base.fingerprint: expected 16 lowercase hexadecimal digits`},
		{"upper case", baseBody(plugSessA, `{"messages":3,"fingerprint":"0123456789ABCDEF"}`, one), `found "0123456789ABCDEF"`},
		{"not hex", baseBody(plugSessA, `{"messages":3,"fingerprint":"0123456789abcdeg"}`, one), `found "0123456789abcdeg"`},
		{"too long", baseBody(plugSessA, `{"messages":3,"fingerprint":"0123456789abcdef0"}`, one), `found "0123456789abcdef0"`},
		{"not an object", baseBody(plugSessA, `7`, one), "request body: expected one JSON object"},
		{"too many in all", baseBody(plugSessA, fmt.Sprintf(`{"messages":%d,"fingerprint":"0123456789abcdef"}`, api.MaxAssembleMessages), one),
			fmt.Sprintf("base.messages: expected at most %d messages with the 1 sent, found %d", api.MaxAssembleMessages, api.MaxAssembleMessages+1)},
		{"a bad message after the base", baseBody(plugSessA, `{"messages":3,"fingerprint":"0123456789abcdef"}`, `[{"role":"","timestamp":1,"chars":1}]`), "messages[0].role: expected a role of 1 to 64 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b, _ := c.do("POST", "/api/plugin/v1/assemble", tc.body)
			var e struct {
				Error    string `json:"error"`
				NeedFull bool   `json:"need_full"`
			}
			if err := json.Unmarshal(b, &e); err != nil || code != 400 || !strings.Contains(e.Error, tc.want) || e.NeedFull {
				t.Fatalf("%d %s, want 400 and an error holding %q", code, b, tc.want)
			}
		})
	}
	if calls := eng.called(); len(calls) != 0 {
		t.Fatalf("the engine was called for refused requests: %v", calls)
	}

	// A base is handed to the engine with the messages after it; the ack
	// comes back in the answer.
	eng.view = engine.View{Matched: 4, Turn: 2, Ack: &engine.Ack{Messages: 6, Fingerprint: "fd3f0615f0230f88"}}
	var v map[string]json.RawMessage
	c.json("POST", "/api/plugin/v1/assemble", baseBody(plugSessA, `{"messages":3,"fingerprint":"a2706c8ebb9def19"}`, hostMessages), 200, &v)
	if got := string(v["ack"]); got != `{"messages":6,"fingerprint":"fd3f0615f0230f88"}` {
		t.Errorf("ack = %s", got)
	}
	if eng.req.Base != 3 || eng.req.BaseFingerprint != "a2706c8ebb9def19" || len(eng.req.Messages) != 3 || eng.req.Messages[2].Chars != 9000 {
		t.Errorf("engine got base %d %q and %d messages", eng.req.Base, eng.req.BaseFingerprint, len(eng.req.Messages))
	}
	// Without a base (an older plugin) the engine gets none.
	c.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, nil)
	if eng.req.Base != 0 || eng.req.BaseFingerprint != "" {
		t.Errorf("engine got base %d %q from a request without one", eng.req.Base, eng.req.BaseFingerprint)
	}

	// A base the engine does not hold, and a base of a session not stored
	// yet: 409 with need_full, and no failure in the health.
	var health struct {
		Plugin api.PluginHealth `json:"plugin"`
	}
	c.json("GET", "/api/plugin/v1/health", "", 200, &health)
	failures := health.Plugin.FailuresTotal
	eng.err = fmt.Errorf("base: no list held: %w", engine.ErrNeedFull)
	for _, body := range []string{
		baseBody(plugSessA, `{"messages":3,"fingerprint":"a2706c8ebb9def19"}`, hostMessages),
		baseBody("cccccccc-0000-4000-8000-000000000003", `{"messages":3,"fingerprint":"a2706c8ebb9def19"}`, hostMessages),
	} {
		code, b, _ := c.do("POST", "/api/plugin/v1/assemble", body)
		var e struct {
			Error    string `json:"error"`
			NeedFull bool   `json:"need_full"`
		}
		if err := json.Unmarshal(b, &e); err != nil || code != 409 || !e.NeedFull || !strings.Contains(e.Error, "send them all") {
			t.Errorf("a base not held: %d %s, want 409 with need_full", code, b)
		}
	}
	c.json("GET", "/api/plugin/v1/health", "", 200, &health)
	if health.Plugin.FailuresTotal != failures {
		t.Errorf("need_full answers were recorded as failures: %+v", health.Plugin.RecentFailures)
	}
	// Any other engine error is no need_full.
	eng.err = fmt.Errorf("boom")
	code, b, _ := c.do("POST", "/api/plugin/v1/assemble", baseBody(plugSessA, `{"messages":3,"fingerprint":"a2706c8ebb9def19"}`, hostMessages))
	if code != 500 || strings.Contains(string(b), "need_full") {
		t.Errorf("an engine failure: %d %s, want 500 without need_full", code, b)
	}
}

// TestEngineAssembleBaseOverTheEngine runs the wire over the real engine:
// the ack of a full call lets the next call send only what follows, and a
// base of another fingerprint is answered with need_full.
func TestEngineAssembleBaseOverTheEngine(t *testing.T) {
	f := newPlugFixture(t)
	eng := &engine.Engine{Store: f.set.Store, StateDir: t.TempDir()}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Engine: eng})}
	var full api.AssembleResponse
	c.json("POST", "/api/plugin/v1/assemble", assembleBody(plugSessA, hostMessages), 200, &full)
	if full.Ack == nil || full.Ack.Messages != 3 {
		t.Fatalf("a full call's ack: %+v", full.Ack)
	}
	var next api.AssembleResponse
	c.json("POST", "/api/plugin/v1/assemble", baseBody(plugSessA, fmt.Sprintf(`{"messages":3,"fingerprint":%q}`, full.Ack.Fingerprint), `[]`), 200, &next)
	if next.Ack == nil || *next.Ack != *full.Ack || next.Matched != full.Matched || len(next.Replace) != len(full.Replace) {
		t.Fatalf("a call on the base: ack %+v matched %d; the full call: ack %+v matched %d", next.Ack, next.Matched, full.Ack, full.Matched)
	}
	code, b, _ := c.do("POST", "/api/plugin/v1/assemble", baseBody(plugSessA, `{"messages":3,"fingerprint":"0000000000000000"}`, `[]`))
	if code != 409 || !strings.Contains(string(b), `"need_full":true`) {
		t.Fatalf("a base of another fingerprint: %d %s, want 409 with need_full", code, b)
	}
}
