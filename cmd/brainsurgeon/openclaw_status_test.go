package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/brainsurgeon/brainsurgeon/internal/openclawinstall"
)

// fakeDaemon answers GET /api/health and GET /api/plugin/v1/health as the
// daemon does; the plugin route accepts only *key.
func fakeDaemon(t *testing.T, agents string, key *string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		act := map[string]any{"last_call_at": nil, "last_ok_at": nil, "last_view_at": nil, "views": 0, "recent_failures": []any{}, "failures_total": 0}
		switch r.URL.Path {
		case "/api/health":
			json.NewEncoder(w).Encode(map[string]any{"status": "ok", "version": "test", "agents_dir": agents, "key_file": "", "auth_required": true, "plugin": act})
		case "/api/plugin/v1/health":
			if r.Header.Get("X-API-Key") != *key {
				w.WriteHeader(http.StatusForbidden)
				w.Write([]byte(`{"error":"invalid API key"}`))
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "plugin": act})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// installPrinted installs the plugin without --link for the daemon at url
// and writes the printed config into openclaw.json, as a user does; it
// returns the install's JSON result.
func installPrinted(t *testing.T, root, url string) openclawinstall.InstallResult {
	t.Helper()
	code, out, errOut := run(t, "openclaw", "install", "--daemon-url", url, "--json")
	if code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errOut)
	}
	var res openclawinstall.InstallResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "openclaw.json"), []byte(res.Snippet), 0o600); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestOpenClawStatusChecks: openclaw status (and doctor) exit 0 while the
// daemon accepts the plugin's key, and 1 naming the cause and the fix when
// the daemon refuses it or is down.
func TestOpenClawStatusChecks(t *testing.T) {
	root := openclawRoot(t)
	agents := filepath.Join(root, "agents")
	if err := os.MkdirAll(filepath.Join(agents, "main", "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := ""
	srv := fakeDaemon(t, agents, &key)
	res := installPrinted(t, root, srv.URL)
	if res.Next == nil || res.Next.Daemon != openclawinstall.DaemonRunning || res.Next.Commands[0] != "openclaw gateway restart" {
		t.Errorf("install's next steps: %+v", res.Next)
	}
	b, err := os.ReadFile(res.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key = strings.TrimSpace(string(b))

	type status struct {
		Healthy bool                    `json:"healthy"`
		Checks  []openclawinstall.Check `json:"checks"`
		Error   string                  `json:"error"`
	}
	get := func() (int, status, string) {
		code, out, errOut := run(t, "openclaw", "status", "--json")
		var st status
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("status --json: %v\n%s\n%s", err, out, errOut)
		}
		return code, st, out
	}
	if code, st, out := get(); code != 0 || !st.Healthy || len(st.Checks) != 6 {
		t.Fatalf("healthy: exit %d\n%s", code, out)
	}
	if code, out, _ := run(t, "openclaw", "status"); code != 0 || !strings.Contains(out, "Healthy:     yes (6 checks passed)") {
		t.Errorf("text: exit %d\n%s", code, out)
	}

	key = "the-key-of-an-earlier-install"
	code, st, out := get()
	if code != 1 || st.Healthy || !strings.Contains(st.Error, "key_accepted") {
		t.Fatalf("wrong key: exit %d\n%s", code, out)
	}
	code, text, _ := run(t, "openclaw", "status")
	if code != 1 || !strings.Contains(text, "FAIL  key_accepted") || !strings.Contains(text, "403 invalid API key") || !strings.Contains(text, "fix: ") {
		t.Errorf("wrong key, text: exit %d\n%s", code, text)
	}
	code, dout, derr := run(t, "doctor", "--agents-dir", agents)
	if code != 1 || !strings.Contains(dout, "FAIL  key_accepted") || !strings.Contains(derr, "not working together") {
		t.Errorf("doctor, wrong key: exit %d\n%s\n%s", code, dout, derr)
	}

	srv.Close()
	code, st, out = get()
	if code != 1 || st.Healthy || !strings.Contains(st.Error, "daemon_reachable") {
		t.Fatalf("daemon down: exit %d\n%s", code, out)
	}
	for _, c := range st.Checks {
		if c.Name == "daemon_reachable" && !strings.Contains(c.Fix, "brainsurgeon serve") {
			t.Errorf("daemon down: fix %q", c.Fix)
		}
	}
	code, text, _ = run(t, "openclaw", "install", "--daemon-url", srv.URL)
	if code != 0 || !strings.Contains(text, "Next, run:\n  brainsurgeon serve --addr "+strings.TrimPrefix(srv.URL, "http://")+"\n  openclaw gateway restart\n") {
		t.Errorf("install with the daemon down: exit %d\n%s", code, text)
	}
}

// sourceTranscript is a JSONL session whose tool result the plugin stored
// at the source: the host wrote the placeholder.
const sourceTranscript = `{"type":"session","version":3,"id":"s1","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/work"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-02-18T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list files"}]}}
{"type":"message","id":"r1","parentId":"u1","timestamp":"2026-02-18T09:00:02.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":"[[extracted-tc-call_1]] BrainSurgeon stored this exec result (11 characters) outside the transcript."}],"isError":false}}
`

const sourceContent = `[{"type":"text","text":"a.txt\nb.txt \u00e9"}]`

// sourceAgents writes sourceTranscript and its side record under the
// OpenClaw root and returns the transcript's path.
func sourceAgents(t *testing.T, root string, idleSeconds int) string {
	t.Helper()
	ctx := context.Background()
	agents := filepath.Join(root, "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s1.jsonl")
	if err := os.WriteFile(path, []byte(sourceTranscript), 0o600); err != nil {
		t.Fatal(err)
	}
	saveConfig(t, agents, func(c *config.Config) { c.IdleSeconds = idleSeconds })
	set, err := backend.Open(ctx, agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	ph := `[{"type":"text","text":"[[extracted-tc-call_1]] BrainSurgeon stored this exec result (11 characters) outside the transcript."}]`
	now := time.Now()
	rec := &extract.Record{Session: ref.String(), EntryID: "tc-call_1", TriggerType: string(bs.TriggerToolResult), ExtractedAt: now}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, []byte(sourceContent), []byte(ph), now))
	if _, err := extract.SaveRecord(ctx, set.Side, ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := set.Side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	return path
}

func contentOf(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	s, e, ok := jsonedit.Find([]byte(lines[2]), "/message/content")
	if !ok {
		t.Fatalf("no content in %s", lines[2])
	}
	return lines[2][s:e]
}

// installPlain installs the plugin without linking it: OpenClaw's config
// stays as it is.
func installPlain(t *testing.T) {
	t.Helper()
	if code, out, errOut := run(t, "openclaw", "install", "--daemon-url", "http://127.0.0.1:1"); code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, errOut)
	}
}

type uninstallJSON struct {
	Cleanup struct {
		AppliedFromQueue int `json:"applied_from_queue"`
		WrittenBack      int `json:"written_back"`
		Queued           int `json:"queued"`
		Kept             int `json:"kept"`
		Sessions         []struct {
			Session     string   `json:"session"`
			WrittenBack []string `json:"written_back"`
			Queued      []string `json:"queued"`
			Kept        []struct {
				Key string `json:"key"`
			} `json:"kept"`
		} `json:"sessions"`
	} `json:"cleanup"`
	Next struct {
		Restart []string `json:"restart"`
	} `json:"next"`
}

func uninstall(t *testing.T, args ...string) (int, uninstallJSON, string, string) {
	t.Helper()
	code, out, errOut := run(t, append([]string{"openclaw", "uninstall", "--yes", "--json"}, args...)...)
	var u uninstallJSON
	if err := json.Unmarshal([]byte(out), &u); err != nil {
		t.Fatalf("uninstall --json: %v\n%s\n%s", err, out, errOut)
	}
	return code, u, out, errOut
}

// TestOpenClawUninstallWritesBack: uninstall writes the offloaded tool
// results back (an idle session at once, byte-identical to the side
// store's bytes; a busy one queued, then applied by the next uninstall
// once idle) unless --keep-placeholders.
func TestOpenClawUninstallWritesBack(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		root := openclawRoot(t)
		path := sourceAgents(t, root, 0)
		installPlain(t)
		code, u, out, errOut := uninstall(t)
		if code != 0 || u.Cleanup.WrittenBack != 1 || u.Cleanup.Queued != 0 || len(u.Cleanup.Sessions) != 1 || u.Cleanup.Sessions[0].WrittenBack[0] != "tc-call_1" {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if got := contentOf(t, path); got != sourceContent {
			t.Errorf("content %s, want %s", got, sourceContent)
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), "[[extracted-") {
			t.Errorf("placeholder left:\n%s", b)
		}
		if len(u.Next.Restart) != 0 {
			t.Errorf("restart %v: the config was not linked, nothing to restart", u.Next.Restart)
		}
	})
	t.Run("Busy", func(t *testing.T) {
		root := openclawRoot(t)
		path := sourceAgents(t, root, 3600)
		installPlain(t)
		code, out, _ := run(t, "openclaw", "uninstall", "--yes")
		if code != 0 || !strings.Contains(out, "1 queued (the session is busy") || !strings.Contains(out, "run brainsurgeon openclaw uninstall again once the sessions are idle") ||
			!strings.Contains(out, "Pending: 1 write-back in the queue") {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if b, _ := os.ReadFile(path); string(b) != sourceTranscript {
			t.Fatalf("a busy session was written:\n%s", b)
		}
		old := time.Now().Add(-2 * time.Hour)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		code, u, out, errOut := uninstall(t)
		if code != 0 || u.Cleanup.AppliedFromQueue != 1 || u.Cleanup.WrittenBack != 0 || u.Cleanup.Queued != 0 {
			t.Fatalf("again: exit %d\n%s\n%s", code, out, errOut)
		}
		if got := contentOf(t, path); got != sourceContent {
			t.Errorf("content %s, want %s", got, sourceContent)
		}
	})
	t.Run("KeepPlaceholders", func(t *testing.T) {
		root := openclawRoot(t)
		path := sourceAgents(t, root, 0)
		installPlain(t)
		code, u, out, errOut := uninstall(t, "--keep-placeholders")
		if code != 0 || u.Cleanup.Kept != 1 || u.Cleanup.WrittenBack != 0 || u.Cleanup.Sessions[0].Kept[0].Key != "tc-call_1" {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if b, _ := os.ReadFile(path); string(b) != sourceTranscript {
			t.Fatalf("the transcript changed:\n%s", b)
		}
		// The CLI way the placeholder names brings it back.
		code, text, errText := run(t, "restore", "main/s1", "tc-call_1", "--agents-dir", filepath.Join(root, "agents"))
		if code != 0 || text != "a.txt\nb.txt é" || !strings.Contains(errText, "written back into the transcript now") {
			t.Fatalf("restore tc-call_1: exit %d\n%q\n%s", code, text, errText)
		}
		if got := contentOf(t, path); got != sourceContent {
			t.Errorf("content %s, want %s", got, sourceContent)
		}
	})
}
