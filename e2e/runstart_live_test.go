//go:build e2e

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

// ageSession makes a session of the store look untouched for an hour (its window's and node's updated times), as
// a session the user left yesterday is. It runs before the gateway starts, on the test's own copy.
func ageSession(st *openclaw.State, sessionID string) error {
	db, err := sql.Open("sqlite", "file:"+storePath(st)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	old := time.Now().Add(-time.Hour).UnixMilli()
	if _, err := db.Exec(`UPDATE session_windows SET transcript_updated_at = ?, updated_at = ? WHERE session_id = ?`, old, old, sessionID); err != nil {
		return err
	}
	_, err = db.Exec(`UPDATE session_nodes SET updated_at = ? WHERE session_key IN (SELECT session_key FROM session_windows WHERE session_id = ?)`, old, sessionID)
	return err
}

// windowStatus returns session_windows.status of the session ("" when NULL).
func windowStatus(db *sql.DB, sessionID string) (string, error) {
	var s sql.NullString
	err := db.QueryRow(`SELECT status FROM session_windows WHERE session_id = ?`, sessionID).Scan(&s)
	return s.String, err
}

// daemonWriteRE matches the daemon's log lines of a write: an extraction or applied write-backs.
var daemonWriteRE = regexp.MustCompile(`time=(\S+) level=INFO msg="(?:Processing session \S+, \d+ (?:entry|entries) to check: \d+ values?|Prune run: .* [1-9]\d* write-backs?)`)

// daemonWrites returns the times of the daemon's writes in its text log.
func daemonWrites(t *testing.T, log string) []time.Time {
	t.Helper()
	var out []time.Time
	for _, m := range daemonWriteRE.FindAllStringSubmatch(log, -1) {
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("daemon log time %q: %v", m[1], err)
		}
		out = append(out, at)
	}
	return out
}

// TestRunStartWindowLive shows what keeps the daemon's writes out of the run-start window on OpenClaw 2026.9.6:
// between the gateway receiving a message and its store showing the run as running, nothing on disk says a run is
// starting. With the default quiet period (idle_seconds 300) the daemon, on a one-second cron, prunes a session the
// user left an hour ago, and then, while the user sends message after message (some with long model calls, one that
// ends by --timeout), writes nothing at all: every write comes before the first message. The test measures the
// window (message sent → store shows running) and the gap between the daemon's last write and the next message.
func TestRunStartWindowLive(t *testing.T) {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	importSeed := seedSQLite(t, sessionKey, seedSessionID, corpusFile(t, seedFile))
	h := openclaw.NewHostWithModel(t, openclaw.V9, model.URL(), func(st *openclaw.State) error {
		if err := importSeed(st); err != nil {
			return err
		}
		return ageSession(st, seedSessionID)
	})
	agents := h.State.AgentsDir()
	db := storePath(h.State)
	// The default quiet period: idle_seconds is not set.
	writeConfig(t, agents, map[string]any{
		"enabled":             true,
		"auto_cron":           "* * * * * *",
		"age_threshold_hours": 0,
		"min_value_length":    200,
		"min_saving_tokens":   0,
	})
	logs, _, stop := runDaemon(t, agents)
	// The session, quiet for an hour, is pruned.
	waitFor(t, "the daemon prunes the quiet session", func() bool { return len(rowPlaceholders(sessionRows(t, db, seedSessionID))) > 0 })
	pruned := time.Now()
	t.Logf("pruned by the daemon %s after the start", pruned.Sub(t0).Round(time.Second))

	// The status poller: when did the store first show each run as running?
	poll := openRO(t, db)
	var mu sync.Mutex
	var running []time.Time // every poll that saw "running"
	pollCtx, stopPoll := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for pollCtx.Err() == nil {
			if s, err := windowStatus(poll, seedSessionID); err == nil && s == "running" {
				mu.Lock()
				running = append(running, time.Now())
				mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()

	type sent struct {
		kind string
		at   time.Time
	}
	var turns []sent
	kinds := []string{"plain", "held", "plain", "timeout", "plain", "held", "plain", "plain"}
	gaps := []time.Duration{0, 500 * time.Millisecond, 2 * time.Second, 0, time.Second, 0, 3 * time.Second, 100 * time.Millisecond}
	for i, kind := range kinds {
		time.Sleep(gaps[i])
		msg := fmt.Sprintf("run-start turn %d (%s)", i, kind)
		turnCtx, cancelTurn := context.WithTimeout(context.Background(), turnTimeout)
		turn := openclaw.Turn{Key: sessionKey, Message: msg}
		if kind == "timeout" {
			turn.Timeout = soakTimeout
		}
		if kind != "plain" {
			model.Hold()
		}
		at := time.Now()
		run := h.Gateway.StartAgent(turnCtx, turn)
		turns = append(turns, sent{kind: kind, at: at})
		switch kind {
		case "held":
			time.Sleep(3 * time.Second)
		case "timeout":
			time.Sleep((soakTimeout + 2) * time.Second)
		}
		model.Release()
		res, err := run.Wait(turnCtx)
		cancelTurn()
		if kind != "timeout" && err != nil {
			t.Fatalf("%s: %v", msg, err)
		}
		if res != nil && hostTrouble.Match(append(res.Stdout, res.Stderr...)) {
			t.Errorf("%s: the host reports a conflict", msg)
		}
	}
	// A few more scheduled runs after the last turn.
	time.Sleep(3 * time.Second)
	stopPoll()
	wg.Wait()
	stop()

	writes := daemonWrites(t, logs.String())
	if len(writes) == 0 {
		t.Fatal("the daemon log shows no write at all (not even the first prune)")
	}
	first := turns[0].at
	for _, w := range writes {
		if !w.Before(first) {
			t.Errorf("the daemon wrote at %s, %s after the first message of the busy stretch (quiet period: 300 s)",
				w.Format(time.RFC3339Nano), w.Sub(first).Round(time.Millisecond))
		}
	}
	// The window of each turn: message sent → first poll that saw the run.
	reqs := model.Requests()
	var windows []string
	var longest time.Duration
	for _, s := range turns {
		var seen time.Time
		mu.Lock()
		for _, r := range running {
			if !r.Before(s.at) {
				seen = r
				break
			}
		}
		mu.Unlock()
		var req time.Time
		for _, r := range reqs {
			if !r.At.Before(s.at) {
				req = r.At
				break
			}
		}
		if seen.IsZero() {
			windows = append(windows, s.kind+": never seen running")
			continue
		}
		w := seen.Sub(s.at)
		longest = max(longest, w)
		windows = append(windows, fmt.Sprintf("%s: running after %s (model call after %s)", s.kind, w.Round(time.Millisecond), req.Sub(s.at).Round(time.Millisecond)))
	}
	for _, line := range strings.Split(h.Gateway.LogTail(8<<20), "\n") {
		if hostTrouble.MatchString(line) {
			t.Errorf("the gateway logs a conflict: %.300s", line)
		}
	}
	if got := liveSessionID(t, h, sessionKey); got != seedSessionID {
		t.Errorf("the host started a new session %s", got)
	}
	t.Logf("daemon writes: %d, the last %s before the first message; run-start windows (message sent → store shows running): %s; longest %s; total %s",
		len(writes), first.Sub(writes[len(writes)-1]).Round(time.Millisecond), strings.Join(windows, "; "), longest.Round(time.Millisecond),
		time.Since(t0).Round(time.Second))
}
