package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveRun is a `brainsurgeon serve` running in the test on loopback.
type serveRun struct {
	url       string
	out, errs *syncBuffer
	code      chan int
	stop      context.CancelFunc
}

// startServe runs serve with args on a free loopback port, in a clean
// environment, with the agents dir looked for every 20 ms.
func startServe(t *testing.T, args ...string) *serveRun {
	t.Helper()
	for _, v := range []string{"BRAINSURGEON_API_KEYS", "BRAINSURGEON_API_KEY_FILE", "BRAINSURGEON_READONLY", "BRAINSURGEON_CORS_ORIGINS", "LOG_LEVEL", "PORT"} {
		t.Setenv(v, "")
	}
	old := agentsDirPoll
	agentsDirPoll = 20 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := &serveRun{url: "http://" + addr, out: &syncBuffer{}, errs: &syncBuffer{}, code: make(chan int, 1), stop: cancel}
	go func() {
		r.code <- (&Main{Stdout: r.out, Stderr: r.errs}).Run(ctx, append([]string{"serve", "--addr", addr}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.code:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30 s")
		}
		agentsDirPoll = old
	})
	return r
}

// wait stops serve and returns its exit status.
func (r *serveRun) wait(t *testing.T) int {
	t.Helper()
	r.stop()
	select {
	case code := <-r.code:
		r.code <- code // for the cleanup
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s")
	}
	return -1
}

// get sends GET path with key ("" sends none) and returns the status and
// the body (0 when serve does not answer yet).
func (r *serveRun) get(t *testing.T, path, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", r.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// until polls cond until it holds, failing after 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveHealth is the part of GET /api/health the tests read.
type serveHealth struct {
	Status       string `json:"status"`
	WaitingFor   string `json:"waiting_for"`
	AgentsDir    string `json:"agents_dir"`
	KeyFile      string `json:"key_file"`
	AuthRequired bool   `json:"auth_required"`
	Open         bool   `json:"open"`
}

func (r *serveRun) health(t *testing.T) serveHealth {
	t.Helper()
	var h serveHealth
	if code, body := r.get(t, "/api/health", ""); code != 200 || json.Unmarshal([]byte(body), &h) != nil {
		return serveHealth{}
	}
	return h
}

// TestServeWaitsForAgentsDir starts serve before OpenClaw has created its
// agents dir (its state dir exists, as after onboarding): serve answers
// /api/health (waiting), refuses the rest with 503, writes nothing, and
// serves the sessions once the dir appears, without a restart.
func TestServeWaitsForAgentsDir(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	agents := filepath.Join(state, "agents")
	keyFile := filepath.Join(state, ".brainsurgeon", "api.key")
	r := startServe(t, "--agents-dir", agents)

	var h serveHealth
	until(t, "answering /api/health", func() bool { h = r.health(t); return h.Status != "" })
	if h.Status != "waiting" || !strings.Contains(h.WaitingFor, agents) || h.AgentsDir != agents || h.KeyFile != keyFile {
		t.Errorf("health while waiting: %+v", h)
	}
	code, body := r.get(t, "/api/sessions", "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"waiting":true`) || !strings.Contains(body, agents) {
		t.Errorf("sessions while waiting: %d %s", code, body)
	}
	if code, body := r.get(t, "/", ""); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("the UI while waiting: %d %.100s", code, body)
	}
	out := r.out.String()
	for _, want := range []string{"BrainSurgeon is waiting for OpenClaw to create the agents dir " + agents,
		"No API key: the API is open to anyone who can reach " + strings.TrimPrefix(r.url, "http://") + " until " + keyFile + " exists"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if errs := r.errs.String(); !strings.Contains(errs, "waiting for OpenClaw to create the agents dir") {
		t.Errorf("stderr lacks the waiting log:\n%s", errs)
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("serve wrote into OpenClaw's state dir while waiting: %v %v", ents, err)
	}

	// OpenClaw creates the agents dir and its first session.
	if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
		t.Fatal(err)
	}
	until(t, "serving the agents dir", func() bool { return r.health(t).Status == "ok" })
	code, body = r.get(t, "/api/sessions", "")
	if code != 200 || !strings.Contains(body, "7f3e2a10-5b6c-4d8e-9f01-23456789abcd") {
		t.Errorf("sessions once the dir exists: %d %.300s", code, body)
	}
	// The binary hands the web UI to the API (the daemon imports no
	// presentation): it is served beside the API once the dir exists.
	if code, body := r.get(t, "/", ""); code != 200 || !strings.Contains(body, "<html") {
		t.Errorf("the UI once the dir exists: %d %.100s", code, body)
	}
	if code := r.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, r.out.String(), r.errs.String())
	}
	out = r.out.String()
	for _, want := range []string{"BrainSurgeon is serving " + agents + " on " + r.url + "/", "BrainSurgeon stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "logs", "brainsurgeon.log")); err != nil {
		t.Errorf("no log file once the dir exists: %v", err)
	}
}

// TestServeWaitStoppedEarly stops serve while it waits: exit 0, nothing
// written.
func TestServeWaitStoppedEarly(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	r := startServe(t, "--agents-dir", filepath.Join(state, "agents"))
	until(t, "waiting", func() bool { return r.health(t).Status == "waiting" })
	if code := r.wait(t); code != 0 || !strings.Contains(r.out.String(), "BrainSurgeon stopped") {
		t.Fatalf("exit %d\n%s\n%s", code, r.out.String(), r.errs.String())
	}
	if ents, err := os.ReadDir(state); err != nil || len(ents) != 0 {
		t.Errorf("serve wrote into OpenClaw's state dir: %v %v", ents, err)
	}
}

// TestServeKeyFileKeptInStep rotates the key file under a running serve:
// the file appearing turns auth on, a new key works and the old one gets
// 403 within seconds, and removing the file keeps auth required.
func TestServeKeyFileKeptInStep(t *testing.T) {
	state := t.TempDir()
	agents := filepath.Join(state, "agents")
	if err := os.CopyFS(agents, os.DirFS(demoAgents)); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(state, ".brainsurgeon", "api.key")
	r := startServe(t, "--agents-dir", agents)
	until(t, "serving", func() bool { return r.health(t).Status == "ok" })
	if code, _ := r.get(t, "/api/sessions", ""); code != 200 {
		t.Fatalf("no key file: sessions %d, want open access", code)
	}
	if h := r.health(t); h.AuthRequired || !h.Open {
		t.Errorf("health with no key file: %+v, want open", h)
	}
	const keyA, keyB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	write := func(key string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(keyFile), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	status := func(key string) int { code, _ := r.get(t, "/api/sessions", key); return code }
	write(keyA)
	until(t, "requiring the key that appeared", func() bool { return status("") == 401 })
	if got := status(keyA); got != 200 {
		t.Errorf("key A: %d, want 200", got)
	}
	if h := r.health(t); !h.AuthRequired || h.Open || h.KeyFile != keyFile {
		t.Errorf("health: %+v", h)
	}
	write(keyB)
	until(t, "refusing the old key", func() bool { return status(keyA) == 403 })
	if got := status(keyB); got != 200 {
		t.Errorf("key B after the rotation: %d, want 200", got)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	until(t, "refusing the removed file's key", func() bool { return status(keyB) == 403 })
	if got := status(""); got != 401 {
		t.Errorf("no key once the file is gone: %d, want 401 (keys stay required)", got)
	}
	if out := r.out.String(); strings.Contains(out, keyA) || strings.Contains(r.errs.String(), keyA) {
		t.Errorf("serve printed a key:\n%s", out)
	}
}

func TestServeKeyLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		exists bool
		want   string
	}{
		{"File", nil, true, "API key: first line of /r/api.key (read it with: cat /r/api.key)"},
		{"FileAndEnv", []string{"k"}, true, "API key: first line of /r/api.key (read it with: cat /r/api.key), or one of BRAINSURGEON_API_KEYS"},
		{"Env", []string{"k"}, false, "API keys: from BRAINSURGEON_API_KEYS (and the first line of /r/api.key once it exists)"},
		{"None", nil, false, "No API key: the API is open to anyone who can reach 127.0.0.1:8000 until /r/api.key exists (brainsurgeon openclaw install writes it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keyLine(tc.env, "/r/api.key", tc.exists, "127.0.0.1:8000"); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
