package daemon_test

import (
	"context"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

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
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents)})
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
	for _, m := range placeholder.FindAllSubmatch(data, -1) {
		if id := string(m[1]); len(ids) == 0 || ids[len(ids)-1] != id {
			ids = append(ids, id)
		}
	}
	if len(ids) < 2 {
		t.Fatalf("%d extracted entries, want 2 or more", len(ids))
	}
	h, err := d.Handler(ctx, api.Options{}) // made while idle_seconds is 0
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
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
