package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// The ways breakTranscript breaks a session.
const (
	// missingResult: an assistant tool call no result answers, and a
	// user message after it.
	missingResult = "missing"
	// orphanResult: a tool result whose call no assistant message has,
	// and a user message after it.
	orphanResult = "orphan"
)

// breakTranscript appends to the transcript at path the unpaired tool
// block a crash leaves (see the constants), chained to its last entry.
func breakTranscript(tb testing.TB, path, how string) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	last := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.ID != "" {
			last = e.ID
		}
	}
	if last == "" {
		tb.Fatalf("%s: no entry to append to", path)
	}
	var msg string
	switch how {
	case missingResult:
		msg = `{"role":"assistant","content":[{"type":"toolCall","id":"call_lost","name":"read","arguments":{"path":"a.txt"}}],"stopReason":"toolUse","timestamp":1767225600000}`
	case orphanResult:
		msg = `{"role":"toolResult","toolCallId":"call_nowhere","toolName":"read","content":[{"type":"text","text":"file content"}],"isError":false,"timestamp":1767225600000}`
	default:
		tb.Fatalf("breakTranscript: unknown way %q", how)
	}
	tail := fmt.Sprintf(`{"type":"message","id":"dd000001","parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":%s}
{"type":"message","id":"dd000002","parentId":"dd000001","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go on"}],"timestamp":1767225601000}}
`, last, msg)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		tail = "\n" + tail
	}
	if err := os.WriteFile(path, append(data, tail...), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// doctorFixture is agent alpha with three small sessions: one with a tool
// call without result, one with a tool result without call, one healthy;
// and a .deleted transcript beside them.
func doctorFixture(t *testing.T) (*backend.Set, []string, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "agents", "alpha", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 3 {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		writeSynth(t, dir, id, synth.Options{Size: 12 << 10, Seed: uint64(i + 11)})
		ids = append(ids, id)
	}
	writeSessionsJSON(t, dir, "alpha", ids)
	breakTranscript(t, filepath.Join(dir, ids[0]+".jsonl"), missingResult)
	breakTranscript(t, filepath.Join(dir, ids[1]+".jsonl"), orphanResult)
	deleted := filepath.Join(dir, "0a0a0a0a-0000-4000-8000-000000000009.jsonl.deleted.2026-01-01T00-00-00.000Z")
	if err := os.WriteFile(deleted, []byte(`{"type":"session","version":3,"id":"0a0a0a0a-0000-4000-8000-000000000009"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), filepath.Join(root, "agents"), backend.Options{Idle: 0})
	if err != nil {
		t.Fatal(err)
	}
	return set, ids, deleted
}

// TestDoctorHealth checks the diagnosis in the API: the health and the
// problem counts in the sessions list (the same from the cache on the
// next list), the full report in the session detail, and GET /api/doctor
// with every session's report and the leftovers; all of it read-only.
func TestDoctorHealth(t *testing.T) {
	set, ids, deleted := doctorFixture(t)
	before := map[string][]byte{}
	for _, id := range ids {
		before[id], _ = os.ReadFile(filepath.Join(filepath.Dir(deleted), id+".jsonl"))
	}
	srv := serve(t, api.Options{Installation: set.Installation, Backend: set})
	c := &client{tb: t, srv: srv}

	want := map[string]struct {
		health string
		kind   string
	}{
		ids[0]: {doctor.HealthBroken, doctor.KindMissingResult},
		ids[1]: {doctor.HealthBroken, doctor.KindOrphanResult},
		ids[2]: {doctor.HealthOK, ""},
	}
	for pass := range 2 { // the second list answers from the cache
		var list struct {
			Sessions []api.SessionInfo `json:"sessions"`
		}
		c.json("GET", "/api/sessions?agent=alpha", "", 200, &list)
		if len(list.Sessions) != 3 {
			t.Fatalf("pass %d: %d sessions, want 3", pass, len(list.Sessions))
		}
		for _, s := range list.Sessions {
			w := want[s.SessionID]
			if s.Health != w.health {
				t.Errorf("pass %d: %s health %q, want %q", pass, s.SessionID, s.Health, w.health)
			}
			if w.kind == "" {
				if s.Problems != 0 || len(s.ProblemKinds) != 0 {
					t.Errorf("pass %d: %s problems %d %v, want none", pass, s.SessionID, s.Problems, s.ProblemKinds)
				}
				continue
			}
			if s.Problems != 1 || s.ProblemKinds[w.kind] != 1 {
				t.Errorf("pass %d: %s problems %d %v, want one %s", pass, s.SessionID, s.Problems, s.ProblemKinds, w.kind)
			}
		}
	}

	var det struct {
		Session api.SessionInfo `json:"session"`
		Doctor  *doctor.Report  `json:"doctor"`
	}
	c.json("GET", "/api/sessions/alpha/"+ids[0], "", 200, &det)
	if det.Doctor == nil || det.Doctor.Health != doctor.HealthBroken || det.Doctor.MissingResults != 1 || len(det.Doctor.Problems) != 1 {
		t.Fatalf("detail doctor = %+v, want broken with one missing tool result", det.Doctor)
	}
	if p := det.Doctor.Problems[0]; p.Kind != doctor.KindMissingResult || p.ToolCallID != "call_lost" || p.EntryID != "dd000001" || !p.Fixable {
		t.Errorf("detail problem = %+v, want the fixable missing result of call_lost at dd000001", p)
	}
	if det.Session.Health != doctor.HealthBroken {
		t.Errorf("detail session health %q, want broken", det.Session.Health)
	}

	var rep api.DoctorReport
	c.json("GET", "/api/doctor", "", 200, &rep)
	if len(rep.Sessions) != 3 || len(rep.Errors) != 0 {
		t.Fatalf("GET /api/doctor: %d reports, errors %v; want 3 and none", len(rep.Sessions), rep.Errors)
	}
	for _, r := range rep.Sessions {
		if w := want[r.SessionID]; r.Health != w.health {
			t.Errorf("GET /api/doctor: %s health %q, want %q", r.SessionID, r.Health, w.health)
		}
	}
	t.Logf("leftovers: %+v", rep.Leftovers)
	if !rep.Leftovers.Available {
		t.Errorf("leftovers not available: the JSONL store scans for them")
	} else {
		found := false
		for _, l := range rep.Leftovers.Files {
			found = found || l.Path == deleted
		}
		if !found || len(rep.Leftovers.Agents) != 1 || rep.Leftovers.Agents[0].Agent != "alpha" {
			t.Errorf("leftovers = %+v, want alpha's .deleted transcript", rep.Leftovers)
		}
	}
	// The JSON names are snake_case, the lists never null.
	_, body, _ := c.do("GET", "/api/doctor?agent=nobody", "")
	for _, member := range []string{`"sessions":[]`, `"errors":[]`, `"leftovers":{"available":true,"agents":[]`, `"files":[]`, `"skipped":[]`} {
		if !strings.Contains(string(body), member) {
			t.Errorf("GET /api/doctor?agent=nobody lacks %s: %s", member, body)
		}
	}
	if code, body, _ := c.do("GET", "/api/doctor?agent=..%2Fx", ""); code != 400 || !strings.Contains(string(body), "agent") {
		t.Errorf("GET /api/doctor?agent=../x = %d %s, want 400 naming agent", code, body)
	}
	for _, id := range ids {
		after, _ := os.ReadFile(filepath.Join(filepath.Dir(deleted), id+".jsonl"))
		if !bytes.Equal(before[id], after) {
			t.Errorf("%s changed: the diagnosis must write nothing", id)
		}
	}
	if _, err := os.Stat(deleted); err != nil {
		t.Errorf("the leftover is gone: %v", err)
	}
}

// TestDoctorHealthEveryBackend diagnoses the sessions of both stores (the
// SQLite store's too, which the doctor reads but never fixes): each has
// a health in the list, and GET /api/doctor reports every one.
func TestDoctorHealthEveryBackend(t *testing.T) {
	f := newFixture(t, true)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	var list struct {
		Sessions []api.SessionInfo `json:"sessions"`
	}
	c.json("GET", "/api/sessions", "", 200, &list)
	backends := map[string]bool{}
	for _, s := range list.Sessions {
		backends[s.Backend] = true
		if s.Error == "" && s.Health == "" {
			t.Errorf("%s/%s (%s): no health", s.Agent, s.SessionID, s.Backend)
		}
	}
	if !backends["jsonl"] || !backends["sqlite"] {
		t.Fatalf("backends listed %v, want both", backends)
	}
	var rep api.DoctorReport
	c.json("GET", "/api/doctor", "", 200, &rep)
	if len(rep.Errors) != 0 || len(rep.Sessions) != len(list.Sessions) {
		t.Errorf("GET /api/doctor: %d reports, errors %v; want %d and none", len(rep.Sessions), rep.Errors, len(list.Sessions))
	}
	for _, r := range rep.Sessions {
		if r.Backend == "sqlite" && r.Fixable && r.FixRefused == "" {
			t.Errorf("%s: fixable on SQLite without the refusal", r.Session)
		}
	}
}

// TestSummarizeLeftovers checks the per agent and kind sums of the
// leftovers report: counts, bytes, disk bytes, the oldest time, and the
// unique files with their bytes, agents and kinds by name.
func TestSummarizeLeftovers(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name  string
		files []bs.Leftover
		want  []doctor.LeftoverAgent
	}{
		{"None", nil, []doctor.LeftoverAgent{}},
		{"OneFile",
			[]bs.Leftover{{Agent: "main", Kind: bs.LeftoverDeleted, Bytes: 10, DiskBytes: 4096, ModTime: day(3), Unique: true}},
			[]doctor.LeftoverAgent{{Agent: "main", Kinds: []doctor.LeftoverKind{{Kind: "deleted", Count: 1, Bytes: 10, DiskBytes: 4096, Oldest: day(3), Unique: 1, UniqueBytes: 10}}}}},
		{"AgentsAndKinds",
			[]bs.Leftover{
				{Agent: "work", Kind: bs.LeftoverTemp, Bytes: 1, DiskBytes: 4096, ModTime: day(9)},
				{Agent: "main", Kind: bs.LeftoverReset, Bytes: 100, DiskBytes: 4096, ModTime: day(5), Unique: true},
				{Agent: "main", Kind: bs.LeftoverDeleted, Bytes: 20, DiskBytes: 4096, ModTime: day(4)},
				{Agent: "main", Kind: bs.LeftoverReset, Bytes: 300, DiskBytes: 8192, ModTime: day(2)},
			},
			[]doctor.LeftoverAgent{
				{Agent: "main", Kinds: []doctor.LeftoverKind{
					{Kind: "deleted", Count: 1, Bytes: 20, DiskBytes: 4096, Oldest: day(4)},
					{Kind: "reset", Count: 2, Bytes: 400, DiskBytes: 12288, Oldest: day(2), Unique: 1, UniqueBytes: 100},
				}},
				{Agent: "work", Kinds: []doctor.LeftoverKind{{Kind: "tmp", Count: 1, Bytes: 1, DiskBytes: 4096, Oldest: day(9)}}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := doctor.SummarizeLeftovers(tt.files); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestDoctorHealthListedValues gives a session two placeholders, one
// without a side record and one whose record is damaged: the sessions
// list, which only looks for the records in the side store's listing,
// reports the missing one; the session detail, which verifies every
// value, reports both.
func TestDoctorHealthListedValues(t *testing.T) {
	set, ids, deleted := doctorFixture(t)
	path := filepath.Join(filepath.Dir(deleted), ids[2]+".jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, l := range bytes.Split(data, []byte("\n")) {
		var e struct{ ID string }
		if json.Unmarshal(l, &e) == nil && e.ID != "" {
			last = e.ID
		}
	}
	tail := ""
	for _, id := range []string{"dd000003", "dd000004"} {
		tail += fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"[[extracted-%s]]"}],"timestamp":1767225600000}}`+"\n", id, last, id)
		last = id
	}
	if err := os.WriteFile(path, append(data, tail...), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(context.Background(), "alpha/"+ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := set.Side.Put(context.Background(), ref, []bs.SideRecord{{EntryID: "dd000004", Data: []byte("damaged")}}); err != nil {
		t.Fatal(err)
	}
	c := &client{tb: t, srv: serve(t, api.Options{Installation: set.Installation, Backend: set})}
	var list struct {
		Sessions []api.SessionInfo `json:"sessions"`
	}
	c.json("GET", "/api/sessions?agent=alpha", "", 200, &list)
	for _, s := range list.Sessions {
		if s.SessionID == ids[2] && (s.Health != doctor.HealthWarn || s.ProblemKinds[doctor.KindMissingValue] != 1) {
			t.Errorf("list: %s health %q, problems %v; want warn with one placeholder without value (the missing record)", s.SessionID, s.Health, s.ProblemKinds)
		}
	}
	var det struct {
		Doctor *doctor.Report `json:"doctor"`
	}
	c.json("GET", "/api/sessions/alpha/"+ids[2], "", 200, &det)
	if det.Doctor == nil || det.Doctor.MissingValues != 2 {
		t.Errorf("detail doctor = %+v, want both placeholders without value", det.Doctor)
	}
}
