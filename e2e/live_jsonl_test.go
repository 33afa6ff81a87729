//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

const (
	sessionKey = "agent:main:main"
	// turnTimeout bounds one agent turn (18-43 s were measured on a busy 2-core machine).
	turnTimeout = 3 * time.Minute
	// agentTimeout is the --timeout (seconds) of the turn that must end "timeout".
	agentTimeout = 10
)

// hostTrouble is what a run that lost its transcript to a concurrent writer logs.
var hostTrouble = regexp.MustCompile(`(?i)takeover|fence|changed while|conflict`)

// chats returns the model requests the mock has logged so far.
func chats(t *testing.T, h *openclaw.Host) []openclaw.Chat {
	t.Helper()
	c, err := h.Mock.Chats()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chatHas(c openclaw.Chat, s string) bool {
	for _, m := range c.Messages {
		if strings.Contains(m.Content, s) || strings.Contains(string(m.Raw), s) {
			return true
		}
	}
	return false
}

func entry(t *testing.T, h *openclaw.Host) openclaw.SessionEntry {
	t.Helper()
	m, err := h.State.Sessions("main")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m[sessionKey]
	if !ok {
		t.Fatalf("sessions.json has no %s", sessionKey)
	}
	return e
}

// turn runs one agent turn that must succeed, and returns the model request it made.
func turn(t *testing.T, h *openclaw.Host, msg string) openclaw.Chat {
	t.Helper()
	before := len(chats(t, h))
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	r, err := h.Gateway.Agent(ctx, openclaw.Turn{Key: sessionKey, Message: msg})
	if err != nil {
		t.Fatalf("turn %q: %v", msg, err)
	}
	if hostTrouble.Match(r.Stderr) || hostTrouble.Match(r.Stdout) {
		t.Fatalf("turn %q: the host reports a conflict:\n%s\n%s", msg, r.Stdout, r.Stderr)
	}
	t.Logf("turn %q: %s", msg, r.Duration.Round(100*time.Millisecond))
	c := chats(t, h)
	if len(c) <= before {
		t.Fatalf("turn %q made no model request", msg)
	}
	last := c[len(c)-1]
	if !chatHas(last, msg) {
		t.Fatalf("turn %q: the last model request does not carry the message", msg)
	}
	return last
}

// TestLiveJSONL runs BrainSurgeon's CLI next to a real OpenClaw 2026.7.35 gateway (loopback, mock model) on a
// seeded corpus session:
//
//	a. while a model call is held open, prune reports the session busy and writes nothing, and the run then
//	   finishes without a takeover/fence error;
//	b. once the run is over, prune extracts, the next turn succeeds and the model receives the placeholders;
//	c. after a run that ended "timeout", a restore write-back does not make the host start a new session: the
//	   next turn continues the same session with its whole history (this is what keeping the modification time protects).
func TestLiveJSONL(t *testing.T) {
	t0 := time.Now()
	var transcript string
	h := openclaw.NewHost(t, openclaw.V7, func(st *openclaw.State) error {
		var err error
		transcript, err = st.Seed("main", sessionKey, seedSessionID, corpusFile(t, seedFile))
		return err
	})
	agents := h.State.AgentsDir()
	writeConfig(t, agents, map[string]any{"enabled": true, "idle_seconds": 0})
	sideDir := filepath.Join(h.State.SessionsDir("main"), "extracted")

	// a. a run in flight: the model call is held open.
	if err := h.Mock.Hold(); err != nil {
		t.Fatal(err)
	}
	holds, err := h.Mock.Holds()
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancelRun := context.WithTimeout(context.Background(), turnTimeout)
	defer cancelRun()
	held := h.Gateway.StartAgent(runCtx, openclaw.Turn{Key: sessionKey, Message: "turn a, held"})
	waitCtx, cancelWait := context.WithTimeout(context.Background(), turnTimeout)
	if err := h.Mock.WaitHeld(waitCtx, holds); err != nil {
		cancelWait()
		t.Fatal(err)
	}
	cancelWait()
	if rows, err := h.Gateway.SessionsList(runCtx); err != nil {
		t.Logf("sessions.list: %v", err)
	} else {
		for _, r := range rows {
			if r.Key == sessionKey {
				t.Logf("in flight: sessions.list hasActiveRun=%v activeRunIds=%v; sessions.json status %q",
					r.HasActiveRun, r.ActiveRunIDs, entry(t, h).Status)
			}
		}
	}
	sha := fileSHA(t, transcript)
	rep, r := prune(t, agents, seedSessionID)
	if rep.Status != "busy" {
		t.Errorf("a: prune during a run: status %q, want busy: %s", rep.Status, r)
	}
	if fileSHA(t, transcript) != sha {
		t.Errorf("a: prune during a run changed the transcript")
	}
	if _, err := os.Stat(sideDir); err == nil {
		t.Errorf("a: prune during a run wrote side files (%s exists)", sideDir)
	}
	if err := h.Mock.Release(); err != nil {
		t.Fatal(err)
	}
	res, err := held.Wait(runCtx)
	if err != nil {
		t.Fatalf("a: the held run failed after prune: %v", err)
	}
	if hostTrouble.Match(res.Stderr) || hostTrouble.Match(res.Stdout) {
		t.Fatalf("a: the held run reports a conflict:\n%s\n%s", res.Stdout, res.Stderr)
	}
	t.Logf("a: held run finished in %s", res.Duration.Round(100*time.Millisecond))
	if t.Failed() {
		return
	}

	// b. idle now: prune extracts, and the model sees placeholders on the next turn.
	rep, r = prune(t, agents, seedSessionID)
	if rep.Status != "extracted" {
		t.Fatalf("b: prune after the run: status %q, want extracted: %s", rep.Status, r)
	}
	ids := placeholders(t, transcript)
	if len(ids) == 0 {
		t.Fatalf("b: no placeholders in the transcript after prune: %s", r)
	}
	t.Logf("b: prune extracted %d entries (%d bytes saved)", rep.Result.Entries, rep.Result.BytesSaved)
	cb := turn(t, h, "turn b, after prune")
	if !chatHas(cb, "[[extracted-") {
		t.Fatalf("b: the model request after prune carries no [[extracted- placeholder")
	}
	sid := entry(t, h).SessionID
	if sid != seedSessionID {
		t.Fatalf("b: sessions.json sessionId %s, want the seeded %s", sid, seedSessionID)
	}

	// c. a run that ends "timeout", then a restore write-back, then the next turn.
	if err := h.Mock.Hold(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	res, err = h.Gateway.Agent(ctx, openclaw.Turn{Key: sessionKey, Message: "turn c, times out", Timeout: agentTimeout})
	if err := h.Mock.Release(); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("c: the timing-out turn did not return: %v", err)
	}
	e := entry(t, h)
	t.Logf("c: timing-out turn returned after %s (exit %d); sessions.json status %q",
		res.Duration.Round(100*time.Millisecond), res.ExitCode, e.Status)
	if e.Status != "timeout" {
		t.Fatalf("c: sessions.json status %q after the timed-out run, want timeout\n%s\n%s", e.Status, res.Stdout, res.Stderr)
	}
	restored := ids[0]
	before := mtime(t, transcript)
	rr := restoreEntry(t, agents, sessionKey, restored)
	var out struct {
		Applied bool `json:"applied"`
		Queued  bool `json:"queued"`
	}
	if err := json.Unmarshal([]byte(rr.stdout), &out); err != nil || !out.Applied {
		t.Fatalf("c: restore was not written back now (applied %v, queued %v, %v): %s", out.Applied, out.Queued, err, rr)
	}
	if placeholderIn(t, transcript, restored) {
		t.Fatalf("c: placeholder of %s still in the transcript after restore", restored)
	}
	t.Logf("c: restore of %s written back; transcript mtime %s -> %s (sessions.json updatedAt %s)", restored,
		before.Format(time.RFC3339Nano), mtime(t, transcript).Format(time.RFC3339Nano),
		time.UnixMilli(e.UpdatedAt).Format(time.RFC3339Nano))
	cd := turn(t, h, "turn d, after restore")
	if got := entry(t, h).SessionID; got != seedSessionID {
		t.Errorf("c: the turn after restore started a new session %s (was %s)", got, seedSessionID)
	}
	if len(cd.Messages) < len(cb.Messages) {
		t.Errorf("c: the model received %d messages after restore, %d before the timed-out run: history lost",
			len(cd.Messages), len(cb.Messages))
	}
	if chatHas(cd, "[[extracted-"+restored+"]]") {
		t.Errorf("c: the model still received the placeholder of the restored entry %s", restored)
	}
	t.Logf("model requests: turn b %d messages, turn d %d messages; total %s", len(cb.Messages), len(cd.Messages),
		time.Since(t0).Round(time.Second))
}

func placeholderIn(t *testing.T, p, id string) bool {
	t.Helper()
	for _, x := range placeholders(t, p) {
		if x == id {
			return true
		}
	}
	return false
}
