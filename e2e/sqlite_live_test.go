//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/api/ui"
	"github.com/brainsurgeon/brainsurgeon/daemon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/apitest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/wiring"
)

// liveSQLiteSeed is the corpus session TestLiveSQLite imports: an OpenClaw session of 2.8 MB with hundreds of
// large tool results (the one the issue measured the host's model view on).
const (
	liveSQLiteSeedID   = "0139686e-bbb1-4d89-8ef1-936bb36dd277"
	liveSQLiteSeedFile = liveSQLiteSeedID + ".jsonl"
)

// seedSQLite returns a seed function for [openclaw.NewHost] that puts the corpus transcript src in place as
// sessionID under key and moves it into the agent's SQLite store with OpenClaw 2026.9.6's own importer, as a user
// upgrading to 2026.8+ does.
func seedSQLite(t *testing.T, key, sessionID, src string) func(st *openclaw.State) error {
	return func(st *openclaw.State) error {
		if _, err := st.Seed("main", key, sessionID, src); err != nil {
			return err
		}
		in := openclaw.Require(t, openclaw.V9)
		e := openclaw.NewEnv(in.Node)
		defer openclaw.KillLeftovers(e.Marker)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		rep, err := openclaw.Import(ctx, e, in, st)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		if _, err := os.Stat(storePath(st)); err != nil {
			return fmt.Errorf("the importer wrote no store: %w (report %.1000s)", err, rep)
		}
		return nil
	}
}

// storePath is the main agent's SQLite store.
func storePath(st *openclaw.State) string {
	return filepath.Join(st.AgentsDir(), "main", "agent", "openclaw-agent.sqlite")
}

// openRO opens the store read-only for the checks (the host and BrainSurgeon write it; the test never does).
func openRO(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// storeRow is one transcript row of a session, its event decoded.
type storeRow struct {
	Seq   int64
	Event string
}

var zdec, _ = zstd.NewReader(nil)

// sessionRows reads every transcript row of sessionID in seq order, zstd rows decoded.
func sessionRows(t *testing.T, path, sessionID string) []storeRow {
	t.Helper()
	db := openRO(t, path)
	rows, err := db.Query(`SELECT seq, event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storeRow
	for rows.Next() {
		var r storeRow
		var ev sql.NullString
		var z []byte
		if err := rows.Scan(&r.Seq, &ev, &z); err != nil {
			t.Fatal(err)
		}
		if ev.Valid {
			r.Event = ev.String
		} else {
			b, err := zdec.DecodeAll(z, nil)
			if err != nil {
				t.Fatalf("row %d: zstd: %v", r.Seq, err)
			}
			r.Event = string(b)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return out
}

// transcriptDigest hashes every column of the session's transcript tables (events, identities, watermark), the
// tables a write of ours changes. The host's memory indexer rewrites other tables even while a call is held, so
// the whole file is no measure.
func transcriptDigest(t *testing.T, path, sessionID string) string {
	t.Helper()
	db := openRO(t, path)
	h := sha256.New()
	for _, q := range []string{
		`SELECT seq, event_json, event_zstd, event_utf8_bytes, navigation_json, created_at FROM transcript_events WHERE session_id = ? ORDER BY seq`,
		`SELECT event_id, seq, event_type, parent_id, created_at FROM transcript_event_identities WHERE session_id = ? ORDER BY seq, event_id`,
		`SELECT generation, updated_at FROM transcript_rewrite_watermarks WHERE session_id = ?`,
	} {
		rows, err := db.Query(q, sessionID)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%v\x00", vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	db.Close()
	return hex.EncodeToString(h.Sum(nil))
}

// rowPlaceholders returns the entry ids of the placeholders in the rows, without repeats.
func rowPlaceholders(rows []storeRow) []string {
	var ids []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, m := range placeholderRE.FindAllStringSubmatch(r.Event, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				ids = append(ids, m[1])
			}
		}
	}
	return ids
}

// liveSessionID returns the session id the gateway serves key with (sessions.list, both eras).
func liveSessionID(t *testing.T, h *openclaw.Host, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := h.Gateway.SessionsList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Key == key {
			return r.SessionID
		}
	}
	t.Fatalf("sessions.list has no %s", key)
	return ""
}

// modelView is the size of what the model received in one request: its messages and their bytes (the JSON of
// the messages array).
type modelView struct{ messages, bytes int }

func (v modelView) String() string { return fmt.Sprintf("%d messages, %d bytes", v.messages, v.bytes) }

func viewOf(t *testing.T, body []byte) modelView {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("model request: %v", err)
	}
	n := 2 // [ and ]
	for i, m := range req.Messages {
		if i > 0 {
			n++
		}
		n += len(m)
	}
	return modelView{messages: len(req.Messages), bytes: n}
}

// purgeControl runs the purge_control binary (what the agent runs through its shell tool).
func purgeControl(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runBin(t, pcBin, args...)
}

// TestLiveSQLite runs BrainSurgeon beside a real OpenClaw 2026.9.6 gateway (loopback, mock model) on a corpus
// session moved into the SQLite store by OpenClaw's own importer:
//
//	a. while a model call is held, prune reports the session busy and the transcript tables do not change; the run
//	   then ends without a conflict;
//	b. after the run, prune extracts, and the next turn continues the same session with placeholders in the
//	   request (the model-view baseline is logged: bytes and messages before and after);
//	c. while the next model call is held, a restore through purge_control and one through the REST API answer at
//	   once with the original values and are queued; after the run both are applied, and the turn after carries
//	   the restored values;
//	c2. after a run that ended by --timeout, a restore is queued, not written (OpenClaw 2026.9 starts a new session on
//	    the next turn when the transcript changed after such a run), the next turn continues the same session, and
//	    the write-back is applied after it;
//	d. compact is refused with the reason (BrainSurgeon never inserts rows);
//	e. restore --all --pristine gives back every row the host wrote, content byte for byte, and the store passes
//	   PRAGMA integrity_check.
func TestLiveSQLite(t *testing.T) {
	t0 := time.Now()
	h := openclaw.NewHost(t, openclaw.V9, seedSQLite(t, sessionKey, liveSQLiteSeedID, corpusFile(t, liveSQLiteSeedFile)))
	agents := h.State.AgentsDir()
	db := storePath(h.State)
	writeConfig(t, agents, map[string]any{"enabled": true, "idle_seconds": 0, "min_saving_tokens": 0})
	if got := liveSessionID(t, h, sessionKey); got != liveSQLiteSeedID {
		t.Fatalf("the gateway serves %s as %s, want the imported %s", sessionKey, got, liveSQLiteSeedID)
	}
	original := sessionRows(t, db, liveSQLiteSeedID)
	t.Logf("imported: %d rows in %s", len(original), time.Since(t0).Round(time.Second))

	// a. a run in flight.
	held := holdTurn(t, h, "turn a, held")
	digest := transcriptDigest(t, db, liveSQLiteSeedID)
	rep, r := prune(t, agents, liveSQLiteSeedID)
	if rep.Status != "busy" {
		t.Errorf("a: prune during a run: status %q, want busy: %s", rep.Status, r)
	}
	if got := transcriptDigest(t, db, liveSQLiteSeedID); got != digest {
		t.Errorf("a: prune during a run changed the transcript tables")
	}
	endTurn(t, h, held, "a")
	if t.Failed() {
		return
	}
	c := chats(t, h)
	before := viewOf(t, c[len(c)-1].Body)

	// b. idle: prune extracts; the next turn sends placeholders.
	rowsBefore := sessionRows(t, db, liveSQLiteSeedID)
	rep, r = prune(t, agents, liveSQLiteSeedID)
	if rep.Status != "extracted" {
		t.Fatalf("b: prune after the run: status %q, want extracted: %s", rep.Status, r)
	}
	rowsAfter := sessionRows(t, db, liveSQLiteSeedID)
	ids := rowPlaceholders(rowsAfter)
	if len(ids) == 0 {
		t.Fatalf("b: no placeholders in the store after prune: %s", r)
	}
	cb := turn(t, h, "turn b, after prune")
	if !chatHas(cb, "[[extracted-") {
		t.Fatalf("b: the model request after prune carries no placeholder")
	}
	if got := liveSessionID(t, h, sessionKey); got != liveSQLiteSeedID {
		t.Fatalf("b: the turn after prune started a new session %s", got)
	}
	after := viewOf(t, cb.Body)
	same, changed := compareViews(t, c[len(c)-1].Body, cb.Body, "turn a, held")
	if changed == 0 {
		t.Errorf("b: no message the model received changed after prune")
	}
	t.Logf("b: of the %d history messages the model received before prune, %d are byte for byte the same after it and %d carry placeholders now",
		same+changed, same, changed)
	t.Logf("b: prune extracted %d entries (%d bytes saved; rows %d -> %d bytes); model view before prune %s, after %s (%.1f%% fewer bytes)",
		rep.Result.Entries, rep.Result.BytesSaved, rowBytes(rowsBefore), rowBytes(rowsAfter), before, after,
		100*(1-float64(after.bytes)/float64(before.bytes)))

	// c. restores while a model call is held: one through purge_control, one through the API.
	held = holdTurn(t, h, "turn c, held while restores are asked for")
	heldChat := chats(t, h)
	hc := heldChat[len(heldChat)-1]
	var carried []string
	for _, id := range ids {
		if chatHas(hc, "[[extracted-"+id+"]]") {
			carried = append(carried, id)
		}
	}
	if len(carried) < 2 {
		t.Fatalf("c: the held call carries %d placeholders, want 2", len(carried))
	}
	viaPC, viaAPI := carried[0], carried[1]
	digest = transcriptDigest(t, db, liveSQLiteSeedID)
	start := time.Now()
	pr := purgeControl(t, "restore", viaPC, "--agent", "main", "--session", sessionKey, "--json", "--agents-dir", agents)
	if pr.code != 0 {
		t.Fatalf("c: purge_control restore during a run: %s", pr)
	}
	var pcOut struct {
		Applied bool              `json:"applied"`
		Queued  bool              `json:"queued"`
		Content map[string]string `json:"content"`
	}
	if err := json.Unmarshal([]byte(pr.stdout), &pcOut); err != nil || pcOut.Applied || !pcOut.Queued || len(pcOut.Content) == 0 {
		t.Fatalf("c: purge_control restore: applied %v queued %v, %d values (%v): %s", pcOut.Applied, pcOut.Queued, len(pcOut.Content), err, pr)
	}
	checkContent(t, "c: purge_control", original, viaPC, pcOut.Content)
	tookPC := time.Since(start)

	srv := apiServer(t, agents)
	start = time.Now()
	var rr struct {
		Applied bool              `json:"applied"`
		Queued  bool              `json:"queued"`
		Content map[string]string `json:"content"`
	}
	apitest.Call(t, srv, "POST", "/api/sessions/main/"+liveSQLiteSeedID+"/entries/"+viaAPI+"/restore", "{}", http.StatusOK, &rr)
	if rr.Applied || !rr.Queued || len(rr.Content) == 0 {
		t.Fatalf("c: API restore during a run: applied %v queued %v, %d values", rr.Applied, rr.Queued, len(rr.Content))
	}
	checkContent(t, "c: API", original, viaAPI, rr.Content)
	t.Logf("c: restores answered during the run: purge_control %s, API %s", tookPC.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if got := transcriptDigest(t, db, liveSQLiteSeedID); got != digest {
		t.Fatalf("c: a restore during the run changed the transcript tables")
	}
	endTurn(t, h, held, "c")
	// The next prune applies the queued write-backs.
	rep, r = prune(t, agents, liveSQLiteSeedID)
	if rep.Status == "error" || rep.Status == "busy" {
		t.Fatalf("c: prune after the run: %s", r)
	}
	rowsBack := sessionRows(t, db, liveSQLiteSeedID)
	left := map[string]bool{}
	for _, id := range rowPlaceholders(rowsBack) {
		left[id] = true
	}
	for _, id := range []string{viaPC, viaAPI} {
		if left[id] {
			t.Errorf("c: the queued restore of %s was not applied after the run: %s", id, r)
		}
	}
	cd := turn(t, h, "turn d, after the restores")
	for _, id := range []string{viaPC, viaAPI} {
		if chatHas(cd, "[[extracted-"+id+"]]") {
			t.Errorf("c: the model still receives the placeholder of the restored %s", id)
		}
	}
	if got := liveSessionID(t, h, sessionKey); got != liveSQLiteSeedID {
		t.Fatalf("c: a new session %s after the restores", got)
	}

	// c2. a run that ends by --timeout, then a restore, then the next turn.
	if err := h.Mock.Hold(); err != nil {
		t.Fatal(err)
	}
	tctx, tcancel := context.WithTimeout(context.Background(), turnTimeout)
	tres, _ := h.Gateway.Agent(tctx, openclaw.Turn{Key: sessionKey, Message: "turn e, times out", Timeout: agentTimeout})
	tcancel()
	if err := h.Mock.Release(); err != nil {
		t.Fatal(err)
	}
	if tres != nil && hostTrouble.Match(append(tres.Stdout, tres.Stderr...)) {
		t.Fatalf("c2: the timing-out turn reports a conflict")
	}
	remaining := rowPlaceholders(sessionRows(t, db, liveSQLiteSeedID))
	if len(remaining) == 0 {
		t.Fatal("c2: no placeholder left to restore")
	}
	afterTimeout := remaining[0]
	rt := restoreEntry(t, agents, sessionKey, afterTimeout)
	var rtOut struct {
		Applied bool `json:"applied"`
		Queued  bool `json:"queued"`
	}
	if err := json.Unmarshal([]byte(rt.stdout), &rtOut); err != nil || rtOut.Applied || !rtOut.Queued {
		t.Errorf("c2: a restore after a timed-out run: applied %v, queued %v (%v), want queued until the next run: %s", rtOut.Applied, rtOut.Queued, err, rt)
	}
	t.Logf("c2: restore after the timed-out run: applied %v, queued %v", rtOut.Applied, rtOut.Queued)
	turn(t, h, "turn f, after the timed-out run")
	if got := liveSessionID(t, h, sessionKey); got != liveSQLiteSeedID {
		t.Fatalf("c2: the turn after a timed-out run and a restore started a new session %s", got)
	}
	rep, r = prune(t, agents, liveSQLiteSeedID)
	for _, id := range rowPlaceholders(sessionRows(t, db, liveSQLiteSeedID)) {
		if id == afterTimeout {
			t.Errorf("c2: the queued restore of %s was not applied after the next run: %s", id, r)
		}
	}

	// d. compact is refused.
	cr := bs(t, "compact", "--session", sessionKey, "--layer", "summarize", "--yes", "--json", "--agents-dir", agents)
	if cr.code == 0 || !strings.Contains(cr.stdout+cr.stderr, "refused") {
		t.Errorf("d: compact on the SQLite store: want a refusal with its reason: %s", cr)
	}
	t.Logf("d: compact refused: %.300s", strings.TrimSpace(cr.stderr))

	// e. pristine restore gives back every row the host wrote.
	pristine := bs(t, "restore", sessionKey, "--all", "--pristine", "--json", "--agents-dir", agents)
	if pristine.code != 0 {
		t.Fatalf("e: restore --all --pristine: %s", pristine)
	}
	final := sessionRows(t, db, liveSQLiteSeedID)
	bySeq := map[int64]string{}
	for _, r := range final {
		bySeq[r.Seq] = r.Event
	}
	for _, r := range original {
		if got, ok := bySeq[r.Seq]; !ok || got != r.Event {
			t.Fatalf("e: row %d is not the host's after the pristine restore (%d bytes, want %d)", r.Seq, len(got), len(r.Event))
		}
	}
	if ids := rowPlaceholders(final); len(ids) > 0 {
		t.Errorf("e: %d placeholders left after the pristine restore", len(ids))
	}
	integrity(t, db)
	for _, line := range strings.Split(h.Gateway.LogTail(8<<20), "\n") {
		if hostTrouble.MatchString(line) {
			t.Errorf("the gateway logs a conflict: %.300s", line)
		}
	}
	t.Logf("e: %d original rows back byte for byte (%d rows now); total %s", len(original), len(final), time.Since(t0).Round(time.Second))
}

// compareViews compares two model requests of one session message by message, up to the user message holding
// marker in the first (the history both carry): each message must be byte for byte the same, or carry a placeholder
// in the second that it did not carry in the first. It returns how many are the same and how many changed.
func compareViews(t *testing.T, first, second []byte, marker string) (same, changed int) {
	t.Helper()
	var a, b struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(first, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(second, &b); err != nil {
		t.Fatal(err)
	}
	end := -1
	for i, m := range a.Messages {
		if strings.Contains(string(m), marker) {
			end = i
		}
	}
	if end < 0 || end > len(b.Messages) {
		t.Fatalf("the first request has no message with %q, or the second is shorter (%d messages)", marker, len(b.Messages))
	}
	for i := 0; i < end; i++ {
		switch {
		case string(a.Messages[i]) == string(b.Messages[i]):
			same++
		case strings.Contains(string(b.Messages[i]), "[[extracted-") && !strings.Contains(string(a.Messages[i]), "[[extracted-"):
			changed++
		default:
			t.Errorf("model message %d changed without a placeholder:\nbefore %.300s\nafter  %.300s", i, a.Messages[i], b.Messages[i])
		}
	}
	return same, changed
}

func rowBytes(rows []storeRow) int {
	n := 0
	for _, r := range rows {
		n += len(r.Event)
	}
	return n
}

// checkContent checks that restored values are the entry's original values in the rows.
func checkContent(t *testing.T, step string, rows []storeRow, id string, content map[string]string) {
	t.Helper()
	var all []byte
	for _, r := range rows {
		all = append(append(all, r.Event...), '\n')
	}
	for k, v := range content {
		want, ok := valueAt(t, all, id, k)
		if !ok || !sameValue(v, want) {
			t.Fatalf("%s: restore of %s %s gave %d bytes, the host's row holds %d", step, id, k, len(v), len(want))
		}
	}
}

// integrity runs PRAGMA integrity_check on the store.
func integrity(t *testing.T, path string) {
	t.Helper()
	db := openRO(t, path)
	var res string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil || res != "ok" {
		t.Errorf("PRAGMA integrity_check: %q %v", res, err)
	}
}

// apiServer serves BrainSurgeon's REST API over agents (no scheduled runs) on a loopback test server.
func apiServer(t *testing.T, agents string) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := daemon.Open(ctx, daemon.Options{AgentsDir: agents, Open: wiring.Opener(agents, "")})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	handler, err := apiOver(ctx, d, api.Options{UI: ui.Handler()})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(func() {
		srv.Close()
		cancel()
		d.Close()
	})
	return srv
}
