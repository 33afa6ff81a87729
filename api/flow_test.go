package api_test

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
)

// TestRestoreWhileRunning asks for a restore while the host runs the session
// (sessions.json status "running"): the content comes back at once, the
// transcript is not touched, and the queued write-back lands on the next
// pass once the session is idle.
func TestRestoreWhileRunning(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set)})
	c := &client{tb: t, srv: srv}
	id := f.synthIDs[0]
	dir := filepath.Join(f.agents, "alpha", "sessions")
	e := firstExtracted(t, c, "alpha", id)
	var ext extractedAnswer
	c.json("GET", "/api/sessions/alpha/"+id+"/entries/"+e.ID+"/extracted", "", 200, &ext)
	v := ext.Values[0]
	_, raw, _ := c.do("GET", "/api/sessions/alpha/"+id+"/entries/"+e.ID+"/extracted?raw=true&key="+url.QueryEscape(v.Path), "")

	writeStatus(t, dir, "alpha", f.synthIDs, id, "running")
	path := filepath.Join(dir, id+".jsonl")
	before, _ := os.ReadFile(path)
	var res struct {
		Restored bool              `json:"restored"`
		Applied  bool              `json:"applied"`
		Queued   bool              `json:"queued"`
		Content  map[string]string `json:"content"`
	}
	c.json("POST", "/api/sessions/alpha/"+id+"/entries/"+e.ID+"/restore", "", 200, &res)
	if !res.Restored || res.Applied || !res.Queued || res.Content[v.Path] != v.Content {
		t.Fatalf("restore while running: restored %v applied %v queued %v", res.Restored, res.Applied, res.Queued)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, before) {
		t.Fatalf("a running session's transcript was written")
	}
	var list sessionsAnswer
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &list)
	if in := findInfo(t, list.Sessions, "alpha", id); in.Status != "running" {
		t.Errorf("listed status %q, want running", in.Status)
	}
	c.json("GET", "/api/sessions?status=running", "", 200, &list)
	if list.Total != 1 || list.Sessions[0].SessionID != id {
		t.Errorf("?status=running: %d sessions", list.Total)
	}
	// The run ends; the next pass applies the write-back.
	writeStatus(t, dir, "alpha", f.synthIDs, id, "done")
	c.json("POST", "/api/prune/run", "", 200, nil)
	now, _ := os.ReadFile(path)
	if !bytes.Contains(now, raw) {
		t.Errorf("the queued write-back was not applied after the run")
	}
}

func writeStatus(t *testing.T, dir, agent string, ids []string, id, status string) {
	t.Helper()
	writeSessionsJSON(t, dir, agent, ids)
	b, _ := os.ReadFile(filepath.Join(dir, "sessions.json"))
	key := `"agent:` + agent + `:` + id[len(id)-4:] + `":{`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		t.Fatalf("no key %s in sessions.json", key)
	}
	j := i + bytes.Index(b[i:], []byte(`"status":"done"`))
	b = append(b[:j:j], append([]byte(`"status":"`+status+`"`), b[j+len(`"status":"done"`):]...)...)
	if err := os.WriteFile(filepath.Join(dir, "sessions.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSeedVerificationPath follows the first design's verification path
// through the API (the scheduler is the daemon's; the pass is run now
// instead): config without a key, enable pruning, a session with thinking
// blocks is pruned, its extracted dir and placeholders exist, the detail
// marks the extracted entries, delete → trash → restore, retention removes
// old side values.
func TestSeedVerificationPath(t *testing.T) {
	f := newFixture(t, false)
	clock := &testClock{}
	d := newDaemonAt(t, f.set, clock)
	if _, err := d.Config().Set(t.Context(), []byte(`{"enabled":false}`)); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: d, Trash: newTrash(f)})
	c := &client{tb: t, srv: srv}
	dir := filepath.Join(f.agents, "alpha", "sessions")
	id := "00000000-0000-4000-8000-000000000099"
	writeSynth(t, dir, id, syntheticThinking())
	writeSessionsJSON(t, dir, "alpha", append(f.synthIDs, id))

	c.json("GET", "/api/config", "", 200, nil)
	c.json("POST", "/api/config", `{"enabled":true,"retention":"6h","age_threshold_hours":0}`, 200, nil)
	c.json("POST", "/api/cron/jobs/auto-trigger/run", "", 200, nil)
	if fi, err := os.Stat(filepath.Join(dir, "extracted", id)); err != nil || !fi.IsDir() {
		t.Fatalf("extracted dir: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if !bytes.Contains(b, []byte(`"thinking":"[[extracted-`)) {
		t.Fatalf("no thinking placeholder in the transcript")
	}
	e := firstExtracted(t, c, "alpha", id)
	if !e.Extracted {
		t.Fatal("no extracted marker")
	}
	c.json("DELETE", "/api/sessions/alpha/"+id, "", 200, nil)
	if _, err := os.Stat(filepath.Join(dir, "extracted", id)); !os.IsNotExist(err) {
		t.Errorf("extracted dir still there after delete: %v", err)
	}
	c.json("POST", "/api/trash/alpha/"+id+"/restore", "", 200, nil)
	if _, err := os.Stat(filepath.Join(dir, "extracted", id)); err != nil {
		t.Errorf("extracted dir not back after restore: %v", err)
	}
	c.json("GET", "/api/sessions/alpha/"+id+"/entries/"+e.ID+"/extracted?preview=200", "", 200, nil)
	// Seven hours later, retention removes the values.
	clock.setNow(func() time.Time { return time.Now().Add(7 * time.Hour) })
	var run struct {
		Report struct {
			Cleaned int `json:"cleaned"`
		} `json:"report"`
	}
	c.json("POST", "/api/retention/run", "", 200, &run)
	if run.Report.Cleaned == 0 {
		t.Errorf("retention cleaned nothing")
	}
	if code, body, _ := c.do("GET", "/api/sessions/alpha/"+id+"/entries/"+e.ID+"/extracted", ""); code != 404 || !strings.Contains(string(body), "retention") {
		t.Errorf("extracted after retention: %d %s", code, body)
	}
}
