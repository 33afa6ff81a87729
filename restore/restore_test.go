package restore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

const textPtr = "/message/content/0/text"

// basic is a session with a long tool result r1 (extracted by the tests)
// and room after it.
func basic() (data []byte, big string) {
	big = long("output", 3000)
	data = transcript(
		msg{id: "u1", body: userMsg("list files")},
		msg{id: "a1", body: assistantCall(long("think", 800), "call_1", "exec", `{"command":"ls -la"}`)},
		msg{id: "r1", body: toolResult("call_1", "exec", big)},
		msg{id: "a2", body: assistantText("here they are")},
		msg{id: "u2", body: userMsg("thanks")},
		msg{id: "a3", body: assistantText("welcome")},
		msg{id: "u3", body: userMsg("bye")},
	)
	return data, big
}

// extracted installs data and extracts with keep_recent 3 and the
// default triggers.
func extracted(t *testing.T, data []byte) (string, bs.SessionRef) {
	t.Helper()
	dir, ref := install(t, "s1", data)
	p := extract.DefaultPolicy()
	p.AgeThreshold, p.MinSavingTokens = 0, 0
	x := extractor(p)
	x.Side = sidedir.New(x.Store.(sidedir.Locator))
	if _, err := x.Run(ctx(), ref); err != nil {
		t.Fatal(err)
	}
	return dir, ref
}

func TestRestoreBasics(t *testing.T) {
	data, big := basic()
	dir, ref := extracted(t, data)
	after := read(t, ref.Path)
	if !strings.Contains(string(lineOf(t, after, "r1")), "[[extracted-r1]]") {
		t.Fatalf("r1 not extracted")
	}
	var logs bytes.Buffer
	r := newRestorer(dir)
	r.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Restored || !res.Applied || res.Queued || res.Redacted || res.Suggestion != "" || res.PreviousRestoredAt != "" {
		t.Fatalf("result %+v", res)
	}
	if res.Content[textPtr] != big || res.Text() != big || res.SizesBytes[textPtr] != len(big)+2 {
		t.Fatalf("content %.60q, sizes %v", res.Content[textPtr], res.SizesBytes)
	}
	line := lineOf(t, read(t, ref.Path), "r1")
	if got, want := valueAt(t, line, textPtr), valueAt(t, lineOf(t, data, "r1"), textPtr); got != want {
		t.Fatalf("value not written back")
	}
	if got := valueAt(t, line, "/_restored"); got != `"2026-02-20T17:30:00.000Z"` {
		t.Fatalf("_restored = %s", got)
	}
	b, _ := json.Marshal(res)
	for _, k := range []string{`"restored":true`, `"entry_id":"r1"`, `"keys_restored":["/message/content/0/text"]`, `"sizes_bytes":{`, `"applied":true`, `"queued":false`, `"redacted":false`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON result lacks %s: %.300s", k, b)
		}
	}
	// The restoration log record: entry id, keys, sizes, redacted, session.
	var rec map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "restored" {
			rec = m
		}
	}
	if rec == nil || rec["level"] != "DEBUG" || rec["module"] != "extraction" || rec["entry_id"] != "r1" || rec["session"] != "main/s1" || rec["redacted"] != false {
		t.Fatalf("restore log record: %v\n%s", rec, logs.String())
	}
	if _, ok := rec["keys_restored"]; !ok {
		t.Fatalf("log lacks keys_restored: %v", rec)
	}
	if _, ok := rec["sizes_bytes"]; !ok {
		t.Fatalf("log lacks sizes_bytes: %v", rec)
	}
	pr, err := r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) {
		t.Fatalf("pristine: %s; %+v", firstDiff(data, got), pr)
	}
}

func TestRestoreKeys(t *testing.T) {
	details := long("detail", 1200)
	text := long("text", 900)
	body := fmt.Sprintf(`{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":%q}],"details":{"aggregated":%q},"isError":false}`, text, details)
	data := transcript(
		msg{id: "u1", body: userMsg("go")},
		msg{id: "a1", body: assistantCall("t", "call_1", "exec", `{"command":"make"}`)},
		msg{id: "r1", body: body},
		msg{id: "a2", body: assistantText("ok")},
		msg{id: "u2", body: userMsg("ok")},
		msg{id: "a3", body: assistantText("ok")},
	)
	dir, ref := extracted(t, data)
	r := newRestorer(dir)
	tests := []struct {
		name string
		keys []string
		want []string
	}{
		{"DetailsMember", []string{"details"}, []string{"/message/details/aggregated"}},
		{"LastSegmentAfterOthersRestored", []string{"text"}, []string{textPtr}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Restore(ctx(), ref, "r1", tt.keys, restore.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(res.KeysRestored) != fmt.Sprint(tt.want) {
				t.Fatalf("keys restored %v, want %v", res.KeysRestored, tt.want)
			}
		})
	}
	line := lineOf(t, read(t, ref.Path), "r1")
	orig := lineOf(t, data, "r1")
	for _, p := range []string{textPtr, "/message/details/aggregated"} {
		if valueAt(t, line, p) != valueAt(t, orig, p) {
			t.Fatalf("%s not restored", p)
		}
	}
}

func TestMatchKey(t *testing.T) {
	tests := []struct {
		name, key, path string
		want            bool
	}{
		{"FullPointer", "/message/content/2/text", "/message/content/2/text", true},
		{"PointerWithoutSlash", "message/content/2/text", "/message/content/2/text", true},
		{"LastSegment", "text", "/message/content/2/text", true},
		{"TopLevelMember", "message", "/message/content/2/text", true},
		{"MemberOnPath", "content", "/message/content/2/text", true},
		{"BlockPath", "content/2", "/message/content/2/text", true},
		{"BlockIndex", "2", "/message/content/2/text", true},
		{"BlockIndexFlat", "1", "/content/1/text", true},
		{"IndexNotBlock", "2", "/message/content/0/arguments/edits/2/newText", false},
		{"FlatMember", "output", "/output", true},
		{"Escaped", "a~1b", "/x/a~1b", true},
		{"OtherBlock", "content/3", "/message/content/2/text", false},
		{"NotASegment", "tex", "/message/content/2/text", false},
		{"CaseSensitive", "Text", "/message/content/2/text", false},
		{"Empty", "", "/output", false},
		{"Slash", "/", "/output", false},
		{"WrongOrder", "text/2", "/message/content/2/text", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := restore.MatchKey(tt.key, tt.path); got != tt.want {
				t.Fatalf("MatchKey(%q, %q) = %v, want %v", tt.key, tt.path, got, tt.want)
			}
		})
	}
}

// TestRestoreProtection is the test list of the time-based restore
// protection. Tests 1-3, 5 and 6 decide on an entry restored some time ago,
// with extract.Decide and with a real extraction pass; test 4 restores a
// re-extracted entry through Restore.
func TestRestoreProtection(t *testing.T) {
	tests := []struct {
		name        string
		restoredAgo time.Duration
		keepAfter   time.Duration
		extractable string
		want        bool
	}{
		{"FreshlyRestoredProtected", 5 * time.Minute, 600 * time.Second, "", false},
		{"ExpiredProtectionAllowsExtraction", 15 * time.Minute, 600 * time.Second, "", true},
		{"CustomProtectionDuration", 30 * time.Second, 30 * time.Second, "", true},
		{"ExtractableTrueBypassesTimeProtection", time.Minute, 600 * time.Second, "true", true},
		{"ExtractableFalsePreventsAllExtraction", time.Hour, 600 * time.Second, "false", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := fmt.Sprintf(`,"_restored":%q`, now.Add(-tt.restoredAgo).Format("2006-01-02T15:04:05.000Z"))
			if tt.extractable != "" {
				extra += `,"_extractable":` + tt.extractable
			}
			data := transcript(
				msg{id: "u1", body: userMsg("read it")},
				msg{id: "r1", body: toolResult("call_1", "read", long("file", 2000)), extra: extra},
				msg{id: "a1", body: assistantText("a")},
				msg{id: "u2", body: userMsg("b")},
				msg{id: "a2", body: assistantText("c")},
				msg{id: "u3", body: userMsg("d")},
			)
			p := extract.DefaultPolicy()
			p.AgeThreshold, p.MinSavingTokens, p.KeepAfterRestore = 0, 0, tt.keepAfter
			e := entry.Parse(lineOf(t, data, "r1"), 3, 0)
			d := extract.Decide(e, 4, p, now)
			if d.Extract != tt.want {
				t.Fatalf("Decide: extract = %v (%s), want %v", d.Extract, d.Reason, tt.want)
			}
			_, ref := install(t, "s1", data)
			if _, err := extractor(p).Run(ctx(), ref); err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(string(lineOf(t, read(t, ref.Path), "r1")), "[[extracted-r1]]")
			if got != tt.want {
				t.Fatalf("extraction pass: extracted = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("ReRestoreDetection", func(t *testing.T) {
		big := long("file", 2000)
		data := transcript(
			msg{id: "u1", body: userMsg("read it")},
			msg{id: "r1", body: toolResult("call_1", "read", big), extra: `,"_restored":"2026-02-20T10:00:00Z"`},
			msg{id: "a1", body: assistantText("a")},
			msg{id: "u2", body: userMsg("b")},
			msg{id: "a2", body: assistantText("c")},
		)
		dir, ref := extracted(t, data)
		if !strings.Contains(string(lineOf(t, read(t, ref.Path), "r1")), "[[extracted-r1]]") {
			t.Fatal("r1 was not re-extracted")
		}
		r := newRestorer(dir)
		res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Restored || res.PreviousRestoredAt != "2026-02-20T10:00:00Z" || res.Suggestion != restore.Suggestion {
			t.Fatalf("result %+v", res)
		}
		if restore.Suggestion != "This entry was previously restored. If you need to keep this content long-term, consider setting _extractable: false on the entry." {
			t.Fatal("suggestion text changed")
		}
		if res.Content[textPtr] != big {
			t.Fatal("content")
		}
		line := lineOf(t, read(t, ref.Path), "r1")
		if got := valueAt(t, line, "/_restored"); got != `"2026-02-20T17:30:00.000Z"` {
			t.Fatalf("_restored = %s", got)
		}
		// The earlier _restored comes back with a pristine restore.
		if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
			t.Fatal(err)
		}
		if got := read(t, ref.Path); !bytes.Equal(got, data) {
			t.Fatalf("pristine: %s", firstDiff(data, got))
		}
	})
}

// TestExtractableOverride is the skill's _extractable table, set through
// SetExtractable on a real file and checked with a real extraction pass
// (keep_recent 3, min_value_length 500, triggers thinking and tool_result).
func TestExtractableOverride(t *testing.T) {
	const (
		shortResult = "short"
		longResult  = "long"
		userText    = "user"
	)
	tests := []struct {
		name     string
		kind     string
		position int // messages from the end
		value    string
		want     bool
	}{
		{"NoOverrideOldLongExtracted", longResult, 5, "", true},
		{"NoOverrideRecentKept", longResult, 1, "", false},
		{"TrueForcesShortValue", shortResult, 5, "true", true},
		{"TrueForcesWrongType", userText, 5, "true", true},
		{"TrueStillRespectsKeepRecent", shortResult, 1, "true", false},
		{"FalseNeverExtracts", longResult, 7, "false", false},
		{"WindowLongerKeeps", longResult, 5, "10", false},
		{"WindowLongerExpires", longResult, 8, "7", true},
		{"WindowShorterAllows", longResult, 1, "1", true},
		{"WindowZeroAllowsNewest", longResult, 0, "0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 10
			var msgs []msg
			for i := 0; i < n; i++ {
				id := fmt.Sprintf("m%d", i)
				body := assistantText("ok")
				if n-1-i == tt.position {
					id = "target"
					switch tt.kind {
					case shortResult:
						// Shorter than min_value_length, longer than the
						// placeholder (a pass never grows the file).
						body = toolResult("c1", "read", long("short", 120))
					case longResult:
						body = toolResult("c1", "read", long("line", 2000))
					case userText:
						body = userMsg(long("user", 120))
					}
				}
				msgs = append(msgs, msg{id: id, body: body})
			}
			data := transcript(msgs...)
			dir, ref := install(t, "s1", data)
			r := newRestorer(dir)
			if tt.value != "" {
				res, err := r.SetExtractable(ctx(), ref, "target", tt.value)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changed || !res.Applied || res.Queued || res.Previous != "" || res.Value != tt.value {
					t.Fatalf("set result %+v", res)
				}
				if got := valueAt(t, lineOf(t, read(t, ref.Path), "target"), "/_extractable"); got != tt.value {
					t.Fatalf("_extractable = %s", got)
				}
			}
			p := extract.DefaultPolicy()
			p.AgeThreshold, p.MinSavingTokens = 0, 0
			if _, err := extractor(p).Run(ctx(), ref); err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(string(lineOf(t, read(t, ref.Path), "target")), "[[extracted-target]]")
			if got != tt.want {
				t.Fatalf("extracted = %v, want %v", got, tt.want)
			}
			if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
				t.Fatal(err)
			}
			if got := read(t, ref.Path); !bytes.Equal(got, data) {
				t.Fatalf("pristine: %s", firstDiff(data, got))
			}
		})
	}
}

func TestSetExtractable(t *testing.T) {
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{"True", "true", "true", true},
		{"False", "false", "false", true},
		{"Number", "10", "10", true},
		{"Zero", "0", "0", true},
		{"LeadingZeros", "007", "7", true},
		{"Spaces", " 5 ", "5", true},
		{"Negative", "-1", "", false},
		{"Fraction", "1.5", "", false},
		{"Word", "maybe", "", false},
		{"Empty", "", "", false},
		{"Huge", "12345678901", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := restore.ParseExtractableValue(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Fatalf("ParseExtractableValue(%q) = %q, %v", tt.in, got, err)
			}
			if err != nil && !errors.Is(err, bs.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
	t.Run("ReplaceKeepsFirstJournal", func(t *testing.T) {
		data := transcript(
			msg{id: "u1", body: userMsg("x"), extra: `,"_extractable":5`},
			msg{id: "a1", body: assistantText("y")},
		)
		dir, ref := install(t, "s1", data)
		r := newRestorer(dir)
		for _, v := range []string{"false", "12", "12"} {
			res, err := r.SetExtractable(ctx(), ref, "u1", v)
			if err != nil {
				t.Fatal(err)
			}
			if res.Changed != (v != "12" || res.Previous != "12") {
				t.Fatalf("set %s: %+v", v, res)
			}
		}
		if got := valueAt(t, lineOf(t, read(t, ref.Path), "u1"), "/_extractable"); got != "12" {
			t.Fatalf("_extractable = %s", got)
		}
		if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
			t.Fatal(err)
		}
		if got := read(t, ref.Path); !bytes.Equal(got, data) {
			t.Fatalf("pristine: %s", firstDiff(data, got))
		}
	})
}

// liveLock holds the host lock of path with the pid of a live child
// process, as a running OpenClaw would. release ends the child.
func liveLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		})
	}
	t.Cleanup(release)
	payload := fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": %q\n}", cmd.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(path+".lock", []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	return release
}

// TestRestoreBusyQueues restores while the host holds the session: the
// content comes back at once, the write-back is queued, and ApplyPending
// (here from a new Restorer, as after a restart) applies it once the host
// is gone — redacting the restore call the host wrote meanwhile.
func TestRestoreBusyQueues(t *testing.T) {
	data, big := basic()
	dir, ref := extracted(t, data)
	before := read(t, ref.Path)
	release := liveLock(t, ref.Path)
	r := newRestorer(dir)
	res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Restored || !res.Queued || res.Applied || res.Content[textPtr] != big {
		t.Fatalf("result %+v", res)
	}
	sr, err := r.SetExtractable(ctx(), ref, "r1", "false")
	if err != nil {
		t.Fatal(err)
	}
	if !sr.Queued || sr.Applied {
		t.Fatalf("set result %+v", sr)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, before) {
		t.Fatal("a busy session was written")
	}
	pending, err := r.Pending()
	if err != nil || len(pending) != 2 {
		t.Fatalf("pending %v, %v", pending, err)
	}
	q := pending[0]
	if q.Kind != restore.KindRestore || q.EntryID != "r1" || q.SessionID != "s1" || q.Agent != "main" || q.Transcript != ref.Path || q.RequestedAt.IsZero() {
		t.Fatalf("queued request %+v", q)
	}
	if filepath.Dir(q.File) != filepath.Join(filepath.Dir(dir), ".brainsurgeon", "pending") {
		t.Fatalf("queue file %s", q.File)
	}
	if fi, err := os.Stat(q.File); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("queue file mode: %v %v", fi.Mode(), err)
	}
	// A second restore while the first is queued points at it.
	res2, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res2.PreviousRestoredAt == "" || res2.Suggestion != restore.Suggestion || !res2.Queued {
		t.Fatalf("second result %+v", res2)
	}
	// Still busy: nothing applied, nothing lost.
	if n, _, err := r.ApplyPending(ctx()); err != nil || n != 0 {
		t.Fatalf("apply while busy: %d, %v", n, err)
	}
	// The host appends the agent's restore call and its result.
	call := fmt.Sprintf(`{"type":"message","id":"a9","parentId":"u3","timestamp":"2026-02-20T17:29:00.000Z","message":%s}`,
		assistantCall("restore it", "call_9", "exec", `{"command":"purge_control restore r1 --agent main --session s1"}`))
	result := fmt.Sprintf(`{"type":"message","id":"r9","parentId":"a9","timestamp":"2026-02-20T17:29:01.000Z","message":%s}`,
		toolResult("call_9", "exec", big))
	f, err := os.OpenFile(ref.Path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(call + "\n" + result + "\n")
	f.Close()
	release()

	fresh := newRestorer(dir)
	n, _, err := fresh.ApplyPending(ctx())
	if err != nil || n != 3 {
		t.Fatalf("apply: %d, %v", n, err)
	}
	got := read(t, ref.Path)
	line := lineOf(t, got, "r1")
	if valueAt(t, line, textPtr) != valueAt(t, lineOf(t, data, "r1"), textPtr) {
		t.Fatal("value not written back")
	}
	if valueAt(t, line, "/_extractable") != "false" || !hasValue(line, "/_restored") {
		t.Fatalf("bookkeeping missing: %.200s", line[len(line)-120:])
	}
	if valueAt(t, lineOf(t, got, "a9"), "/message/content/1/arguments") != `{"redacted":"purge_control restore r1"}` {
		t.Fatal("restore call not redacted")
	}
	if pending, _ := fresh.Pending(); len(pending) != 0 {
		t.Fatalf("queue not emptied: %v", pending)
	}
	// Pristine gives back the file as the host left it.
	if _, err := fresh.RestoreAll(ctx(), ref, true); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, data...), call+"\n"+result+"\n"...)
	if got := read(t, ref.Path); !bytes.Equal(got, want) {
		t.Fatalf("pristine: %s", firstDiff(want, got))
	}
}

// redactionCase builds a session whose assistant asked to restore r1
// with the given tool call.
func redactionCase(name, args string) []byte {
	return transcript(
		msg{id: "u1", body: userMsg("list files")},
		msg{id: "a1", body: assistantCall("t", "call_1", "exec", `{"command":"ls"}`)},
		msg{id: "r1", body: toolResult("call_1", "exec", long("output", 3000))},
		msg{id: "a2", body: assistantText("done")},
		msg{id: "u2", body: userMsg("what was in it?")},
		msg{id: "a3", body: assistantCall("I need r1", "call_9", name, args)},
		msg{id: "r3", body: toolResult("call_9", name, "the restored content "+long("output", 100))},
		msg{id: "a4", body: assistantText("It said output.")},
	)
}

func TestRedaction(t *testing.T) {
	tests := []struct {
		name, tool, args string
		keep             bool
		redacted         bool
	}{
		{"PurgeControlCall", "purge_control", `{"action":"restore","entry":"r1"}`, false, true},
		{"PurgeControlEntryID", "purge_control", `{"action":"restore","entry_id":"r1","keys":"content"}`, false, true},
		{"ToolNamedRestore", "restore", `{"entry_id":"r1","keys":["content","output"]}`, false, true},
		{"ExecCall", "exec", `{"command":"purge_control restore r1 --agent main --session s1"}`, false, true},
		{"BashCallWithPathAndFlagsFirst", "bash", `{"command":"cd /x && ~/bin/purge_control.py --agent main restore 'r1' | head"}`, false, true},
		{"KeepPurgeControlCalls", "purge_control", `{"action":"restore","entry":"r1"}`, true, false},
		{"OtherAction", "purge_control", `{"action":"set_extractable","entry":"r1","value":false}`, false, false},
		{"OtherEntry", "exec", `{"command":"purge_control restore r10"}`, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := redactionCase(tt.tool, tt.args)
			dir, ref := extracted(t, data)
			before := read(t, ref.Path)
			r := newRestorer(dir)
			r.KeepPurgeControlCalls = tt.keep
			res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Redacted != tt.redacted || !res.Applied {
				t.Fatalf("result %+v", res)
			}
			got := read(t, ref.Path)
			a3, r3 := lineOf(t, got, "a3"), lineOf(t, got, "r3")
			if !tt.redacted {
				if !bytes.Equal(a3, lineOf(t, before, "a3")) || !bytes.Equal(r3, lineOf(t, before, "r3")) {
					t.Fatal("call or result changed")
				}
				return
			}
			checkRedacted(t, a3, r3, "call_9", "/message/content/1")
			checkPairing(t, got)
			if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
				t.Fatal(err)
			}
			if got := read(t, ref.Path); !bytes.Equal(got, data) {
				t.Fatalf("pristine: %s", firstDiff(data, got))
			}
		})
	}
	t.Run("ByToolCallID", func(t *testing.T) {
		data := transcript(
			msg{id: "u1", body: userMsg("x")},
			msg{id: "r1", body: toolResult("call_1", "exec", long("output", 3000))},
			msg{id: "a2", body: assistantCall("a", "call_8", "purge_control", `{"action":"restore","entry":"r1"}`)},
			msg{id: "r2", body: toolResult("call_8", "purge_control", "content")},
			msg{id: "a3", body: assistantCall("b", "call_9", "purge_control", `{"action":"restore","entry":"r1"}`)},
			msg{id: "r3", body: toolResult("call_9", "purge_control", "content")},
			msg{id: "a4", body: assistantText("ok")},
		)
		dir, ref := extracted(t, data)
		before := read(t, ref.Path)
		r := newRestorer(dir)
		res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{ToolCallID: "call_8"})
		if err != nil || !res.Redacted {
			t.Fatalf("%+v %v", res, err)
		}
		got := read(t, ref.Path)
		checkRedacted(t, lineOf(t, got, "a2"), lineOf(t, got, "r2"), "call_8", "/message/content/1")
		if !bytes.Equal(lineOf(t, got, "a3"), lineOf(t, before, "a3")) || !bytes.Equal(lineOf(t, got, "r3"), lineOf(t, before, "r3")) {
			t.Fatal("the other call was redacted")
		}
		if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
			t.Fatal(err)
		}
		if got := read(t, ref.Path); !bytes.Equal(got, data) {
			t.Fatalf("pristine: %s", firstDiff(data, got))
		}
	})
}

// checkRedacted checks a redacted call block and its result.
func checkRedacted(t *testing.T, call, result []byte, callID, block string) {
	t.Helper()
	if got := valueAt(t, call, block+"/arguments"); got != `{"redacted":"purge_control restore r1"}` {
		t.Fatalf("arguments = %s", got)
	}
	if valueAt(t, call, block+"/_redacted") != "true" || valueAt(t, call, block+"/id") != `"`+callID+`"` {
		t.Fatalf("call block: %s", valueAt(t, call, block))
	}
	if got := valueAt(t, result, textPtr); got != `"[redacted: purge_control restore r1]"` {
		t.Fatalf("result text = %s", got)
	}
	if valueAt(t, result, "/_redacted") != "true" || valueAt(t, result, "/message/toolCallId") != `"`+callID+`"` {
		t.Fatalf("result: %s", result)
	}
}

// checkPairing checks that every toolResult answers a toolCall of an
// earlier assistant message, and every toolCall has its result.
func checkPairing(t *testing.T, data []byte) {
	t.Helper()
	calls := map[string]bool{}
	answered := map[string]bool{}
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		var m struct {
			Message struct {
				Role       string `json:"role"`
				ToolCallID string `json:"toolCallId"`
				Content    []struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				} `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(r.Raw(), &m) != nil {
			continue
		}
		for _, c := range m.Message.Content {
			if c.Type == "toolCall" {
				calls[c.ID] = true
			}
		}
		if m.Message.Role == "toolResult" {
			if !calls[m.Message.ToolCallID] {
				t.Fatalf("line %d: result for unknown call %q", r.Line(), m.Message.ToolCallID)
			}
			answered[m.Message.ToolCallID] = true
		}
	}
	for id := range calls {
		if !answered[id] {
			t.Fatalf("call %s has no result", id)
		}
	}
}

func TestMissingSideFile(t *testing.T) {
	data, _ := basic()
	dir, ref := extracted(t, data)
	side := sidetest.Dir(ref.Path, ref.ID)
	if err := sidetest.RemoveRecord(side, "r1"); err != nil {
		t.Fatal(err)
	}
	before := read(t, ref.Path)
	var logs bytes.Buffer
	r := newRestorer(dir)
	r.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil {
		t.Fatalf("a missing side file must not fail the restore: %v", err)
	}
	if res.Restored || res.Applied || res.Queued || res.Content[textPtr] != restore.MissingText || res.Warning == "" {
		t.Fatalf("result %+v", res)
	}
	if res.Text() != "[Content unavailable - extracted file missing]" {
		t.Fatalf("text %q", res.Text())
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("no warning logged: %s", logs.String())
	}
	if !bytes.Equal(read(t, ref.Path), before) {
		t.Fatal("transcript changed")
	}
	c, err := r.GetContext(ctx(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if c.LostValues != 1 {
		t.Fatalf("lost values %d: %+v", c.LostValues, c.Extracted)
	}
}

func TestCorruptSideFile(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(t *testing.T, side string)
	}{
		{"FlippedByteInValue", func(t *testing.T, side string) {
			rec, _, err := sidetest.ReadRecord(side, "r1")
			if err != nil {
				t.Fatal(err)
			}
			b := []byte(rec.Values[0].Raw)
			i := bytes.Index(b, []byte("output output"))
			if i < 0 {
				t.Fatalf("value not found in %s", rec.Values[0].Raw)
			}
			b[i+5] = 'X' // still valid JSON, wrong hash
			rec.Values[0].Raw = b
			if err := sidetest.WriteRecord(side, rec); err != nil {
				t.Fatal(err)
			}
		}},
		{"NotJSON", func(t *testing.T, side string) {
			if _, err := sidetest.CorruptRecord(side, "r1"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, big := basic()
			dir, ref := extracted(t, data)
			side := sidetest.Dir(ref.Path, ref.ID)
			tt.corrupt(t, side)
			before := read(t, ref.Path)
			r := newRestorer(dir)
			res, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
			if err != nil {
				t.Fatalf("a corrupt side file must not fail the restore: %v", err)
			}
			if res.Restored || res.Applied || res.Warning == "" || !strings.HasPrefix(res.Content[textPtr], "[Content unavailable - extracted file corrupt: ") {
				t.Fatalf("result %+v", res)
			}
			if !bytes.Equal(read(t, ref.Path), before) {
				t.Fatal("placeholder not kept")
			}
			log := read(t, filepath.Join(filepath.Dir(dir), ".brainsurgeon", "audit.jsonl"))
			var ev audit.Event
			if err := json.Unmarshal(bytes.TrimSpace(log), &ev); err != nil {
				t.Fatalf("audit %q: %v", log, err)
			}
			if ev.Action != "restore_corrupt" || ev.Entry != "r1" || ev.Session != "main/s1" || ev.Error == "" || ev.Path == "" || !ev.Time.Equal(now) {
				t.Fatalf("audit event %+v", ev)
			}
			// Other entries are unaffected.
			res, err = r.Restore(ctx(), ref, "a1", nil, restore.RestoreOptions{})
			if err != nil || !res.Restored || !res.Applied {
				t.Fatalf("restore a1: %+v %v", res, err)
			}
			if strings.Contains(string(lineOf(t, read(t, ref.Path), "a1")), "[[extracted-a1]]") {
				t.Fatal("a1 not restored")
			}
			if !strings.Contains(string(lineOf(t, read(t, ref.Path), "r1")), "[[extracted-r1]]") {
				t.Fatal("r1 placeholder lost")
			}
			_ = big
		})
	}
}

func TestErrors(t *testing.T) {
	data, _ := basic()
	dir, ref := extracted(t, data)
	r := newRestorer(dir)
	if _, err := r.Restore(ctx(), ref, "r1", []string{"text"}, restore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := ref
	missing.ID, missing.Path = "nope", filepath.Join(filepath.Dir(ref.Path), "nope.jsonl")
	tests := []struct {
		name  string
		ref   bs.SessionRef
		entry string
		keys  []string
		is    error
		says  []string
	}{
		{"UnknownSession", missing, "r1", nil, bs.ErrNotFound, []string{"nope.jsonl does not exist", "sessions there: s1"}},
		{"UnknownEntry", ref, "zz99", nil, bs.ErrNotFound, []string{`entry "zz99" not found in session main/s1`, "7 entries", "ids look like u1, a1, r1", "get_context"}},
		{"UnknownKey", ref, "a1", []string{"bogus"}, bs.ErrNotFound, []string{`key "bogus"`, "its keys are /message/content/0/thinking"}},
		{"NeverExtracted", ref, "u1", nil, bs.ErrNotFound, []string{"entry u1: nothing to restore"}},
		{"BadEntryID", ref, "../x", nil, bs.ErrInvalid, []string{"entry id"}},
		{"SlashKey", ref, "a1", []string{"/"}, bs.ErrInvalid, []string{"empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Restore(ctx(), tt.ref, tt.entry, tt.keys, restore.RestoreOptions{})
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want %v", err, tt.is)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
	t.Run("AlreadyRestored", func(t *testing.T) {
		// Restoring again is not an error: the current content, a note,
		// and nothing written.
		before := read(t, ref.Path)
		for _, keys := range [][]string{nil, {"text"}} {
			res, err := r.Restore(ctx(), ref, "r1", keys, restore.RestoreOptions{})
			if err != nil {
				t.Fatalf("keys %v: %v", keys, err)
			}
			if !res.Restored || !res.AlreadyRestored || res.Applied || res.Queued || len(res.KeysRestored) != 1 {
				t.Fatalf("keys %v: %+v", keys, res)
			}
			if !strings.Contains(res.Note, "already restored") || !strings.Contains(res.Note, "2026-02-20T17:30:00.000Z") {
				t.Errorf("note %q", res.Note)
			}
			var want string
			if err := json.Unmarshal([]byte(valueAt(t, lineOf(t, before, "r1"), res.KeysRestored[0])), &want); err != nil {
				t.Fatal(err)
			}
			if got := res.Content[res.KeysRestored[0]]; got != want {
				t.Errorf("content %.80q, want the entry's current text %.80q", got, want)
			}
		}
		if !bytes.Equal(read(t, ref.Path), before) {
			t.Error("the transcript changed")
		}
	})
	t.Run("SetExtractableUnknownEntry", func(t *testing.T) {
		_, err := r.SetExtractable(ctx(), ref, "zz99", "false")
		if !errors.Is(err, bs.ErrNotFound) || !strings.Contains(err.Error(), "ids look like") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("RestoreAllUnknownSession", func(t *testing.T) {
		if _, err := r.RestoreAll(ctx(), missing, true); !errors.Is(err, bs.ErrNotFound) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("ApplyPendingWithoutQueueDir", func(t *testing.T) {
		if _, _, err := (&restore.Restorer{}).ApplyPending(ctx()); !errors.Is(err, bs.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestGetContext(t *testing.T) {
	data, _ := basic()
	dir, ref := extracted(t, data)
	r := newRestorer(dir)
	if _, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Policy.AgeThreshold, r.Policy.MinSavingTokens = 0, 0
	c, err := r.GetContext(ctx(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if c.Session != "main/s1" || c.Entries != 7 || c.ContextMessages != 7 || c.Bytes != int64(len(read(t, ref.Path))) {
		t.Fatalf("context %+v", c)
	}
	if len(c.Extracted) != 2 || c.EntriesWithPlaceholders != 1 || c.LostValues != 0 || c.Pending != 0 {
		t.Fatalf("context %+v", c)
	}
	a1, r1 := c.Extracted[0], c.Extracted[1]
	if a1.EntryID != "a1" || a1.Placeholders != 1 || a1.Type != "thinking" || fmt.Sprint(a1.Keys) != "[/message/content/0/thinking]" || a1.SizesBytes["/message/content/0/thinking"] != 802 || a1.ExtractedAt.IsZero() {
		t.Fatalf("a1 %+v", a1)
	}
	if c.ExtractedBytes != 802 {
		t.Fatalf("extracted bytes %d", c.ExtractedBytes)
	}
	if r1.EntryID != "r1" || r1.Placeholders != 0 || r1.RestoredAt != "2026-02-20T17:30:00.000Z" || r1.ProtectedUntil == nil || !r1.ProtectedUntil.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("r1 %+v", r1)
	}
	// r1 is restored and protected; nothing else qualifies.
	if c.ExtractableNow != 0 {
		t.Fatalf("extractable now %d", c.ExtractableNow)
	}
	r.Clock = &clock{now.Add(11 * time.Minute)}
	if c, err = r.GetContext(ctx(), ref); err != nil || c.ExtractableNow != 1 {
		t.Fatalf("after protection: %d %v", c.ExtractableNow, err)
	}
}

// TestRestoreShapes restores the other shapes of extracted values: the
// flat entries (ids in "__id"), side files of the first BrainSurgeon, and
// whole image blocks.
func TestRestoreShapes(t *testing.T) {
	t.Run("FlatEntryWithSkillKeys", func(t *testing.T) {
		out := long("flat", 900)
		data := []byte(fmt.Sprintf(`{"__id":"msg-456","type":"tool_result","toolName":"read","output":%q,"__ts":"2026-02-18T09:00:00Z"}`+"\n"+
			`{"__id":"msg-457","type":"assistant","content":"ok"}`+"\n", out))
		dir, ref := install(t, "s1", data)
		p := allPolicy(500)
		if _, err := extractor(p).Run(ctx(), ref); err != nil {
			t.Fatal(err)
		}
		if valueAt(t, lineOf(t, read(t, ref.Path), "msg-456"), "/output") != `"[[extracted-msg-456]]"` {
			t.Fatal("not extracted")
		}
		r := newRestorer(dir)
		res, err := r.Restore(ctx(), ref, "msg-456", []string{"content,output"}, restore.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Restored || res.Content["/output"] != out || !strings.Contains(res.Warning, `key "content"`) {
			t.Fatalf("result %+v", res)
		}
		if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
			t.Fatal(err)
		}
		if got := read(t, ref.Path); !bytes.Equal(got, data) {
			t.Fatalf("pristine: %s", firstDiff(data, got))
		}
	})
	t.Run("LegacySideFile", func(t *testing.T) {
		data := []byte(`{"__id":"msg-1","type":"tool_result","output":"[[extracted]]","_extractable":3}` + "\n")
		dir, ref := install(t, "s1", data)
		side := sidetest.Dir(ref.Path, ref.ID)
		if err := os.MkdirAll(side, 0o700); err != nil {
			t.Fatal(err)
		}
		legacy := `{"output": "line one\nline two", "__meta": {"extracted_at": "2026-02-19T10:00:00.000Z", "trigger_type": "tool_result"}}`
		if err := os.WriteFile(filepath.Join(side, "msg-1.json"), []byte(legacy), 0o600); err != nil {
			t.Fatal(err)
		}
		r := newRestorer(dir)
		res, err := r.Restore(ctx(), ref, "msg-1", nil, restore.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Restored || !res.Applied || res.Content["/output"] != "line one\nline two" {
			t.Fatalf("result %+v", res)
		}
		if got := valueAt(t, lineOf(t, read(t, ref.Path), "msg-1"), "/output"); got != `"line one\nline two"` {
			t.Fatalf("output = %s", got)
		}
	})
	t.Run("ImageBlock", func(t *testing.T) {
		img := fmt.Sprintf(`{"type":"image","data":%q,"mimeType":"image/png"}`, strings.Repeat("iVBORw0KGgo", 100))
		body := `{"role":"user","content":[{"type":"text","text":"see"},` + img + `],"timestamp":1771500000000}`
		data := transcript(msg{id: "u1", body: body}, msg{id: "a1", body: assistantText("nice")})
		dir, ref := install(t, "s1", data)
		if _, err := extractor(allPolicy(500)).Run(ctx(), ref); err != nil {
			t.Fatal(err)
		}
		if got := valueAt(t, lineOf(t, read(t, ref.Path), "u1"), "/message/content/1"); got != `{"type":"text","text":"[[extracted-u1]]"}` {
			t.Fatalf("image block = %s", got)
		}
		r := newRestorer(dir)
		res, err := r.Restore(ctx(), ref, "u1", []string{"1"}, restore.RestoreOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Content["/message/content/1"] != img {
			t.Fatalf("content %.100q", res.Content["/message/content/1"])
		}
		if got := valueAt(t, lineOf(t, read(t, ref.Path), "u1"), "/message/content/1"); got != img {
			t.Fatalf("block not restored: %.100s", got)
		}
	})
}
