package daemon_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestEngineFollowsConfig checks the daemon's context engine: the API's
// Control is an EngineSource, the engine is made from the runtime config
// (extraction policy, compaction thresholds, the stores' state dir), kept
// while the config is unchanged, made again after a change, and none is
// given once the daemon is closed.
func TestEngineFollowsConfig(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents)})
	if err != nil {
		t.Fatal(err)
	}
	src, ok := daemon.ControlOf(d).(api.EngineSource)
	if !ok {
		t.Fatal("the daemon's Control is not an api.EngineSource")
	}
	e := src.Engine()
	if e == nil || e.Store == nil || e.StateDir == "" || e.Summarizer == nil || e.Settings.WarnAt != 3 {
		t.Fatalf("engine %+v, want one over the stores with the config's settings", e)
	}
	if src.Engine() != e {
		t.Error("a second request got another engine while the config is unchanged")
	}
	if _, err := d.Config().Set(ctx, []byte(`{"keep_recent":7,"compaction":{"warn_at":2}}`)); err != nil {
		t.Fatal(err)
	}
	n := src.Engine()
	if n == e || n.Policy.KeepRecent != 7 || n.Settings.WarnAt != 2 {
		t.Errorf("after a config change: same engine %v, keep_recent %d, warn_at %d; want a new one with 7 and 2", n == e, n.Policy.KeepRecent, n.Settings.WarnAt)
	}
	d.Close()
	if src.Engine() != nil {
		t.Error("an engine after Close")
	}
}

// TestStatusCountsEngineCalls checks that the daemon's status (GET
// /api/cron/status) and GET /api/health count the assemble calls its API
// answered, with the same "engine" object.
func TestStatusCountsEngineCalls(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	h, err := d.Handler(ctx, api.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// A session the store does not hold yet passes through; a negative
	// budget fails.
	unknown := `{"agent_id":"main","session_id":"cccccccc-0000-4000-8000-000000000003","messages":[{"role":"user","timestamp":1,"chars":10}]}`
	apitest.Call(t, srv, "POST", "/api/plugin/v1/assemble", unknown, http.StatusOK, nil)
	apitest.Call(t, srv, "POST", "/api/plugin/v1/assemble", `{"session_id":"x","token_budget":-1}`, http.StatusBadRequest, nil)
	var status, health struct {
		Engine engine.Stats `json:"engine"`
	}
	apitest.Call(t, srv, "GET", "/api/cron/status", "", http.StatusOK, &status)
	apitest.Call(t, srv, "GET", "/api/health", "", http.StatusOK, &health)
	for name, st := range map[string]engine.Stats{"cron status": status.Engine, "health": health.Engine, "Status": d.Status().Engine} {
		if st.Views != 0 || st.Passthroughs != 1 || st.Failures != 1 || st.LastViewAt != nil || st.LatencyMS.Count != 2 || st.LatencyMS.Max <= 0 {
			t.Errorf("%s: engine %+v; want 1 pass-through and 1 failure, measured", name, st)
		}
	}
	raw := apitest.Call(t, srv, "GET", "/api/cron/status", "", http.StatusOK, nil)
	if !strings.Contains(string(raw), `"engine":{"views":0,"passthroughs":1,"failures":1,"last_view_at":null,"latency_ms":{"count":2,"p50":`) {
		t.Errorf("cron status %s lacks the engine object", raw)
	}
}
