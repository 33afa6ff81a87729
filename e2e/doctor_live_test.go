//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
)

// doctorRefusal is the start of the reason `doctor --fix` gives for a session of OpenClaw's SQLite store.
const doctorRefusal = "BrainSurgeon never inserts or re-parents rows of OpenClaw's SQLite store"

// doctorNote is the text of the file the tool call of TestDoctorLive reads (what its tool result holds);
// openclawMissingResult is the text of the result OpenClaw's repair makes up for a call without one.
const (
	doctorNote            = "a note for the doctor test"
	openclawMissingResult = "[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."
)

// doctorCorruptions are the on-disk damages TestDoctorLive makes to sessions made by real turns, each on the
// newest tool call of its session, as crashes and aborts leave them:
//   - missing: the tool result line is gone (the process died between the call and its result); the entry after
//     it hangs from the call;
//   - aborted: the assistant message with the call says stopReason "aborted" (the run was aborted after the
//     result was written), so the host drops it and its result is left without a call;
//   - branch: the result hangs from the call's parent, so that the call is on another branch of the tree.
//
// OpenClaw 2026.7.35 repairs each of them in memory on its way to the model (its session-transcript-repair
// inserts "[openclaw] missing tool result …" for a missing result, drops an aborted/errored assistant message
// with its results and drops a result whose call is not in the assistant message before it; a second call with
// the id of an earlier one is dropped too), and never writes the repair back: the damage stays on disk.
var doctorCorruptions = []string{"missing", "aborted", "branch"}

// doctorReport is the part of `brainsurgeon doctor --json` the test reads.
type doctorReport struct {
	Sessions []struct {
		Session    string `json:"session"`
		SessionID  string `json:"session_id"`
		Backend    string `json:"backend"`
		Health     string `json:"health"`
		FixRefused string `json:"fix_refused"`
		Problems   []struct {
			Kind    string `json:"kind"`
			Fixable bool   `json:"fixable"`
		} `json:"problems"`
	} `json:"sessions"`
	Fixes []struct {
		Inserted int    `json:"inserted_results"`
		Detached int    `json:"detached_results"`
		Applied  bool   `json:"applied"`
		Refused  string `json:"refused"`
	} `json:"fixes"`
}

// doctor runs `brainsurgeon doctor ARGS... --agents-dir agents --json` and decodes its output.
func doctor(t *testing.T, agents string, args ...string) (doctorReport, cliResult) {
	t.Helper()
	r := bs(t, append(append([]string{"doctor"}, args...), "--agents-dir", agents, "--json")...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r)
	}
	return rep, r
}

// health returns the health doctor reports for the session id (fails when it is not reported).
func (rep doctorReport) health(t *testing.T, id string) (string, string) {
	t.Helper()
	for _, s := range rep.Sessions {
		if s.SessionID == id {
			kinds := []string{}
			for _, p := range s.Problems {
				kinds = append(kinds, fmt.Sprintf("%s(fixable %v)", p.Kind, p.Fixable))
			}
			return s.Health, strings.Join(kinds, " ")
		}
	}
	t.Fatalf("doctor reports no session %s", id)
	return "", ""
}

// modelTurns runs one agent turn per session key at the same time (msgs[i] on keys[i]; the turns may fail) and
// returns, per turn, its outcome and the model requests that carry its message. The messages must differ and
// hold no character JSON encoders escape differently (<, >, &).
func modelTurns(t *testing.T, h *openclaw.Host, m *openclaw.Model, keys, msgs []string) ([][]openclaw.ModelRequest, []error) {
	t.Helper()
	before := len(m.Requests())
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
			defer cancel()
			r, err := h.Gateway.Agent(ctx, openclaw.Turn{Key: keys[i], Message: msgs[i]})
			if err == nil {
				var out struct {
					Status string `json:"status"`
				}
				if derr := r.DecodeJSON(&out); derr != nil || out.Status != "ok" {
					err = fmt.Errorf("turn status %q (%v): %.500s", out.Status, derr, r.Stdout)
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	reqs := make([][]openclaw.ModelRequest, len(keys))
	for _, q := range m.Requests()[before:] {
		for i, msg := range msgs {
			enc, _ := json.Marshal(msg)
			if bytes.Contains(q.Body, enc[1:len(enc)-1]) {
				reqs[i] = append(reqs[i], q)
			}
		}
	}
	return reqs, errs
}

// TestDoctorLive runs `brainsurgeon doctor` beside real gateways with the test model refusing requests with
// unpaired tool blocks as providers do.
//
// On 2026.7.35 (JSONL), per corruption of [doctorCorruptions], on a session made by real turns (a tool call and
// its result): the damage is made while the gateway is idle; a turn shows what reaches the model (refused, or
// repaired by the host in memory: the test logs which); `doctor` says the session is broken; `doctor --fix`
// repairs it; the next turn succeeds and the model refuses none of its requests; `doctor` says ok; and
// `restore --all --pristine` gives the damaged bytes back byte for byte (followed by what the turn after the fix
// appended).
//
// On 2026.9.6 (SQLite), with a gateway running on the store: a session the host imported with a tool call
// without result is diagnosed broken, `doctor --fix` refuses it with the reason (exit 1) and no row of the
// session changes; a turn on it then shows what reaches the model (logged).
func TestDoctorLive(t *testing.T) {
	// each era is a host of its own (state dir, gateway, mock): they run at once
	t.Run(openclaw.V7, func(t *testing.T) { t.Parallel(); doctorLiveJSONL(t) })
	t.Run(openclaw.V9, func(t *testing.T) { t.Parallel(); doctorLiveSQLite(t) })
}

func doctorLiveJSONL(t *testing.T) {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	model.RejectUnpaired(true)
	h := openclaw.NewHostWithModel(t, openclaw.V7, model.URL(), nil)
	agents := h.State.AgentsDir()
	// No quiet period: the fix runs right after the turns (the host lock and the run-in-flight check still
	// apply).
	writeConfig(t, agents, map[string]any{"idle_seconds": 0})
	note := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(note, []byte(doctorNote+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	type sess struct {
		kind, key, id, path string
		damaged             []byte
	}
	var ss []*sess
	var keys, msgs []string
	for _, kind := range doctorCorruptions {
		s := &sess{kind: kind, key: "agent:main:doctor-" + kind}
		ss = append(ss, s)
		keys = append(keys, s.key)
		msgs = append(msgs, `read it (`+kind+`) CALL:read:{"path":"`+note+`"}`)
	}
	// The turns of the three sessions run at the same time (each turn's CLI takes seconds to start).
	turns := func(what string) ([][]openclaw.ModelRequest, []error) {
		var ms []string
		for _, s := range ss {
			ms = append(ms, what+" ("+s.kind+")")
		}
		return modelTurns(t, h, model, keys, ms)
	}
	if _, errs := modelTurns(t, h, model, keys, msgs); errors.Join(errs...) != nil {
		t.Fatalf("the first turns failed: %v", errors.Join(errs...))
	}
	for _, s := range ss {
		s.path = transcriptOf(t, h, s.key)
		s.id = strings.TrimSuffix(filepath.Base(s.path), ".jsonl")
		corrupt(t, s.path, s.kind)
	}
	if rej := model.Rejected(); len(rej) != 0 {
		t.Fatalf("the model refused %d requests of the clean turns: %v", len(rej), rej[0].Unpaired)
	}

	// The turn on the damaged session: refused, or repaired by the host in memory.
	damagedReqs, damagedErrs := turns("after the damage")
	for i, s := range ss {
		reqs, err := damagedReqs[i], damagedErrs[i]
		refused := 0
		for _, q := range reqs {
			if q.Unpaired != nil {
				refused++
			}
		}
		switch {
		case len(reqs) == 0:
			t.Fatalf("%s: the turn on the damaged session made no model request (%v)", s.kind, err)
		case refused > 0:
			t.Logf("%s: the turn on the damaged session was refused by the model (%s); turn error: %v", s.kind, reqs[0].Unpaired, err)
		case err != nil:
			t.Fatalf("%s: the turn on the damaged session failed without a refusal: %v", s.kind, err)
		default:
			// What the host's own repair shows the model: no result without its call, and OpenClaw's synthetic
			// result for a call without one.
			body := string(reqs[0].Body)
			if strings.Contains(body, doctorNote) || (s.kind == "missing") != strings.Contains(body, openclawMissingResult) {
				t.Errorf("%s: the host passed the damaged session without refusal, but not as its repair would: %.2000s", s.kind, body)
			}
			t.Logf("%s: the host repaired the damage in memory: the model received no unpaired block (%d requests)", s.kind, len(reqs))
		}
		s.damaged = readFile(t, s.path)
	}

	rep, r := doctor(t, agents)
	if r.code != 0 {
		t.Fatalf("doctor: %s", r)
	}
	for _, s := range ss {
		if hl, probs := rep.health(t, s.id); hl != "broken" {
			t.Errorf("%s: doctor says %q (%s), want broken", s.kind, hl, probs)
		} else {
			t.Logf("%s: doctor says broken: %s", s.kind, probs)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	fixed := map[string][]byte{}
	for _, s := range ss {
		if !bytes.Equal(readFile(t, s.path), s.damaged) {
			t.Fatalf("%s: doctor (without --fix) changed the transcript", s.kind)
		}
		rep, r := doctor(t, agents, "--fix", "--session", "main/"+s.id)
		if r.code != 0 || len(rep.Fixes) != 1 || !rep.Fixes[0].Applied {
			t.Fatalf("%s: doctor --fix: %s", s.kind, r)
		}
		t.Logf("%s: doctor --fix inserted %d results, detached %d", s.kind, rep.Fixes[0].Inserted, rep.Fixes[0].Detached)
		fixed[s.id] = readFile(t, s.path)
	}

	before := len(model.Rejected())
	fixedReqs, fixedErrs := turns("after the fix")
	for i, s := range ss {
		reqs, err := fixedReqs[i], fixedErrs[i]
		if err != nil {
			t.Errorf("%s: the turn after the fix failed: %v", s.kind, err)
		}
		for _, q := range reqs {
			if q.Unpaired != nil || q.Status != http.StatusOK {
				t.Errorf("%s: the model answered a request after the fix with HTTP %d (%v)", s.kind, q.Status, q.Unpaired)
			}
		}
		// The model sees what the host's own repair showed it: the result that lost its call is off the path,
		// and a call without result has the host's synthetic error result.
		if len(reqs) > 0 {
			body := string(reqs[0].Body)
			if strings.Contains(body, doctorNote) {
				t.Errorf("%s: after the fix the model still receives the result that lost its call", s.kind)
			}
			if s.kind == "missing" && !strings.Contains(body, openclawMissingResult) {
				t.Errorf("%s: after the fix the model does not receive OpenClaw's synthetic result %q", s.kind, openclawMissingResult)
			}
		}
	}
	if n := len(model.Rejected()); n != before {
		t.Errorf("the model refused %d requests after the fix", n-before)
	}
	rep, r = doctor(t, agents)
	if r.code != 0 {
		t.Fatalf("doctor after the fix: %s", r)
	}
	for _, s := range ss {
		if hl, probs := rep.health(t, s.id); hl != "ok" {
			t.Errorf("%s: after the fix and a turn, doctor says %q (%s), want ok", s.kind, hl, probs)
		}
	}

	// restore --all --pristine takes the fix back: the damaged bytes, then what the turn after the fix appended.
	for _, s := range ss {
		checkPristine(t, s.kind, s.path, agents, "main/"+s.id, s.damaged, fixed[s.id])
	}
	t.Logf("2026.7.35 done in %s", time.Since(t0).Round(time.Second))
}

// checkPristine checks that the host only appended to the fixed transcript at path, then that `restore --all
// --pristine` of session gives back the damaged bytes followed by what the host appended after the fix.
func checkPristine(t *testing.T, kind, path, agentsDir, session string, damaged, fixed []byte) {
	t.Helper()
	now := readFile(t, path)
	if !bytes.HasPrefix(now, fixed) {
		t.Fatalf("%s: the host did not append to the fixed transcript (it rewrote it)", kind)
	}
	appended := now[len(fixed):]
	r := bs(t, "restore", "--all", "--pristine", "--agents-dir", agentsDir, session)
	if r.code != 0 {
		t.Fatalf("%s: restore --all --pristine: %s", kind, r)
	}
	want := append(append([]byte(nil), damaged...), appended...)
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("%s: after restore --all --pristine the transcript is not the damaged bytes plus the appended turn (%d bytes, want %d)",
			kind, len(got), len(want))
	}
}

// brokenTranscript writes a pi v3 transcript of an OpenClaw session whose tool call has no result (the process
// died between the call and its result) and returns its path.
func brokenTranscript(t *testing.T, sessionID string) string {
	t.Helper()
	ts := time.Now().UTC().Add(-time.Hour)
	at := func(i int) string { return ts.Add(time.Duration(i) * time.Second).Format("2006-01-02T15:04:05.000Z") }
	ms := func(i int) int64 { return ts.Add(time.Duration(i) * time.Second).UnixMilli() }
	lines := []any{
		map[string]any{"type": "session", "version": 3, "id": sessionID, "timestamp": at(0), "cwd": "/tmp"},
		map[string]any{"type": "message", "id": "a1b2c3d4", "parentId": nil, "timestamp": at(1),
			"message": map[string]any{"role": "user", "content": "read the note", "timestamp": ms(1)}},
		map[string]any{"type": "message", "id": "b2c3d4e5", "parentId": "a1b2c3d4", "timestamp": at(2),
			"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall",
				"id": "ollama_call_doctor-1", "name": "read", "arguments": map[string]any{"path": "/tmp/note.txt"}}},
				"stopReason": "toolUse", "api": "ollama", "provider": "ollama", "model": openclaw.MockModel, "timestamp": ms(2)}},
		map[string]any{"type": "message", "id": "c3d4e5f6", "parentId": "b2c3d4e5", "timestamp": at(3),
			"message": map[string]any{"role": "user", "content": "are you there?", "timestamp": ms(3)}},
		map[string]any{"type": "message", "id": "d4e5f6a7", "parentId": "c3d4e5f6", "timestamp": at(4),
			"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "yes"}},
				"stopReason": "stop", "api": "ollama", "provider": "ollama", "model": openclaw.MockModel, "timestamp": ms(4)}},
	}
	var b bytes.Buffer
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), sessionID+".jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func doctorLiveSQLite(t *testing.T) {
	t0 := time.Now()
	model, err := openclaw.StartModel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	model.RejectUnpaired(true)
	const brokenID = "0d0c7012-3e4f-4a5b-8c6d-7e8f90a1b2c3"
	h := openclaw.NewHostWithModel(t, openclaw.V9, model.URL(),
		seedSQLite(t, "agent:main:doctor-broken", brokenID, brokenTranscript(t, brokenID)))
	agents := h.State.AgentsDir()
	db := storePath(h.State)
	// A session made by real turns beside it, in the live store.
	if _, errs := modelTurns(t, h, model, []string{sessionKey}, []string{"hello from the doctor test"}); errs[0] != nil {
		t.Fatalf("turn: %v", errs[0])
	}
	liveID := liveSessionID(t, h, sessionKey)

	rep, r := doctor(t, agents)
	if r.code != 0 {
		t.Fatalf("doctor on the SQLite store: %s", r)
	}
	if hl, probs := rep.health(t, brokenID); hl != "broken" {
		t.Errorf("the imported session with a call without result: doctor says %q (%s), want broken", hl, probs)
	}
	if hl, probs := rep.health(t, liveID); hl != "ok" {
		t.Errorf("the session made by a real turn: doctor says %q (%s), want ok", hl, probs)
	}
	for _, s := range rep.Sessions {
		if s.SessionID == brokenID && !strings.Contains(s.FixRefused, doctorRefusal) {
			t.Errorf("the SQLite session's report does not say why a fix is refused: fix_refused %q", s.FixRefused)
		}
	}

	diagnosed := len(rep.Sessions)
	digest := transcriptDigest(t, db, brokenID)
	rows := sessionRows(t, db, brokenID)
	rep, r = doctor(t, agents, "--fix", "--session", "main/"+brokenID)
	if r.code != 1 {
		t.Errorf("doctor --fix on the SQLite store: exit %d, want 1 (refused)\n%s", r.code, r)
	}
	if len(rep.Fixes) != 1 || rep.Fixes[0].Applied || !strings.Contains(rep.Fixes[0].Refused, doctorRefusal) {
		t.Errorf("doctor --fix on the SQLite store did not refuse with the reason: %s", r)
	}
	if transcriptDigest(t, db, brokenID) != digest {
		t.Errorf("doctor --fix changed rows of the SQLite session (%d rows before, %d after)", len(rows), len(sessionRows(t, db, brokenID)))
	}
	// What reaches the model from the broken session (for the record: refused, or repaired by the host in memory).
	reqs, errs := modelTurns(t, h, model, []string{"agent:main:doctor-broken"}, []string{"after the import (broken)"})
	switch refused := len(reqs[0]) > 0 && reqs[0][0].Unpaired != nil; {
	case len(reqs[0]) == 0:
		t.Errorf("the turn on the broken SQLite session made no model request (%v)", errs[0])
	case refused:
		t.Logf("2026.9.6: the turn on the broken session was refused by the model (%s); turn error: %v", reqs[0][0].Unpaired, errs[0])
	default:
		t.Logf("2026.9.6: the host repaired the broken session in memory (turn error: %v; synthetic result shown: %v)", errs[0],
			strings.Contains(string(reqs[0][0].Body), openclawMissingResult))
	}
	t.Logf("2026.9.6: doctor diagnosed %d sessions, --fix refused (%d rows unchanged) in %s", diagnosed, len(rows),
		time.Since(t0).Round(time.Second))
}

// transcriptOf returns the transcript path of the session key of agent main.
func transcriptOf(t *testing.T, h *openclaw.Host, key string) string {
	t.Helper()
	m, err := h.State.Sessions("main")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := m[key]
	if !ok || e.SessionFile == "" {
		t.Fatalf("sessions.json has no transcript for %s: %+v", key, e)
	}
	return e.SessionFile
}

// transcriptLine is a transcript line decoded for a corruption: its members (in their order) and what the
// corruptions look at.
type transcriptLine struct {
	raw      []byte
	m        map[string]json.RawMessage
	id, pid  string
	role     string
	toolCall bool
}

func (l *transcriptLine) set(t *testing.T, k string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	l.m[k] = b
}

// setMsg sets the member k of the line's message (the message's members keep their order).
func (l *transcriptLine) setMsg(t *testing.T, k string, v any) {
	t.Helper()
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(l.m["message"], &msg); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	msg[k] = b
	l.m["message"] = encodeOrdered(l.m["message"], msg)
}

// encodeOrdered encodes the object m with the members of orig in orig's order (members orig lacks are left
// out: the corruptions only change members).
func encodeOrdered(orig []byte, m map[string]json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(orig))
	_, _ = dec.Token()
	var out bytes.Buffer
	out.WriteByte('{')
	for first := true; dec.More(); first = false {
		tok, _ := dec.Token()
		k, _ := tok.(string)
		var skip json.RawMessage
		_ = dec.Decode(&skip)
		if !first {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(m[k])
	}
	out.WriteByte('}')
	return out.Bytes()
}

// corrupt damages the transcript at p as kind of [doctorCorruptions] says, on its newest tool call.
func corrupt(t *testing.T, p, kind string) {
	t.Helper()
	var ls []*transcriptLine
	for _, raw := range bytes.Split(readFile(t, p), []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		l := &transcriptLine{raw: raw}
		if err := json.Unmarshal(raw, &l.m); err != nil {
			t.Fatalf("corrupt %s: %v: %.200s", p, err, raw)
		}
		_ = json.Unmarshal(l.m["id"], &l.id)
		_ = json.Unmarshal(l.m["parentId"], &l.pid)
		var msg struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		}
		_ = json.Unmarshal(l.m["message"], &msg)
		l.role = msg.Role
		for _, c := range msg.Content {
			l.toolCall = l.toolCall || c.Type == "toolCall"
		}
		ls = append(ls, l)
	}
	call, res := -1, -1
	for i, l := range ls {
		if l.role == "assistant" && l.toolCall {
			call = i
		}
		if l.role == "toolResult" {
			res = i
		}
	}
	if call < 0 || res < call {
		t.Fatalf("corrupt %s: no tool call with its result in %s", kind, p)
	}
	drop := -1
	switch kind {
	case "missing":
		drop = res
		for _, l := range ls {
			if l.pid == ls[res].id {
				l.set(t, "parentId", ls[res].pid)
			}
		}
	case "aborted":
		ls[call].setMsg(t, "stopReason", "aborted")
	case "branch":
		ls[res].set(t, "parentId", ls[call].pid)
	default:
		t.Fatalf("corrupt: unknown corruption %q", kind)
	}
	var b bytes.Buffer
	for i, l := range ls {
		if i == drop {
			continue
		}
		b.Write(encodeOrdered(l.raw, l.m))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}
