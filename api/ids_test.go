package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/demo"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// TestSessionIDsAsTheCLI names sessions in API paths the ways the CLI
// accepts after "agent/": the whole id, a unique prefix of 8 characters,
// the session key; a prefix shorter than 8 characters and an unknown id
// are 404s that say what was expected.
func TestSessionIDsAsTheCLI(t *testing.T) {
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "alpha", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Two ids that share their first 7 characters.
	ids := []string{"3f2a9c1e-5b7d-4e21-9a0c-1d2e3f4a5b6c", "3f2a9c1f-0a1b-4c2d-8e3f-4a5b6c7d8e9f"}
	for i, id := range ids {
		writeSynth(t, dir, id, synth.Options{Size: 8 << 10, Seed: uint64(i + 1), MinResult: 600, MaxResult: 1200})
	}
	writeSessionsJSON(t, dir, "alpha", ids)
	// A file with a transcript's name but not its content.
	if err := os.WriteFile(filepath.Join(dir, "notes.jsonl"), []byte("{\"a\":1}\n{\"a\":2}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	id := ids[0]
	key := "agent:alpha:" + id[len(id)-4:] // as writeSessionsJSON names it
	for _, tt := range []struct {
		name, id string
		want     int
		msg      string
	}{
		{"WholeID", id, 200, ""},
		{"Prefix8", id[:8], 200, ""},
		{"PrefixLonger", id[:13], 200, ""},
		{"Key", key, 200, ""},
		{"KeySuffix", "alpha:" + id[len(id)-4:], 200, ""},
		{"Prefix7", id[:7], 404, "8 characters or more"},
		{"Unknown", "ffffffff-0000", 404, "no session"},
		{"NotTranscript", "notes", 400, "notes.jsonl is not a transcript: expected JSON lines"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := c.do("GET", "/api/sessions/alpha/"+tt.id+"/context/status", "")
			if code != tt.want {
				t.Fatalf("GET …/alpha/%s/context/status: %d %s, want %d", tt.id, code, body, tt.want)
			}
			if tt.want != 200 {
				if !strings.Contains(string(body), tt.msg) {
					t.Errorf("error %s, want it to say %q", body, tt.msg)
				}
				return
			}
			var detail struct {
				Session struct {
					SessionID string `json:"session_id"`
				} `json:"session"`
			}
			c.json("GET", "/api/sessions/alpha/"+tt.id+"?limit=1", "", 200, &detail)
			if detail.Session.SessionID != id {
				t.Errorf("GET …/alpha/%s: session_id %q, want %q", tt.id, detail.Session.SessionID, id)
			}
		})
	}
}

// TestBadEntryIDSaysWhatWasExpected sends entry ids that are not ids and
// wants a 400 that names the parameter, says an entry id was expected and
// shows what was found (and never calls it a session).
func TestBadEntryIDSaysWhatWasExpected(t *testing.T) {
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	s := sessions[0]
	for _, tt := range []struct{ name, seg, found string }{
		{"Hidden", ".abc", `found ".abc", which starts with '.'`},
		{"Space", "a%20b", `found "a b", which contains ' '`},
		{"Dotdot", "..", `found "..", a relative path element`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := c.do("GET", "/api/sessions/"+s.Agent+"/"+s.ID+"/entries/"+tt.seg+"/extracted", "")
			var e struct {
				Error string `json:"error"`
			}
			_ = json.Unmarshal(body, &e)
			if code != http.StatusBadRequest {
				t.Fatalf("%d %s, want 400", code, body)
			}
			t.Log(e.Error)
			for _, want := range []string{"invalid entry_id", "expected an entry id", tt.found} {
				if !strings.Contains(e.Error, want) {
					t.Errorf("error %q, want it to say %q", e.Error, want)
				}
			}
			if strings.Contains(e.Error, "session") && !strings.Contains(e.Error, "/api/sessions") {
				t.Errorf("error %q speaks of sessions for an entry id", e.Error)
			}
		})
	}
}

// TestObsoleteConfigField posts the obsolete scan_interval_seconds: a 400
// whose fields say why it would change nothing, and the config unchanged.
func TestObsoleteConfigField(t *testing.T) {
	agents, _, err := demo.Write(t.TempDir(), demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set, Daemon: newDaemon(t, set)})}
	var ans struct {
		Error  string            `json:"error"`
		Fields map[string]string `json:"fields"`
	}
	c.json("POST", "/api/config", `{"keep_recent": 9, "scan_interval_seconds": 30}`, 400, &ans)
	if msg := ans.Fields["scan_interval_seconds"]; !strings.Contains(msg, "obsolete") || !strings.Contains(msg, "auto_cron") {
		t.Errorf("fields %v, want scan_interval_seconds called obsolete, with auto_cron as the reason", ans.Fields)
	}
	var cfg map[string]any
	c.json("GET", "/api/config", "", 200, &cfg)
	if _, ok := cfg["scan_interval_seconds"]; ok || cfg["keep_recent"] == float64(9) {
		t.Errorf("config after the refused post: %v", cfg)
	}
}
