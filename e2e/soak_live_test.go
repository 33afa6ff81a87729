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
	"regexp"
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
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// The soak's length. With BS_SOAK_TURNS set (at least 8; the closing notes report runs of 200 and more) it runs
// exactly that many turns per era. Without it (CI) it runs whole cycles of [soakKinds], at least soakMinTurns and
// at most soakMaxTurns, and stops after a cycle once it has met what it exists to provoke (see [soakEnough]).
const (
	soakMinTurns = 2 * 8 // two cycles: every kind twice
	soakMaxTurns = 30
)

// soakTurns returns the number of turns to run at most and whether exactly that many must run.
func soakTurns(t *testing.T) (n int, fixed bool) {
	t.Helper()
	s := os.Getenv("BS_SOAK_TURNS")
	if s == "" {
		return soakMaxTurns, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 8 {
		t.Fatalf("BS_SOAK_TURNS=%q: want a number of turns, at least 8", s)
	}
	return n, true
}

// soakEnough reports whether a soak without BS_SOAK_TURNS may stop after turns turns (a whole number of cycles):
// at least soakMinTurns ran, nothing went wrong, a restore during a held run went through each route (purge_control
// and the REST API), and the daemon's scheduled runs met the session both busy (a run in flight or a write within
// the quiet period) and idle enough to extract and to write a restore back. It returns what is missing otherwise.
func soakEnough(t *testing.T, turns int, tally soakTally, runs daemonRuns) (bool, string) {
	var missing []string
	if turns < soakMinTurns {
		missing = append(missing, fmt.Sprintf("%d of at least %d turns", turns, soakMinTurns))
	}
	if t.Failed() || tally.lost+tally.resets+tally.trouble+tally.ourFail+runs.failed > 0 {
		missing = append(missing, "a clean record (something went wrong: the soak runs its full length)")
	}
	if tally.restoresVia["held+purge_control"] == 0 {
		missing = append(missing, "a restore through purge_control during a run")
	}
	if tally.restoresVia["held+api"] == 0 {
		missing = append(missing, "a restore through the REST API during a run")
	}
	if runs.busy == 0 {
		missing = append(missing, "a daemon run that met the session busy")
	}
	if runs.extracted == 0 {
		missing = append(missing, "a daemon run that extracted")
	}
	if runs.writeBacks == 0 {
		missing = append(missing, "a restore written back by the daemon")
	}
	return len(missing) == 0, strings.Join(missing, "; ")
}

// TestSoakLive drives a real gateway of each era (2026.7.35 on JSONL, 2026.9.6 on its SQLite store) for many
// turns while BrainSurgeon's daemon prunes on a one-second cron with a one-second quiet period, so that its writes
// land between turns, as close to the next turn's start as the quiet period lets them. The turns cycle through
// what a real agent meets: plain replies, tool calls that append large results, held model calls with restores
// asked for in the middle of the run (through purge_control and through the REST API), and runs that end
// failed (the model answers 500), by --timeout and killed (sessions.abort).
//
// It counts, and requires to be 0: entries lost (an entry id seen once and gone later), sessions reset (the key's
// session id changed), fence, conflict or takeover messages in the gateway's logs, turns that should have
// succeeded and failed, and failed daemon runs. At the end the queued restores are applied, and restore --all
// --pristine gives back every line or row the host wrote, byte for byte.
func TestSoakLive(t *testing.T) {
	n, fixed := soakTurns(t)
	// the two eras are independent hosts (own gateway, model, daemon and state dir) and run at once
	for _, v := range []string{openclaw.V7, openclaw.V9} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			soak(t, v, n, fixed)
		})
	}
}

// soakKinds is the cycle of turn kinds.
var soakKinds = []string{"plain", "tool", "held+purge_control", "tool", "failed", "held+api", "timeout", "killed"}

// soakTimeout is the --timeout (seconds) of the turns that must end "timeout".
const soakTimeout = 4

// soakSession reads the seeded session of either era: the JSONL file or the store's rows.
type soakSession struct {
	era, agents, id, path string
}

// lines returns the transcript's lines (JSONL) or rows (SQLite) in order.
func (s soakSession) lines(t *testing.T) []storeRow {
	t.Helper()
	if s.era == openclaw.V9 {
		return sessionRows(t, s.path, s.id)
	}
	b := readFile(t, s.path)
	var out []storeRow
	for i, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		out = append(out, storeRow{Seq: int64(i), Event: string(l)})
	}
	return out
}

// lineID returns the "id" of a line, or "".
func lineID(raw string) string {
	var e struct {
		ID string `json:"id"`
	}
	if json.Unmarshal([]byte(raw), &e) != nil {
		return ""
	}
	return e.ID
}

// pristine reports whether a line is as the host wrote it: no placeholder, none of our bookkeeping.
func pristine(raw string) bool {
	return !strings.Contains(raw, "[[extracted-") && !strings.Contains(raw, `"_restored"`) &&
		!strings.Contains(raw, `"_redacted"`) && !strings.Contains(raw, `"_extractable"`)
}

// soakTally is what the soak counts.
type soakTally struct {
	kinds                          map[string]int
	lost, resets, trouble, ourFail int
	restores, hostEnded            int
	// restoresVia counts the restores during runs by turn kind (route)
	restoresVia map[string]int
}

func soak(t *testing.T, era string, maxTurns int, fixed bool) {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	// registered before the host's cleanup, so it runs after the gateway has stopped
	t.Cleanup(func() { model.Close() })
	src := corpusFile(t, seedFile)
	var transcript string
	seed := func(st *openclaw.State) error {
		var err error
		transcript, err = st.Seed("main", sessionKey, seedSessionID, src)
		return err
	}
	if era == openclaw.V9 {
		sqliteSeed := seedSQLite(t, sessionKey, seedSessionID, src)
		seed = func(st *openclaw.State) error {
			// 2026.8+ retries a model call that failed with a server error up to 8 times, 1 to 30 s apart (about two
			// minutes of timers per "failed" turn); one retry takes the same path to the same end, a failed run.
			if err := soakRetrySettings(st); err != nil {
				return err
			}
			return sqliteSeed(st)
		}
	}
	h := openclaw.NewHostWithModel(t, era, model.URL(), seed)
	s := soakSession{era: era, agents: h.State.AgentsDir(), id: seedSessionID, path: transcript}
	if era == openclaw.V9 {
		s.path = storePath(h.State)
	}
	// A large file for the read tool: every tool turn appends ~24 KB of tool result.
	big := filepath.Join(h.State.Dir, "soak-big.txt")
	var bb strings.Builder
	for i := 0; bb.Len() < 24<<10; i++ {
		fmt.Fprintf(&bb, "line %05d of the soak's large tool result: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(big, []byte(bb.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, s.agents, map[string]any{
		"enabled":             true,
		"auto_cron":           "* * * * * *",
		"age_threshold_hours": 0,
		"idle_seconds":        1,
		"min_value_length":    200,
		"min_saving_tokens":   0,
		"keep_recent":         2,
	})
	logs, srv, stopDaemon := runDaemon(t, s.agents)

	tally := soakTally{kinds: map[string]int{}, restoresVia: map[string]int{}}
	seen := map[string]bool{}    // every entry id seen so far
	clean := map[string]string{} // an entry's line as the host wrote it last
	var order []string
	var restored []string
	applied := map[string]bool{} // restored entries seen written back
	observe := func(step string) {
		present := map[string]bool{}
		lines := s.lines(t)
		// A restored value is protected for keep_after_restore_seconds (600), then extracted again: a restore
		// counts as applied once its placeholder was seen gone.
		ph := map[string]bool{}
		for _, id := range rowPlaceholders(lines) {
			ph[id] = true
		}
		for _, id := range restored {
			if !ph[id] {
				applied[id] = true
			}
		}
		for _, r := range lines {
			id := lineID(r.Event)
			if id == "" {
				continue
			}
			present[id] = true
			if !seen[id] {
				seen[id] = true
				order = append(order, id)
			}
			// The host itself rewrites some lines (2026.7 fills the header's cwd and the content of a failed turn's
			// message): the latest version without our edits is the host's.
			if pristine(r.Event) {
				clean[id] = r.Event
			}
		}
		for _, id := range order {
			if !present[id] {
				tally.lost++
				t.Errorf("%s: entry %s is gone from the transcript", step, id)
				delete(seen, id)
			}
		}
	}
	sessionID := func() string {
		if era == openclaw.V9 {
			return liveSessionID(t, h, sessionKey)
		}
		return entry(t, h).SessionID
	}
	observe("start")
	turns, stopped := 0, ""
	for i := 0; i < maxTurns; i++ {
		turns = i + 1
		kind := soakKinds[i%len(soakKinds)]
		tally.kinds[kind]++
		msg := fmt.Sprintf("soak turn %d (%s)", i, kind)
		turnCtx, cancelTurn := context.WithTimeout(context.Background(), turnTimeout)
		var res *openclaw.Result
		var err error
		switch kind {
		case "plain":
			res, err = h.Gateway.Agent(turnCtx, openclaw.Turn{Key: sessionKey, Message: msg})
		case "tool":
			res, err = h.Gateway.Agent(turnCtx, openclaw.Turn{Key: sessionKey, Message: msg + ` CALL:read:{"path":"` + big + `"}`})
		case "failed":
			model.FailNext(1 << 20)
			res, err = h.Gateway.Agent(turnCtx, openclaw.Turn{Key: sessionKey, Message: msg})
			model.FailNext(0)
		default: // the held kinds: the model call is held while something happens
			holds := model.Holds()
			model.Hold()
			turn := openclaw.Turn{Key: sessionKey, Message: msg}
			if kind == "timeout" {
				turn.Timeout = soakTimeout
			}
			runCtx, killClient := context.WithCancel(turnCtx)
			run := h.Gateway.StartAgent(runCtx, turn)
			if err := model.WaitHeld(turnCtx, holds); err != nil {
				t.Fatalf("%s: %v", msg, err)
			}
			switch kind {
			case "held+purge_control", "held+api":
				if id := soakRestore(t, s, srv, kind, clean); id != "" {
					restored = append(restored, id)
					applied[id] = false
					tally.restores++
					tally.restoresVia[kind]++
				}
				time.Sleep(1500 * time.Millisecond) // scheduled runs meet the run in flight
			case "timeout":
				time.Sleep((soakTimeout + 2) * time.Second)
			case "killed":
				// The run is cancelled through the gateway, as a user's /stop does (sessions.abort). 2026.7 lets only
				// the connection that started a run abort it, so there the client that started it is killed.
				if _, err := h.Gateway.CLI(turnCtx, "gateway", "call", "sessions.abort", "--params",
					`{"key":"`+sessionKey+`"}`, "--json"); err != nil {
					if era == openclaw.V9 {
						t.Errorf("%s: sessions.abort: %v", msg, err)
					}
					killClient()
				}
				time.Sleep(500 * time.Millisecond)
			}
			model.Release()
			res, err = run.Wait(turnCtx)
			killClient()
		}
		cancelTurn()
		out := ""
		if res != nil {
			out = string(res.Stdout) + string(res.Stderr)
		}
		if hostTrouble.MatchString(out) {
			tally.trouble++
			t.Errorf("%s: the host reports a conflict: %.600s", msg, out)
		}
		mustSucceed := kind == "plain" || kind == "tool" || strings.HasPrefix(kind, "held+")
		if err != nil {
			if mustSucceed {
				tally.ourFail++
				t.Errorf("%s: failed: %v", msg, err)
			} else {
				tally.hostEnded++
			}
		}
		observe(msg)
		if era == openclaw.V7 || i%4 == 3 || i == maxTurns-1 { // a stop after a cycle falls on i%4 == 3
			if got := sessionID(); got != seedSessionID {
				tally.resets++
				t.Fatalf("%s: the host started a new session %s (was %s)", msg, got, seedSessionID)
			}
		}
		if i%10 == 9 {
			t.Logf("%d turns in %s", i+1, time.Since(t0).Round(time.Second))
		}
		if !fixed && turns%len(soakKinds) == 0 {
			enough, missing := soakEnough(t, turns, tally, soakRuns(logs.String()))
			if enough {
				stopped = fmt.Sprintf("stopped after %d turns (%d cycles): everything the soak looks for was met", turns, turns/len(soakKinds))
				break
			}
			t.Logf("%d turns: going on, still missing: %s", turns, missing)
		}
	}
	if stopped == "" && !fixed {
		_, missing := soakEnough(t, turns, tally, soakRuns(logs.String()))
		stopped = fmt.Sprintf("ran its maximum of %d turns; missing then: %s", turns, missing)
	}

	// A last ordinary turn, as a user's next message: after a run that ended by --timeout or was killed, a session
	// of 2026.8+ is written again only after its next run.
	closing, cancelClosing := context.WithTimeout(context.Background(), turnTimeout)
	if _, err := h.Gateway.Agent(closing, openclaw.Turn{Key: sessionKey, Message: "soak closing turn"}); err != nil {
		tally.ourFail++
		t.Errorf("the closing turn failed: %v", err)
	}
	cancelClosing()
	observe("closing turn")
	// The queued restores are applied once the session is idle.
	waitFor(t, "the queued restores are written back", func() bool {
		observe("waiting for the write-backs")
		for _, id := range restored {
			if !applied[id] {
				return false
			}
		}
		return true
	})
	stopDaemon()
	runs := soakRuns(logs.String())
	if runs.failed > 0 {
		t.Errorf("%d daemon runs failed a session", runs.failed)
	}
	if n := strings.Count(h.Gateway.LogTail(64<<20), "transient same-model retry"); n > 0 {
		t.Logf("%s: the host retried failed model calls %d times (settings.json: one retry per call)", era, n)
	}
	for _, line := range strings.Split(h.Gateway.LogTail(64<<20), "\n") {
		if hostTrouble.MatchString(line) {
			tally.trouble++
			t.Errorf("the gateway logs a conflict: %.300s", line)
		}
	}
	observe("end")
	// The tool turns really appended large results: the model received each of them.
	bigTools := 0
	for _, r := range model.Requests() {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &req)
		for _, m := range req.Messages {
			if m.Role == "tool" && len(m.Content) > 20<<10 {
				bigTools++
				break
			}
		}
	}
	if bigTools < tally.kinds["tool"] {
		t.Errorf("the model received a large tool result in %d requests, want at least %d (one per tool turn)", bigTools, tally.kinds["tool"])
	}
	for _, m := range []string{"soak turn 0 (plain)", "soak turn 1 (tool)"} {
		found := false
		for _, r := range s.lines(t) {
			found = found || strings.Contains(r.Event, m)
		}
		if !found {
			tally.lost++
			t.Errorf("the transcript lost the user message %q", m)
		}
	}

	// Pristine restore: every line the host wrote comes back byte for byte.
	var pr cliResult
	for try := 0; try < 20; try++ {
		// the host's last write may be less than the quiet period ago
		if pr = bs(t, "restore", sessionKey, "--all", "--pristine", "--json", "--agents-dir", s.agents); !strings.Contains(pr.stdout, `"kind": "busy"`) {
			break
		}
		time.Sleep(time.Second)
	}
	if pr.code != 0 {
		t.Fatalf("restore --all --pristine: %s", pr)
	}
	final := s.lines(t)
	byID := map[string]string{}
	for _, r := range final {
		if id := lineID(r.Event); id != "" {
			byID[id] = r.Event
		}
	}
	checked := 0
	for id, want := range clean {
		got, ok := byID[id]
		if !ok {
			t.Errorf("pristine: entry %s is gone", id)
			continue
		}
		if got != want {
			t.Errorf("pristine: entry %s is not the host's line (%d bytes, want %d):\n got %.400s\nwant %.400s", id, len(got), len(want), got, want)
		}
		checked++
	}
	if ids := rowPlaceholders(final); len(ids) > 0 {
		t.Errorf("pristine: %d placeholders left", len(ids))
	}
	if era == openclaw.V9 {
		integrity(t, s.path)
	}
	if stopped != "" {
		t.Logf("%s: %s", era, stopped)
	}
	t.Logf("%s: %d turns %v in %s; daemon: %s; %d restores during runs; %d runs ended by the host as asked (failed, timeout, killed); %d model requests carried a large tool result",
		era, turns, tally.kinds, time.Since(t0).Round(time.Second), runs, tally.restores, tally.hostEnded, bigTools)
	t.Logf("%s: entries lost %d, sessions reset %d, conflict messages %d, turns failed because of us %d; %d entries seen, %d lines back byte for byte after the pristine restore",
		era, tally.lost, tally.resets, tally.trouble, tally.ourFail, len(seen), checked)
}

// soakRetrySettings writes the main agent's settings.json (the agent runtime's global settings, in the agent dir) with
// one provider retry for a failed model call instead of the default eight.
func soakRetrySettings(st *openclaw.State) error {
	dir := filepath.Join(st.AgentsDir(), "main", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"retry":{"provider":{"maxRetries":1}}}`+"\n"), 0o600)
}

// runDaemon opens BrainSurgeon's daemon over agents (what `brainsurgeon serve` runs, in-process) with a debug text
// log, serves its REST API on a loopback test server and starts its schedule. stop stops the server and the daemon;
// it may be called more than once and runs at cleanup too, before the host's cleanup when the host was started
// first. When the test failed, the log's tail is logged.
func runDaemon(t *testing.T, agents string) (logs *syncBuffer, srv *httptest.Server, stop func()) {
	t.Helper()
	logs = &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, ""), Logger: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	handler, err := apiOver(ctx, d, api.Options{Logger: log, UI: ui.Handler()})
	if err != nil {
		cancel()
		d.Close()
		t.Fatal(err)
	}
	srv = httptest.NewServer(handler)
	stop = sync.OnceFunc(func() {
		srv.Close()
		cancel()
		d.Close()
	})
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("daemon log (tail):\n%s", logs.tail(6000))
		}
	})
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return logs, srv, stop
}

// soakRestore restores one extracted entry during a held run, through purge_control or the REST API, and checks
// the answer came at once, was queued, and holds the value the host wrote. It returns the entry, or "" when
// nothing is extracted yet.
func soakRestore(t *testing.T, s soakSession, srv *httptest.Server, kind string, clean map[string]string) string {
	t.Helper()
	ids := rowPlaceholders(s.lines(t))
	if len(ids) == 0 {
		return ""
	}
	id := ids[len(ids)/2]
	var content map[string]string
	var queued bool
	start := time.Now()
	if kind == "held+purge_control" {
		r := purgeControl(t, "restore", id, "--agent", "main", "--session", sessionKey, "--json", "--agents-dir", s.agents)
		var out struct {
			Queued  bool              `json:"queued"`
			Content map[string]string `json:"content"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil {
			t.Errorf("purge_control restore %s during a run: %s", id, r)
			return ""
		}
		content, queued = out.Content, out.Queued
	} else {
		var out struct {
			Queued  bool              `json:"queued"`
			Content map[string]string `json:"content"`
		}
		apitest.Call(t, srv, "POST", "/api/sessions/main/"+s.id+"/entries/"+id+"/restore", "{}", http.StatusOK, &out)
		content, queued = out.Content, out.Queued
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("%s restore of %s took %s", kind, id, took)
	}
	if !queued || len(content) == 0 {
		t.Errorf("%s restore of %s during a run: queued %v, %d values", kind, id, queued, len(content))
	}
	if line, ok := clean[id]; ok {
		for k, v := range content {
			if want, ok := valueAt(t, []byte(line), id, k); !ok || !sameValue(v, want) {
				t.Errorf("%s restore of %s %s: %d bytes, the host wrote %d", kind, id, k, len(v), len(want))
			}
		}
	}
	return id
}

// daemonRuns sums the daemon's "Prune run:" log lines.
type daemonRuns struct {
	runs, processed, extracted, busy, failed, writeBacks int
}

func (r daemonRuns) String() string {
	return fmt.Sprintf("%d runs, %d sessions processed, %d extracted, %d busy, %d failed, %d write-backs",
		r.runs, r.processed, r.extracted, r.busy, r.failed, r.writeBacks)
}

var pruneRunRE = regexp.MustCompile(`Prune run: \d+ sessions?, (\d+) processed, \d+ unchanged, (\d+) extracted \(\d+ values?, \d+ bytes? saved\), (\d+) busy, (\d+) failed, (\d+) write-backs?`)

func soakRuns(log string) daemonRuns {
	var r daemonRuns
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		m := pruneRunRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		r.runs++
		r.processed += n(1)
		r.extracted += n(2)
		r.busy += n(3)
		r.failed += n(4)
		r.writeBacks += n(5)
	}
	return r
}
