package api_test

import (
	"fmt"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/engine"
)

// TestEngineAssembleHostCall checks that assemble hands the engine which
// of the host's calls it serves (host_call) and, on the turn-start call,
// the host's reserve (max_output_tokens); a value it does not know, or
// none (an older plugin), is a call whose plugin does not say.
func TestEngineAssembleHostCall(t *testing.T) {
	f := newPlugFixture(t)
	eng := &fakeEngine{view: engine.View{Replace: []engine.Replacement{}, Layers: []string{}}}
	c := serveEngine(t, f, eng, false)
	for _, tc := range []struct {
		name, extra string
		call        string
		reserve     int
	}{
		{"turn start", `,"host_call":"turn_start","max_output_tokens":20000`, engine.CallTurnStart, 20000},
		{"model request", `,"host_call":"model_request"`, engine.CallModelRequest, 0},
		{"a reserve on another call is ignored", `,"host_call":"model_request","max_output_tokens":20000`, engine.CallModelRequest, 0},
		{"an older plugin", ``, "", 0},
		{"a call this daemon does not know", `,"host_call":"warmup","max_output_tokens":20000`, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"token_budget":64990,"model":"m","prompt_chars":12%s,"messages":%s}`, plugSessA, tc.extra, hostMessages)
			c.json("POST", "/api/plugin/v1/assemble", body, 200, nil)
			if eng.req.HostCall != tc.call || eng.req.ReserveTokens != tc.reserve || eng.req.TokenBudget != 64990 || len(eng.req.Messages) != 3 {
				t.Errorf("engine request: host call %q, reserve %d, budget %d, %d messages; want %q, %d, 64990, 3",
					eng.req.HostCall, eng.req.ReserveTokens, eng.req.TokenBudget, len(eng.req.Messages), tc.call, tc.reserve)
			}
		})
	}
}
