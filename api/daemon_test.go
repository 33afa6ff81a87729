package api_test

// The API over a real daemon: what it takes from the daemon (the engine
// meter, the trash, the Restorer that follows the runtime config). These
// tests were the daemon's while the daemon built the API's handler.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// TestStatusCountsEngineCalls checks that the daemon's status (GET
// /api/cron/status) and GET /api/health count the assemble calls its API
// answered, with the same "engine" object.
func TestStatusCountsEngineCalls(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	srv := httptest.NewServer(daemonHandler(t, d, api.Options{}))
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

// Leftovers collected into the trash are listed by GET /api/trash and put
// back, byte for byte with their times, by POST /api/trash/…/restore.
func TestLeftoversRestoreAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	live, err := os.ReadFile(sessions[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	bak := sessions[0].Path + ".bak-1-1767225600000"
	if err := os.WriteFile(bak, live, 0o640); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(bak, old, old); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	found, _, err := set.Store.(bs.LeftoverScanner).Leftovers(ctx)
	if err != nil || len(found) != 1 || found[0].Path != bak || found[0].Unique {
		t.Fatalf("leftovers %+v, %v; want the copy %s", found, err, bak)
	}
	item, err := trash.New(set.Store, set.AgentsDir, set.StateDir).Collect(ctx, found, trash.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}

	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	srv := httptest.NewServer(daemonHandler(t, d, api.Options{}))
	defer srv.Close()
	var items []map[string]any
	apitest.Call(t, srv, "GET", "/api/trash", "", 200, &items)
	if len(items) != 1 || items[0]["id"] != item.ID || items[0]["kind"] != trash.ItemLeftovers {
		t.Fatalf("trash: %v", items)
	}
	apitest.Call(t, srv, "POST", "/api/trash/main/"+item.ID+"/restore", "", 200, nil)
	back, err := os.ReadFile(bak)
	if err != nil || string(back) != string(live) {
		t.Fatalf("the leftover is not back as it was: %v", err)
	}
	if fi, err := os.Stat(bak); err != nil || !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o640 {
		t.Errorf("restored %v, want mtime %v and mode 0640", fi, old)
	}
	if _, err := os.Stat(filepath.Join(set.StateDir, "trash", item.ID)); !os.IsNotExist(err) {
		t.Errorf("the item is still in the trash: %v", err)
	}
}

// TestAPIRestoreFollowsConfig checks that a restore through the daemon's
// API uses the runtime config of the moment, not the one the handler was
// made with: after POST /api/config raises idle_seconds, a restore into a
// session the host wrote a moment ago is queued, not written back (it
// was written back with the handler's idle_seconds 0 before the fix);
// once idle_seconds is 0 again, the next restore is written back at once.
func TestAPIRestoreFollowsConfig(t *testing.T) {
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 1, Size: 96 << 10})
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Config().Set(ctx, []byte(`{"enabled":true,"age_threshold_hours":0,"idle_seconds":0}`)); err != nil {
		t.Fatal(err)
	}
	if r, err := d.RunPruneNow(ctx); err != nil || r.Extracted != 1 {
		t.Fatalf("prune = %+v, %v; want the session extracted", r, err)
	}
	data, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range placeholderRE.FindAllSubmatch(data, -1) {
		if id := string(m[1]); len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 {
		t.Fatalf("%d extracted entries, want 2 or more", len(ids))
	}
	srv := httptest.NewServer(daemonHandler(t, d, api.Options{})) // made while idle_seconds is 0
	defer srv.Close()

	tests := []struct {
		name    string
		config  string
		entry   string
		applied bool
	}{
		{"idle_seconds raised: queued", `{"idle_seconds":300}`, ids[0], false},
		{"idle_seconds 0 again: written back", `{"idle_seconds":0}`, ids[1], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apitest.Call(t, srv, "POST", "/api/config", tt.config, 200, nil)
			now := time.Now()
			if err := os.Chtimes(s.Path, now, now); err != nil { // the host just wrote
				t.Fatal(err)
			}
			var res struct {
				Restored bool `json:"restored"`
				Applied  bool `json:"applied"`
				Queued   bool `json:"queued"`
			}
			apitest.Call(t, srv, "POST", "/api/sessions/main/"+s.ID+"/entries/"+tt.entry+"/restore", "", 200, &res)
			if !res.Restored || res.Applied != tt.applied || res.Queued == tt.applied {
				t.Fatalf("restore after %s = %+v, want applied %v", tt.config, res, tt.applied)
			}
		})
	}
}
