package daemon_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// TestSeedVerificationPath is the first design's verification path, end to
// end against the real daemon and API on loopback: the config is reachable
// without a key, pruning is enabled, the scheduled run (a real one-second
// cron) extracts the thinking blocks of a session, the extracted dir and the
// placeholders are there, the API marks the extracted values, delete moves
// the session to the trash and restore brings it back byte for byte, and
// retention deletes old values.
func TestSeedVerificationPath(t *testing.T) {
	root := t.TempDir()
	agents, sessions, err := demo.Write(root, demo.Options{Agents: []string{"main"}, Sessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := sessions[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Retention's clock runs 31 minutes ahead: values extracted now are
	// older than the shortest retention (30m) for it.
	later := clockFunc(func() time.Time { return time.Now().Add(31 * time.Minute) })
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Retention: daemon.Retention(nil, later)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The API over the daemon, as `brainsurgeon serve` builds it.
	set, err := wiring.OpenFor(ctx, d, "")
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Options{Installation: set.Installation, Backend: set, Daemon: d})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	// 1. The config is reachable without a key when none is set.
	var cfg map[string]any
	apitest.Call(t, srv, "GET", "/api/config", "", 200, &cfg)
	if cfg["enabled"] != false {
		t.Fatalf("a new config has pruning enabled: %v", cfg["enabled"])
	}
	// 2. Enable pruning, every second.
	apitest.Call(t, srv, "POST", "/api/config", `{"enabled":true,"auto_cron":"* * * * * *","age_threshold_hours":0,"idle_seconds":0}`, 200, nil)

	// 3–4. The session has thinking blocks; the scheduled run happens.
	before, _ := os.ReadFile(s.Path)
	if !bytes.Contains(before, []byte(`"type":"thinking"`)) {
		t.Fatal("the demo session has no thinking blocks")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(s.Path)
		if bytes.Contains(b, []byte(`"thinking":"[[extracted-`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scheduled run extracted the thinking blocks in 30 s; status: %s", apitest.Call(t, srv, "GET", "/api/scheduler/status", "", 200, nil))
		}
		time.Sleep(100 * time.Millisecond)
	}
	var status daemon.Status
	apitest.Call(t, srv, "GET", "/api/scheduler/status", "", 200, &status)
	if status.Prune.Cron != "* * * * * *" || !status.Prune.Scheduled {
		t.Errorf("scheduler status %+v", status.Prune)
	}

	// 5. The extracted dir is there and the transcript has placeholders.
	side := filepath.Join(filepath.Dir(s.Path), "extracted", s.ID)
	if fi, err := os.Stat(side); err != nil || !fi.IsDir() {
		t.Fatalf("extracted dir %s: %v", side, err)
	}
	// Stop the schedule so the files stay as they are from here on.
	apitest.Call(t, srv, "POST", "/api/config", `{"enabled":false}`, 200, nil)
	for i := 0; i < 50 && d.Status().Prune.Running; i++ {
		time.Sleep(20 * time.Millisecond)
	}

	// 6. The API marks extracted values (the UI shows them as badges) and
	// serves one.
	var detail struct {
		Entries []api.EntryView `json:"entries"`
	}
	apitest.Call(t, srv, "GET", "/api/sessions/main/"+s.ID+"?limit=2000", "", 200, &detail)
	var extracted api.EntryView
	for _, e := range detail.Entries {
		if e.Extracted {
			extracted = e
			break
		}
	}
	if extracted.ID == "" {
		t.Fatalf("no entry marked extracted among %d", len(detail.Entries))
	}
	apitest.Call(t, srv, "GET", "/api/sessions/main/"+s.ID+"/entries/"+extracted.ID+"/extracted?preview=200", "", 200, nil)

	// 7. Delete → trash; restore → back, byte for byte.
	pruned, _ := os.ReadFile(s.Path)
	apitest.Call(t, srv, "DELETE", "/api/sessions/main/"+s.ID, "", 200, nil)
	if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
		t.Fatalf("transcript still there after delete: %v", err)
	}
	var items []map[string]any
	apitest.Call(t, srv, "GET", "/api/trash", "", 200, &items)
	if len(items) != 1 || items[0]["session_id"] != s.ID {
		t.Fatalf("trash: %v", items)
	}
	apitest.Call(t, srv, "POST", "/api/trash/main/"+s.ID+"/restore", "", 200, nil)
	if back, _ := os.ReadFile(s.Path); !bytes.Equal(back, pruned) {
		t.Fatal("the restored transcript differs from the one deleted")
	}
	apitest.Call(t, srv, "GET", "/api/sessions/main/"+s.ID+"/entries/"+extracted.ID+"/extracted", "", 200, nil)

	// 8. Retention deletes old side values.
	apitest.Call(t, srv, "POST", "/api/config", `{"retention":"30m","retention_scope":"all"}`, 200, nil)
	var run struct {
		Report struct {
			Cleaned int `json:"cleaned"`
		} `json:"report"`
	}
	apitest.Call(t, srv, "POST", "/api/retention/run", "", 200, &run)
	if run.Report.Cleaned == 0 {
		t.Fatal("retention cleaned nothing")
	}
	apitest.Call(t, srv, "GET", "/api/sessions/main/"+s.ID+"/entries/"+extracted.ID+"/extracted", "", 404, nil)
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
