//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// liveIdleSeconds is the daemon's idle gate in TestDaemonLive: short, so the test is fast, and long enough that
// the host's last writes of a run come before the daemon's.
const liveIdleSeconds = 2

// heldTicks is how many scheduled runs must pass while a model call is held.
const heldTicks = 3

// TestDaemonLive runs the daemon and its REST API (what `brainsurgeon serve` runs, in-process) on a one-second
// cron next to a real OpenClaw 2026.7.35 gateway (loopback, mock model), on a seeded corpus session with large
// tool results (the daemon next to a live host):
//
//	a. while the first turn's model call is held, several scheduled runs find the session busy and write nothing
//	   (no placeholder, no side file, the transcript byte for byte the same); the run then ends without a
//	   takeover/fence error;
//	b. once the run is over and the session idle, a scheduled run prunes it (placeholders, extracted dir);
//	c. while the second turn's model call is held, a restore of one extracted entry asked for through the API
//	   answers at once with the original value, queued and not applied, and the transcript stays untouched over
//	   several runs; after the run, once the session is idle, a scheduled run writes the value back: the
//	   restored value is in the transcript and every line the host wrote is intact;
//	d. the next turn works: same session, whole history, the model receives the restored value and not its
//	   placeholder (the entry restored is one whose placeholder the held model call carried), and the pi
//	   SessionManager reads the transcript; the restored value is not extracted again by the next runs.
func TestDaemonLive(t *testing.T) {
	t0 := time.Now()
	oracle.Require(t)
	var transcript string
	h := openclaw.NewHost(t, openclaw.V7, func(st *openclaw.State) error {
		var err error
		transcript, err = st.Seed("main", sessionKey, seedSessionID, corpusFile(t, seedFile))
		return err
	})
	agents := h.State.AgentsDir()
	sideDir := filepath.Join(h.State.SessionsDir("main"), "extracted")
	writeConfig(t, agents, map[string]any{
		"enabled":             true,
		"auto_cron":           "* * * * * *",
		"age_threshold_hours": 0,
		"idle_seconds":        liveIdleSeconds,
		"min_value_length":    200,
		"min_saving_tokens":   0,
	})
	seedBytes, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}

	// a. The first turn's model call is held; only then does the daemon start, so its first runs meet a session
	// full of values to extract and a run in flight.
	held := holdTurn(t, h, "turn 1, held while the daemon runs")
	logs := &syncBuffer{}
	defer func() {
		if t.Failed() {
			t.Logf("daemon log (tail):\n%s", logs.tail(8000))
		}
	}()
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: log, Retention: daemon.Retention(log, nil)})
	if err != nil {
		t.Fatal(err)
	}
	handler, err := apiOver(ctx, d, api.Options{Logger: log, UI: ui.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	// Stopped before the host (whose cleanup runs after the deferred calls): no run may be in progress when the
	// state dir goes.
	defer func() {
		srv.Close()
		cancel()
		d.Close()
	}()
	sha := fileSHA(t, transcript)
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	runs := watchRuns(t, srv, heldTicks)
	if fileSHA(t, transcript) != sha {
		t.Errorf("a: the transcript changed while the model call was held (daemon runs: %s)", runs)
	}
	if n := len(placeholders(t, transcript)); n > 0 {
		t.Errorf("a: %d placeholders written while the model call was held", n)
	}
	if _, err := os.Stat(sideDir); err == nil {
		t.Errorf("a: side files written while the model call was held (%s exists)", sideDir)
	}
	if runs.busy == 0 {
		t.Errorf("a: no scheduled run reported the session busy while its model call was held: %s", runs)
	}
	t.Logf("a: %s while the model call was held", runs)
	endTurn(t, h, held, "a")
	if t.Failed() {
		return
	}

	// b. Idle now: a scheduled run prunes the session.
	waitFor(t, "b: the daemon pruned the idle session", func() bool { return len(placeholders(t, transcript)) > 0 })
	if fi, err := os.Stat(filepath.Join(sideDir, seedSessionID)); err != nil || !fi.IsDir() {
		t.Fatalf("b: no extracted dir after the scheduled prune: %v", err)
	}
	ids := placeholders(t, transcript)
	t.Logf("b: pruned once idle, %s after the start: %d placeholders, %d -> %d bytes", time.Since(t0).Round(time.Second),
		len(ids), len(seedBytes), len(readFile(t, transcript)))
	if got := entry(t, h).SessionID; got != seedSessionID {
		t.Fatalf("b: sessions.json sessionId %s, want the seeded %s", got, seedSessionID)
	}

	// c. The second turn's model call is held; a restore asked for through the API meanwhile is answered at
	// once and queued.
	held = holdTurn(t, h, "turn 2, held while a restore is asked for")
	sha = fileSHA(t, transcript)
	// The entry restored is one whose placeholder the model received in the held call (the host does not send
	// every value to the model: thinking may be left out), so that the next turn shows the restore.
	c2 := chats(t, h)
	heldChat := c2[len(c2)-1]
	restored := ""
	for _, id := range ids {
		if chatHas(heldChat, "[[extracted-"+id+"]]") {
			restored = id
			break
		}
	}
	if restored == "" {
		t.Fatalf("c: the held model call carries none of the %d placeholders", len(ids))
	}
	start := time.Now()
	var rr struct {
		Restored     bool              `json:"restored"`
		Applied      bool              `json:"applied"`
		Queued       bool              `json:"queued"`
		KeysRestored []string          `json:"keys_restored"`
		Content      map[string]string `json:"content"`
		Warning      string            `json:"warning"`
	}
	apitest.Call(t, srv, "POST", "/api/sessions/main/"+seedSessionID+"/entries/"+restored+"/restore", "{}", http.StatusOK, &rr)
	took := time.Since(start)
	if !rr.Restored || rr.Applied || !rr.Queued || len(rr.KeysRestored) == 0 {
		t.Fatalf("c: restore during a run: restored %v, applied %v, queued %v, keys %v (want restored, queued, not applied): %s",
			rr.Restored, rr.Applied, rr.Queued, rr.KeysRestored, rr.Warning)
	}
	if took > 5*time.Second {
		t.Errorf("c: the restore during a run took %s to answer", took)
	}
	for _, k := range rr.KeysRestored {
		want, ok := valueAt(t, seedBytes, restored, k)
		if !ok {
			t.Fatalf("c: entry %s has no value at %s in the seeded transcript", restored, k)
		}
		if !sameValue(rr.Content[k], want) {
			t.Fatalf("c: the API returned %d bytes for %s %s, the original value has %d", len(rr.Content[k]), restored, k, len(want))
		}
	}
	if fileSHA(t, transcript) != sha {
		t.Fatalf("c: the restore during a run changed the transcript")
	}
	t.Logf("c: restore of %s (%v) answered in %s, queued", restored, rr.KeysRestored, took.Round(time.Millisecond))
	runs = watchRuns(t, srv, heldTicks)
	if fileSHA(t, transcript) != sha {
		t.Errorf("c: the transcript changed while the model call was held (daemon runs: %s)", runs)
	}
	if runs.writeBacks > 0 {
		t.Errorf("c: %d write-backs applied while the model call was held", runs.writeBacks)
	}
	if runs.busy == 0 && runs.unchanged == 0 {
		t.Errorf("c: no scheduled run reported the session busy or skipped while its model call was held: %s", runs)
	}
	t.Logf("c: %s while the model call was held", runs)
	endTurn(t, h, held, "c")
	if t.Failed() {
		return
	}
	// After the run: a scheduled run writes the restore back, and the host's lines are intact. afterRun is the
	// last transcript seen before the write-back: every write of the host is in it, since the write-back waits
	// for the session to be idle.
	var afterRun, back []byte
	var afterRunMtime time.Time
	placeholder := []byte("[[extracted-" + restored + "]]")
	waitFor(t, "c: the daemon wrote the queued restore back", func() bool {
		m := mtime(t, transcript)
		b := readFile(t, transcript)
		if bytes.Contains(b, placeholder) {
			afterRun, afterRunMtime = b, m
			return false
		}
		back = b
		return true
	})
	if afterRun == nil {
		t.Fatal("c: the restore was written back before the run was seen to end")
	}
	for _, k := range rr.KeysRestored {
		if got, ok := valueAt(t, back, restored, k); !ok || !sameValue(rr.Content[k], got) {
			t.Fatalf("c: after the write-back, %s %s holds %d bytes, want the %d restored", restored, k, len(got), len(rr.Content[k]))
		}
	}
	compareLines(t, afterRun, back, restored)
	if got := mtime(t, transcript); !got.Equal(afterRunMtime) {
		t.Errorf("c: the write-back moved the transcript's mtime from %s to %s (a rewrite must keep it)",
			afterRunMtime.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano))
	}
	for _, s := range []string{"turn 1, held", "turn 2, held"} {
		if !bytes.Contains(back, []byte(s)) {
			t.Errorf("c: the transcript lost the host's line with %q", s)
		}
	}
	t.Logf("c: written back %s after the start", time.Since(t0).Round(time.Second))

	// d. The next turn works on the same session, with the restored value.
	before := chats(t, h)
	prev := before[len(before)-1]
	next := turn(t, h, "turn 3, after the write-back")
	if got := entry(t, h).SessionID; got != seedSessionID {
		t.Errorf("d: the turn after the write-back started a new session %s (was %s)", got, seedSessionID)
	}
	if len(next.Messages) < len(prev.Messages) {
		t.Errorf("d: the model received %d messages, %d on the turn before: history lost", len(next.Messages), len(prev.Messages))
	}
	if chatHas(next, "[[extracted-"+restored+"]]") {
		t.Errorf("d: the model still received the placeholder of the restored entry %s", restored)
	}
	for _, k := range rr.KeysRestored {
		line, _, _ := strings.Cut(strings.TrimSpace(rr.Content[k]), "\n")
		if len(line) > 60 {
			line = line[:60]
		}
		if !chatHas(next, line) {
			t.Errorf("d: the model request does not carry the restored %s of %s (%q...)", k, restored, line)
		}
	}
	if !chatHas(next, "[[extracted-") {
		t.Errorf("d: the model received no placeholder at all: the other extracted values are back too")
	}
	sums, err := oracle.Summary(context.Background(), transcript)
	if err != nil {
		t.Fatalf("d: pi SessionManager on the transcript: %v", err)
	}
	if n, ok := sums[0].LLMCount(); !ok || n == 0 {
		t.Errorf("d: pi builds no LLM context from the transcript: %s", sums[0].LLMMessageCount)
	}
	// The host never saw its transcript change under a run.
	for _, line := range strings.Split(h.Gateway.LogTail(8<<20), "\n") {
		if hostTrouble.MatchString(line) {
			t.Errorf("d: the gateway logs a conflict: %.300s", line)
		}
	}
	// The restored value stays in place (keep_after_restore_seconds protects it from the next runs).
	watchRuns(t, srv, 2)
	if placeholderIn(t, transcript, restored) {
		t.Errorf("d: the restored entry %s was extracted again", restored)
	}
	t.Logf("d: turn 3 ok (%d model messages, pi context %s); total %s", len(next.Messages), sums[0].LLMMessageCount,
		time.Since(t0).Round(time.Second))
}

// holdTurn holds the mock's model calls, starts an agent turn and waits until its model call is held.
func holdTurn(t *testing.T, h *openclaw.Host, msg string) *heldTurn {
	t.Helper()
	if err := h.Mock.Hold(); err != nil {
		t.Fatal(err)
	}
	holds, err := h.Mock.Holds()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	t.Cleanup(cancel)
	run := h.Gateway.StartAgent(ctx, openclaw.Turn{Key: sessionKey, Message: msg})
	if err := h.Mock.WaitHeld(ctx, holds); err != nil {
		t.Fatalf("%q: %v", msg, err)
	}
	return &heldTurn{ctx: ctx, run: run, msg: msg}
}

type heldTurn struct {
	ctx context.Context
	run *openclaw.Running
	msg string
}

// endTurn releases the mock and waits for the held turn, which must end without a conflict.
func endTurn(t *testing.T, h *openclaw.Host, ht *heldTurn, step string) {
	t.Helper()
	if err := h.Mock.Release(); err != nil {
		t.Fatal(err)
	}
	res, err := ht.run.Wait(ht.ctx)
	if err != nil {
		t.Fatalf("%s: the held turn %q failed: %v", step, ht.msg, err)
	}
	if hostTrouble.Match(res.Stderr) || hostTrouble.Match(res.Stdout) {
		t.Fatalf("%s: the held turn %q reports a conflict:\n%s\n%s", step, ht.msg, res.Stdout, res.Stderr)
	}
	t.Logf("%s: held turn finished in %s", step, res.Duration.Round(100*time.Millisecond))
}

// runStats sums the results of the scheduled runs watchRuns saw.
type runStats struct {
	runs, busy, unchanged, processed, extracted, writeBacks int
}

func (s runStats) String() string {
	return fmt.Sprintf("%d runs: %d busy, %d unchanged, %d processed, %d extracted, %d write-backs",
		s.runs, s.busy, s.unchanged, s.processed, s.extracted, s.writeBacks)
}

// watchRuns polls GET /api/scheduler/status until n more prune runs have finished, and sums their results.
func watchRuns(t *testing.T, srv *httptest.Server, n int) runStats {
	t.Helper()
	var s runStats
	var last time.Time
	deadline := time.Now().Add(time.Duration(n)*time.Second + 60*time.Second)
	first := true
	for s.runs < n {
		var st struct {
			Prune struct {
				LastFinishedAt *time.Time          `json:"last_finished_at"`
				LastResult     *daemon.PruneResult `json:"last_result"`
				LastError      string              `json:"last_error"`
			} `json:"prune"`
		}
		apitest.Call(t, srv, "GET", "/api/scheduler/status", "", http.StatusOK, &st)
		p := st.Prune
		if p.LastFinishedAt != nil && !p.LastFinishedAt.Equal(last) {
			if first {
				// a run that finished before the call: only later runs count
				first = false
			} else if r := p.LastResult; r != nil {
				s.runs++
				s.busy += r.Busy
				s.unchanged += r.Unchanged
				s.processed += r.Processed
				s.extracted += r.Extracted
				s.writeBacks += r.WriteBacks
				if p.LastError != "" || r.Failed > 0 {
					t.Errorf("a scheduled run failed: %s %v", p.LastError, r.Errors)
				}
			}
			last = *p.LastFinishedAt
		} else if p.LastFinishedAt == nil {
			first = false
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d scheduled runs finished in time: %s", s.runs, n, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// waitFor polls cond until it holds, within turnTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(turnTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// valueAt returns the value at the JSON Pointer ptr of the transcript entry whose id is entryID: a string's text,
// or the JSON of anything else.
func valueAt(t *testing.T, transcript []byte, entryID, ptr string) (string, bool) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(transcript))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) != nil || e["id"] != entryID {
			continue
		}
		var v any = e
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := v.(type) {
			case map[string]any:
				v = x[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(x) {
					return "", false
				}
				v = x[i]
			default:
				return "", false
			}
		}
		if s, ok := v.(string); ok {
			return s, true
		}
		if v == nil {
			return "", false
		}
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
	return "", false
}

// sameValue reports whether a restored value (the text of a string, the JSON of a block) is want as valueAt
// returns it (a string, or a block as Go's JSON).
func sameValue(content, want string) bool {
	if content == want {
		return true
	}
	var a, b any
	if json.Unmarshal([]byte(content), &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// compareLines checks that the write-back kept every line the host wrote: before (the transcript just before it)
// and after have the same lines in the same order, and a line that differs is the restored entry's, or one in
// which the same run extracted values (it gained its own placeholder: the host's newer messages may have moved
// older values out of the keep_recent window).
func compareLines(t *testing.T, before, after []byte, entryID string) {
	t.Helper()
	bl := bytes.Split(bytes.TrimRight(before, "\n"), []byte("\n"))
	al := bytes.Split(bytes.TrimRight(after, "\n"), []byte("\n"))
	if len(al) != len(bl) {
		t.Errorf("c: the write-back changed the number of lines from %d to %d", len(bl), len(al))
		return
	}
	restoredID := []byte(`"id":"` + entryID + `"`)
	var restoredLines, extracted int
	for i := range bl {
		if bytes.Equal(bl[i], al[i]) {
			continue
		}
		var e struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(bl[i], &e)
		own := []byte("[[extracted-" + e.ID + "]]")
		switch {
		case bytes.Contains(bl[i], restoredID):
			restoredLines++
		case e.ID != "" && bytes.Contains(al[i], own) && !bytes.Contains(bl[i], own):
			extracted++
		default:
			t.Errorf("c: the write-back changed line %d (entry %q), which is neither the restored entry's nor newly extracted", i+1, e.ID)
		}
	}
	if restoredLines != 1 {
		t.Errorf("c: the write-back changed %d lines of the restored entry, want 1", restoredLines)
	}
	if extracted > 0 {
		t.Logf("c: the run of the write-back also extracted values in %d other lines", extracted)
	}
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
