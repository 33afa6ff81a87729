package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

type sessionsAnswer struct {
	Sessions  []api.SessionInfo `json:"sessions"`
	Agents    []string          `json:"agents"`
	Total     int               `json:"total"`
	TotalSize int64             `json:"total_size"`
}

type detailAnswer struct {
	Session api.SessionInfo `json:"session"`
	Total   int             `json:"total"`
	Offset  int             `json:"offset"`
	Limit   int             `json:"limit"`
	Entries []api.EntryView `json:"entries"`
}

type extractedAnswer struct {
	EntryID     string               `json:"entry_id"`
	TriggerType string               `json:"trigger_type"`
	Size        int64                `json:"size"`
	Values      []api.ExtractedValue `json:"values"`
}

func findInfo(t *testing.T, infos []api.SessionInfo, agent, id string) api.SessionInfo {
	t.Helper()
	for _, in := range infos {
		if in.Agent == agent && in.SessionID == id {
			return in
		}
	}
	t.Fatalf("session %s/%s not listed among %d", agent, id, len(infos))
	return api.SessionInfo{}
}

// firstExtracted returns a page entry of the session that is extracted.
func firstExtracted(t *testing.T, c *client, agent, id string) api.EntryView {
	t.Helper()
	var d detailAnswer
	c.json("GET", "/api/sessions/"+agent+"/"+id+"?limit=2000", "", 200, &d)
	for _, e := range d.Entries {
		if e.Extracted {
			return e
		}
	}
	t.Fatalf("%s/%s: no extracted entry among %d", agent, id, len(d.Entries))
	return api.EntryView{}
}

func TestSessionsAndDetailBothBackends(t *testing.T) {
	f := newFixture(t, true)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f), Version: "test"})
	c := &client{tb: t, srv: srv}

	var health map[string]any
	c.json("GET", "/api/health", "", 200, &health)
	if health["status"] != "ok" {
		t.Errorf("health = %v", health)
	}
	var agents struct {
		Agents []api.AgentInfo `json:"agents"`
	}
	c.json("GET", "/api/agents", "", 200, &agents)
	got := map[string]string{}
	for _, a := range agents.Agents {
		got[a.Agent] = strings.Join(a.Backends, ",")
	}
	if got["alpha"] != "jsonl" || got["corpus"] != "jsonl" || got["main"] != "sqlite" {
		t.Fatalf("agents = %+v, want alpha and corpus on jsonl, main on sqlite", agents.Agents)
	}

	var list sessionsAnswer
	c.json("GET", "/api/sessions", "", 200, &list)
	if list.Total != len(list.Sessions) || list.Total < 5 {
		t.Fatalf("sessions: total %d, %d listed", list.Total, len(list.Sessions))
	}
	for _, in := range list.Sessions {
		if in.Error != "" || in.Entries == 0 || in.Size == 0 || in.Updated.IsZero() {
			t.Errorf("session %s/%s: %+v", in.Agent, in.SessionID, in)
		}
	}
	s1 := findInfo(t, list.Sessions, "alpha", f.synthIDs[0])
	if s1.Backend != "jsonl" || s1.Status != "done" || s1.Messages == 0 || s1.ToolCalls == 0 || s1.LastUsageTokens != 2480 || s1.Extracted == 0 {
		t.Errorf("synthetic session: %+v (want jsonl, status done, tool calls, last usage 2480, extracted > 0)", s1)
	}
	// "tokens" is the current context, the same figure as the context
	// status (and the detail's).
	var st1 compact.StatusReport
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"/context/status", "", 200, &st1)
	if s1.Tokens != int64(st1.Tokens) || s1.Tokens <= s1.LastUsageTokens {
		t.Errorf("sessions list: tokens %d, last usage %d; context status: %d (want the same, above the last usage)", s1.Tokens, s1.LastUsageTokens, st1.Tokens)
	}
	var sq api.SessionInfo
	for _, in := range list.Sessions {
		if in.Backend == bs.BackendSQLite && (sq.SessionID == "" || in.Size > sq.Size) {
			sq = in
		}
	}
	if sq.SessionID == "" || sq.Tokens == 0 {
		t.Errorf("sqlite session with recorded usage: %+v", sq)
	}
	var one sessionsAnswer
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &one)
	c.json("GET", "/api/sessions?agent=alpha&limit=2", "", 200, &list)
	if one.Total != 3 || list.Total != 3 || len(list.Sessions) != 2 {
		t.Errorf("alpha: %d and %d sessions (%d on the page), want 3, 3, 2", one.Total, list.Total, len(list.Sessions))
	}

	// Detail, paged.
	var d detailAnswer
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"?offset=0&limit=5", "", 200, &d)
	if len(d.Entries) != 5 || d.Total < 20 || d.Session.SessionID != f.synthIDs[0] {
		t.Fatalf("detail page: %d entries of %d", len(d.Entries), d.Total)
	}
	var last detailAnswer
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"?offset="+itoa(d.Total-2)+"&limit=5", "", 200, &last)
	if len(last.Entries) != 2 || last.Entries[1].Line <= d.Entries[4].Line {
		t.Errorf("last page: %d entries", len(last.Entries))
	}
	marked := 0
	c.json("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"?limit=2000", "", 200, &d)
	for _, e := range d.Entries {
		if e.Extracted {
			marked++
			if len(e.ExtractedPaths) == 0 || !bytes.Contains(e.Entry, []byte(extract.Placeholder(e.ID))) {
				t.Errorf("entry %s marked extracted: paths %v", e.ID, e.ExtractedPaths)
			}
		} else if e.ID != "" && bytes.Contains(e.Entry, []byte(extract.Placeholder(e.ID))) {
			t.Errorf("entry %s holds its placeholder but is not marked", e.ID)
		}
	}
	if marked != s1.Extracted {
		t.Errorf("detail marks %d entries extracted, the list says %d", marked, s1.Extracted)
	}
	// The SQLite session's detail.
	c.json("GET", "/api/sessions/main/"+sq.SessionID+"?limit=50", "", 200, &d)
	if d.Session.Backend != "sqlite" || len(d.Entries) == 0 {
		t.Errorf("sqlite detail: %+v, %d entries", d.Session, len(d.Entries))
	}
	// Not found, with what exists.
	code, b, _ := c.do("GET", "/api/sessions/alpha/nope", "")
	if code != 404 || !strings.Contains(string(b), `"error"`) {
		t.Errorf("unknown session: %d %s", code, b)
	}
	code, b, _ = c.do("GET", "/api/sessions/alpha/"+f.synthIDs[0]+"?limit=x", "")
	if code != 400 || !strings.Contains(string(b), "limit") {
		t.Errorf("bad limit: %d %s", code, b)
	}
	code, b, hdr := c.do("PATCH", "/api/sessions/alpha/"+f.synthIDs[0], "")
	if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET, DELETE" || !strings.Contains(string(b), `"error"`) {
		t.Errorf("PATCH a session: %d %q %s", code, hdr.Get("Allow"), b)
	}
	code, b, _ = c.do("GET", "/api/nothing", "")
	if code != 404 || !strings.Contains(string(b), `"error"`) {
		t.Errorf("unknown endpoint: %d %s", code, b)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestExtractedContentAndRestore(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: t, srv: srv}
	id := f.synthIDs[1]
	base := "/api/sessions/alpha/" + id
	e := firstExtracted(t, c, "alpha", id)

	var full, pre extractedAnswer
	c.json("GET", base+"/entries/"+e.ID+"/extracted", "", 200, &full)
	c.json("GET", base+"/entries/"+e.ID+"/extracted?preview=200", "", 200, &pre)
	if full.EntryID != e.ID || len(full.Values) == 0 || len(pre.Values) != len(full.Values) {
		t.Fatalf("extracted: %+v", full)
	}
	v := full.Values[0]
	if v.Truncated || v.Chars <= 200 || len([]rune(v.Content)) != v.Chars {
		t.Fatalf("full value: truncated %v, %d chars, content %d chars", v.Truncated, v.Chars, len([]rune(v.Content)))
	}
	p := pre.Values[0]
	if !p.Truncated || len([]rune(p.Content)) != 200 || !strings.HasPrefix(v.Content, p.Content) || p.Chars != v.Chars || p.Size != v.Size {
		t.Errorf("preview: truncated %v, %d chars shown of %d", p.Truncated, len([]rune(p.Content)), p.Chars)
	}
	// The raw value is the transcript's original bytes.
	code, raw, hdr := c.do("GET", base+"/entries/"+e.ID+"/extracted?raw=true&key="+url.QueryEscape(v.Path), "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") || len(raw) != v.Size {
		t.Fatalf("raw: %d, %d bytes, want %d", code, len(raw), v.Size)
	}
	orig := f.originals[f.set.AgentsDir+"/alpha/sessions/"+id+".jsonl"]
	if !bytes.Contains(orig, raw) {
		t.Fatalf("raw value (%d bytes) is not in the original transcript", len(raw))
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil || text != v.Content {
		t.Errorf("raw value decodes to something else than the content (%v)", err)
	}
	code, b, _ := c.do("GET", base+"/entries/"+e.ID+"/extracted?key=/nope", "")
	if code != 404 || !strings.Contains(string(b), v.Path) {
		t.Errorf("unknown key: %d %s", code, b)
	}
	code, b, _ = c.do("GET", base+"/entries/no-such-entry/extracted", "")
	if code != 404 {
		t.Errorf("entry without side record: %d %s", code, b)
	}

	// Restore one entry: the content at once and the exact bytes back in
	// the transcript.
	var res struct {
		Restored     bool              `json:"restored"`
		Applied      bool              `json:"applied"`
		EntryID      string            `json:"entry_id"`
		KeysRestored []string          `json:"keys_restored"`
		Content      map[string]string `json:"content"`
	}
	c.json("POST", base+"/entries/"+e.ID+"/restore", `{"keys":["`+v.Path+`"]}`, 200, &res)
	if !res.Restored || !res.Applied || res.Content[v.Path] != v.Content {
		t.Fatalf("restore: %+v", res)
	}
	now, err := os.ReadFile(f.set.AgentsDir + "/alpha/sessions/" + id + ".jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(now, raw) {
		t.Errorf("the restored transcript does not hold the value's original bytes")
	}
	// Again: the same content with a note, 200, nothing written.
	var again struct {
		Restored        bool              `json:"restored"`
		AlreadyRestored bool              `json:"already_restored"`
		Applied         bool              `json:"applied"`
		Note            string            `json:"note"`
		Content         map[string]string `json:"content"`
	}
	c.json("POST", base+"/entries/"+e.ID+"/restore", `{"keys":["`+v.Path+`"]}`, 200, &again)
	if !again.Restored || !again.AlreadyRestored || again.Applied || again.Content[v.Path] != v.Content || !strings.Contains(again.Note, "already restored") {
		t.Fatalf("second restore: %+v", again)
	}
	if after, _ := os.ReadFile(f.set.AgentsDir + "/alpha/sessions/" + id + ".jsonl"); !bytes.Equal(after, now) {
		t.Error("the second restore wrote to the transcript")
	}
	code, b, _ = c.do("POST", base+"/entries/"+e.ID+"/restore", `{"keys":[]} {}`)
	if code != 400 || !strings.Contains(string(b), "after the JSON object") {
		t.Errorf("two objects: %d %s", code, b)
	}
	code, b, _ = c.do("POST", base+"/entries/"+e.ID+"/restore", `{"bogus":1}`)
	if code != 400 || !strings.Contains(string(b), "bogus") {
		t.Errorf("unknown member: %d %s", code, b)
	}

	// set_extractable, then the whole session back, pristine: the
	// original file byte for byte.
	e2 := firstExtracted(t, c, "alpha", id)
	var set struct {
		Value   string `json:"value"`
		Applied bool   `json:"applied"`
	}
	c.json("PUT", base+"/entries/"+e2.ID+"/meta", `{"_extractable":false}`, 200, &set)
	if set.Value != "false" || !set.Applied {
		t.Errorf("set extractable: %+v", set)
	}
	c.json("POST", base+"/entries/"+e2.ID+"/extractable", `{"value":5}`, 200, &set)
	if set.Value != "5" {
		t.Errorf("set extractable 5: %+v", set)
	}
	code, b, _ = c.do("PUT", base+"/entries/"+e2.ID+"/meta", `{"_extractable":"maybe"}`)
	if code != 400 || !strings.Contains(string(b), "maybe") {
		t.Errorf("bad extractable: %d %s", code, b)
	}
	var ctxAns struct {
		SessionID string `json:"session_id"`
		Extracted []struct {
			EntryID string `json:"entry_id"`
		} `json:"extracted"`
	}
	c.json("GET", base+"/context", "", 200, &ctxAns)
	if ctxAns.SessionID != id || len(ctxAns.Extracted) == 0 {
		t.Errorf("context: %+v", ctxAns)
	}
	c.json("POST", base+"/restore", `{"pristine":true}`, 200, nil)
	now, _ = os.ReadFile(f.set.AgentsDir + "/alpha/sessions/" + id + ".jsonl")
	if !bytes.Equal(now, orig) {
		t.Errorf("pristine restore through the API: %d bytes, want the original %d", len(now), len(orig))
	}

	// The corpus transcript too.
	ce := firstExtracted(t, c, "corpus", f.corpusID)
	c.json("POST", "/api/sessions/corpus/"+f.corpusID+"/entries/"+ce.ID+"/restore", "", 200, &res)
	if !res.Restored {
		t.Errorf("corpus restore: %+v", res)
	}
	c.json("POST", "/api/sessions/corpus/"+f.corpusID+"/restore", `{"pristine":true}`, 200, nil)
	p0 := f.set.AgentsDir + "/corpus/sessions/" + f.corpusID + ".jsonl"
	if now, _ := os.ReadFile(p0); !bytes.Equal(now, f.originals[p0]) {
		t.Errorf("corpus pristine restore: not the original bytes")
	}
}

func TestSQLiteExtractedAndRestore(t *testing.T) {
	f := newFixture(t, true)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Trash: newTrash(f)})
	c := &client{tb: t, srv: srv}
	var list sessionsAnswer
	c.json("GET", "/api/agents/main/sessions", "", 200, &list)
	var id string
	for _, in := range list.Sessions {
		if in.Extracted > 0 {
			id = in.SessionID
			break
		}
	}
	if id == "" {
		t.Fatalf("no sqlite session with extracted entries among %d", len(list.Sessions))
	}
	e := firstExtracted(t, c, "main", id)
	var full extractedAnswer
	c.json("GET", "/api/sessions/main/"+id+"/entries/"+e.ID+"/extracted", "", 200, &full)
	if len(full.Values) == 0 {
		t.Fatalf("sqlite extracted: %+v", full)
	}
	var res struct {
		Restored bool              `json:"restored"`
		Content  map[string]string `json:"content"`
	}
	c.json("POST", "/api/sessions/main/"+id+"/entries/"+e.ID+"/restore", "", 200, &res)
	if !res.Restored || res.Content[full.Values[0].Path] != full.Values[0].Content {
		t.Errorf("sqlite restore: %+v", res)
	}
	// Restoring again gives the content, with a note, once the first
	// write-back is in (it may have been queued while the store was busy).
	var again struct {
		Restored        bool              `json:"restored"`
		AlreadyRestored bool              `json:"already_restored"`
		Queued          bool              `json:"queued"`
		Content         map[string]string `json:"content"`
	}
	c.json("POST", "/api/sessions/main/"+id+"/entries/"+e.ID+"/restore", "", 200, &again)
	if !again.Restored || again.Content[full.Values[0].Path] != full.Values[0].Content || (!again.AlreadyRestored && !again.Queued) {
		t.Errorf("sqlite restore again: %+v", again)
	}
	// Trash is refused on SQLite with the reason.
	code, b, _ := c.do("DELETE", "/api/sessions/main/"+id, "")
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "never deletes rows") {
		t.Errorf("sqlite delete: %d %s, want 422 with the reason", code, b)
	}
}

func TestConfigJobsTrash(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(t, f.set), Trash: newTrash(f)})
	c := &client{tb: t, srv: srv}

	var cfg map[string]any
	c.json("GET", "/api/config", "", 200, &cfg)
	if cfg["auto_cron"] != "*/2 * * * *" {
		t.Errorf("config: %v", cfg)
	}
	c.json("POST", "/api/config", `{"keep_recent":5,"retention":"6h"}`, 200, &cfg)
	if cfg["keep_recent"] != float64(5) || cfg["retention"] != "6h" {
		t.Errorf("config after POST: %v", cfg)
	}
	for _, tc := range []struct{ body, field string }{
		{`{"auto_cron":"61 * * * *"}`, "auto_cron"},
		{`{"retention":"5x"}`, "retention"},
		{`{"keep_recent":-1}`, "keep_recent"},
		{`{"trigger_types":["nope"]}`, "trigger_types"},
		{`{"enabled":"yes"}`, "enabled"},
		{`{"no_such_field":1}`, "no_such_field"},
	} {
		code, b, _ := c.do("POST", "/api/config", tc.body)
		var ans struct {
			Error  string            `json:"error"`
			Fields map[string]string `json:"fields"`
		}
		_ = json.Unmarshal(b, &ans)
		if code != 400 || ans.Fields[tc.field] == "" || !strings.Contains(ans.Error, tc.field) {
			t.Errorf("POST config %s: %d %s, want 400 naming %s", tc.body, code, b, tc.field)
		}
	}
	for _, body := range []string{"", "[]", "{", `"x"`} {
		if code, b, _ := c.do("POST", "/api/config", body); code != 400 {
			t.Errorf("POST config %q: %d %s", body, code, b)
		}
	}
	c.json("GET", "/api/config", "", 200, &cfg)
	if cfg["auto_cron"] != "*/2 * * * *" || cfg["keep_recent"] != float64(5) {
		t.Errorf("a refused POST changed the config: %v", cfg)
	}
	var env map[string]any
	c.json("GET", "/api/config/env", "", 200, &env)
	if env["auto_refresh_interval_ms"] != float64(10000) {
		t.Errorf("config env: %v", env)
	}

	var run struct {
		Job    string         `json:"job"`
		Report map[string]any `json:"report"`
	}
	c.json("POST", "/api/prune/run", "", 200, &run)
	if run.Job != "auto-trigger" || run.Report["sessions"] == nil {
		t.Errorf("prune run: %+v", run)
	}
	c.json("POST", "/api/cron/jobs/auto-trigger/run", "", 200, &run)
	c.json("POST", "/api/cron/jobs/retention-cleanup/run", "", 200, &run)
	if run.Report["cleaned"] != float64(0) {
		t.Errorf("retention with 6h on fresh values: %+v", run.Report)
	}
	if code, _, _ := c.do("POST", "/api/cron/jobs/nope/run", ""); code != 404 {
		t.Errorf("unknown job: %d", code)
	}
	var st map[string]any
	c.json("GET", "/api/cron/status", "", 200, &st)
	if st["prune"] == nil || st["retention"] == nil {
		t.Errorf("status: %v, want the prune and retention jobs", st)
	}

	// Pruning disabled: a pass asked for now still runs (the caller
	// asked; daemon.Daemon.RunPruneNow), only the scheduled ones stop.
	c.json("POST", "/api/config", `{"enabled":false}`, 200, nil)
	c.json("POST", "/api/prune/run", "", 200, &run)
	if run.Report["manual"] != true || run.Report["disabled"] != false {
		t.Errorf("prune run while disabled: %+v, want a manual run", run)
	}

	// Trash: delete, list, restore, delete again and purge.
	id := f.synthIDs[2]
	var list sessionsAnswer
	c.json("DELETE", "/api/sessions/alpha/"+id, "", 200, nil)
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &list)
	if list.Total != 2 {
		t.Errorf("after delete: %d sessions, want 2", list.Total)
	}
	var trash []struct {
		Agent     string `json:"agent"`
		SessionID string `json:"session_id"`
	}
	c.json("GET", "/api/trash", "", 200, &trash)
	if len(trash) != 1 || trash[0].SessionID != id {
		t.Errorf("trash: %+v", trash)
	}
	c.json("POST", "/api/trash/alpha/"+id+"/restore", "", 200, nil)
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &list)
	if list.Total != 3 {
		t.Errorf("after restore: %d sessions, want 3", list.Total)
	}
	c.json("DELETE", "/api/sessions/alpha/"+id, "", 200, nil)
	c.json("DELETE", "/api/trash/alpha/"+id, "", 200, nil)
	c.json("GET", "/api/trash", "", 200, &trash)
	if len(trash) != 0 {
		t.Errorf("trash after purge: %+v", trash)
	}
	if code, _, _ := c.do("DELETE", "/api/trash/alpha/"+id, ""); code != 404 {
		t.Errorf("purge twice: %d", code)
	}
}

func TestNotWired(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: t, srv: srv}
	for _, rq := range [][2]string{
		{"GET", "/api/config"}, {"POST", "/api/config"}, {"POST", "/api/prune/run"}, {"POST", "/api/retention/run"},
		{"GET", "/api/cron/status"}, {"GET", "/api/trash"}, {"DELETE", "/api/sessions/alpha/" + f.synthIDs[0]},
		{"POST", "/api/trash/alpha/x/restore"}, {"DELETE", "/api/trash/alpha/x"},
	} {
		code, b, _ := c.do(rq[0], rq[1], "{}")
		if code != http.StatusNotImplemented || !strings.Contains(string(b), "api.Options.") {
			t.Errorf("%s %s: %d %s, want 501 with the reason", rq[0], rq[1], code, b)
		}
	}
}

func TestListCacheSeesChanges(t *testing.T) {
	f := newFixture(t, false)
	srv := serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: t, srv: srv}
	var a, b sessionsAnswer
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &a)
	before := findInfo(t, a.Sessions, "alpha", f.synthIDs[0])
	// Restore every value through the library: the file is rewritten with
	// its modification time kept.
	path := f.set.AgentsDir + "/alpha/sessions/" + f.synthIDs[0] + ".jsonl"
	fi, _ := os.Stat(path)
	refs, _, _ := f.set.Store.Sessions(context.Background())
	for _, r := range refs {
		if r.ID == f.synthIDs[0] {
			if _, err := newRestorer(f).RestoreAll(context.Background(), r, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	fi2, _ := os.Stat(path)
	if !fi2.ModTime().Equal(fi.ModTime()) {
		t.Logf("modification time changed by the restore (%v → %v)", fi.ModTime(), fi2.ModTime())
	}
	c.json("GET", "/api/agents/alpha/sessions", "", 200, &b)
	after := findInfo(t, b.Sessions, "alpha", f.synthIDs[0])
	if before.Extracted == 0 || after.Extracted != 0 || after.Size == before.Size {
		t.Errorf("cached list missed a rewrite: before %+v, after %+v", before, after)
	}
}
