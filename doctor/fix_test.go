package doctor_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/doctor"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// piMessage is what the pairing check reads of a context message.
type piMessage struct {
	Role       string `json:"role"`
	StopReason string `json:"stopReason"`
	ToolCallID string `json:"toolCallId"`
	Content    json.RawMessage
}

// unpaired applies pi-ai's request transform (assistant messages with
// stopReason "error"/"aborted" are dropped) to the context messages pi's
// SessionManager built and lists every tool call without a result in the
// run of results right after it, and every result that is not in such a
// run: what a provider rejects.
func unpaired(t testing.TB, msgs []json.RawMessage) []string {
	t.Helper()
	var bad []string
	var open map[string]bool // calls of the current frame still unanswered
	var frame map[string]bool
	closeFrame := func() {
		for id := range open {
			bad = append(bad, "call "+id+" has no result")
		}
		open, frame = nil, nil
	}
	for i, raw := range msgs {
		var m piMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("context message %d: %v", i, err)
		}
		switch m.Role {
		case "assistant":
			closeFrame()
			if m.StopReason == "error" || m.StopReason == "aborted" {
				continue
			}
			var blocks []struct{ Type, ID string }
			_ = json.Unmarshal(m.Content, &blocks)
			open, frame = map[string]bool{}, map[string]bool{}
			for _, b := range blocks {
				if b.Type == "toolCall" {
					open[b.ID], frame[b.ID] = true, true
				}
			}
		case "toolResult":
			if !open[m.ToolCallID] {
				bad = append(bad, fmt.Sprintf("result %d for %s has no call before it", i, m.ToolCallID))
				continue
			}
			delete(open, m.ToolCallID)
		default:
			closeFrame()
		}
	}
	closeFrame()
	return bad
}

// checkOracle loads path with pi's SessionManager and fails on any
// unpaired tool block in the context it builds, which it returns.
func checkOracle(t *testing.T, path string) []json.RawMessage {
	t.Helper()
	c, err := oracle.Context(ctx(), path)
	if err != nil {
		t.Fatal(err)
	}
	if bad := unpaired(t, c.Messages); len(bad) > 0 {
		t.Errorf("pi's context of the fixed transcript has unpaired tool blocks: %v", bad)
	}
	return c.Messages
}

// openClawRepairJS runs OpenClaw's own repairToolUseResultPairing (the
// install's dist/session-transcript-repair-*.js, export "n"), with the
// policy it uses for model requests, on each list of messages of each line
// read from stdin, and prints one line per input line: what it would add
// or drop. It serves every check of the package in one node run.
const openClawRepairJS = `
import fs from "node:fs"; import path from "node:path"; import url from "node:url"; import readline from "node:readline";
const dist = path.join(process.argv[1], "dist");
const f = fs.readdirSync(dist).find(n => /^session-transcript-repair-.*\.m?js$/.test(n));
if (!f) throw new Error("no session-transcript-repair module in " + dist);
const m = await import(url.pathToFileURL(path.join(dist, f)).href);
if (typeof m.n !== "function") throw new Error("no repairToolUseResultPairing export in " + f);
for await (const line of readline.createInterface({ input: process.stdin })) {
	const input = JSON.parse(line);
	process.stdout.write(JSON.stringify(input.map(msgs => {
		const r = m.n(msgs, { erroredAssistantResultPolicy: "drop" });
		return { added: r.added.length, dropped_orphans: r.droppedOrphanCount, dropped_duplicates: r.droppedDuplicateCount };
	})) + "\n");
}
`

// repairResult is what OpenClaw's repair would change in one context.
type repairResult struct{ Added, DroppedOrphans, DroppedDuplicates int }

// repairProc is a node process running openClawRepairJS for one release.
type repairProc struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
	err    error // why the release cannot be checked (not installed, or the process failed)
}

var (
	repairMu    sync.Mutex
	repairProcs = map[string]*repairProc{}
)

// openClawRepair returns the repair process of release v, started on
// first use and kept for the whole test binary (closeOpenClawRepairs stops
// them).
func openClawRepair(v string) *repairProc {
	repairMu.Lock()
	defer repairMu.Unlock()
	if p := repairProcs[v]; p != nil {
		return p
	}
	p := &repairProc{}
	repairProcs[v] = p
	inst, err := openclaw.Locate(v)
	if err != nil {
		p.err = err
		return p
	}
	p.cmd = exec.Command(inst.Node, "--input-type=module", "-e", openClawRepairJS, inst.Package)
	p.cmd.Stderr = &p.stderr
	if p.in, err = p.cmd.StdinPipe(); err == nil {
		var out io.ReadCloser
		if out, err = p.cmd.StdoutPipe(); err == nil {
			p.out = bufio.NewReader(out)
			err = p.cmd.Start()
		}
	}
	if err != nil {
		p.err = fmt.Errorf("openclaw@%s repair: %w", v, err)
	}
	return p
}

// check runs the repair on contexts and returns one result per context.
func (p *repairProc) check(contexts [][]json.RawMessage) ([]repairResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	in, err := json.Marshal(contexts)
	if err != nil {
		return nil, err
	}
	_, err = p.in.Write(append(in, '\n'))
	var out []byte
	if err == nil {
		out, err = p.out.ReadBytes('\n')
	}
	if err != nil {
		return nil, fmt.Errorf("%v\n%s", err, p.stderr.String())
	}
	var res []repairResult
	if err := json.Unmarshal(bytes.ReplaceAll(out, []byte("_"), nil), &res); err != nil || len(res) != len(contexts) {
		return nil, fmt.Errorf("%s (%v)", out, err)
	}
	return res, nil
}

// closeOpenClawRepairs ends the repair processes.
func closeOpenClawRepairs() {
	repairMu.Lock()
	defer repairMu.Unlock()
	for v, p := range repairProcs {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.in.Close()
			_ = p.cmd.Wait()
		}
		delete(repairProcs, v)
	}
}

// checkOpenClawRepair gives the contexts pi built from fixed transcripts
// to OpenClaw's own pairing repair, of each release installed: it must
// find nothing to add and nothing to drop. Releases not installed are
// skipped (they are installed for the end-to-end tests).
func checkOpenClawRepair(t *testing.T, names []string, contexts [][]json.RawMessage) {
	t.Helper()
	if len(contexts) == 0 {
		return
	}
	for _, v := range []string{openclaw.V7, openclaw.V9} {
		p := openClawRepair(v)
		res, err := p.check(contexts)
		switch {
		case err != nil && p.cmd == nil:
			t.Logf("OpenClaw's repair not checked: %v", err)
			continue
		case err != nil:
			t.Fatalf("openclaw@%s repair: %v", v, err)
		}
		for i, r := range res {
			if r.Added+r.DroppedOrphans+r.DroppedDuplicates != 0 {
				t.Errorf("openclaw@%s's repair still changes the fixed %s: %+v", v, names[i], r)
			}
		}
	}
}

func TestFix(t *testing.T) {
	oracle.Require(t)
	tests := []struct {
		name                      string
		lines                     []ln
		inserted, detached, moved int
		after                     string // health after
	}{
		{"missing result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2", "c3")}, {"r1", "", result("c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			2, 0, 0, doctor.HealthOK},
		{"result after a user message", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"r1", "", result("c1")}, {"a2", "", text("done")}, {"u3", "", user("thanks")}},
			0, 0, 1, doctor.HealthOK},
		{"results after plain messages, one missing", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2", "c3")}, {"r2", "", result("c2")}, {"u2", "", user("again")}, {"a2", "", text("hm")}, {"r1", "", result("c1")}, {"u3", "", user("more")}, {"a3", "", text("done")}},
			1, 0, 1, doctor.HealthOK},
		{"displaced leaf stays", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"r1", "", result("c1")}},
			0, 0, 0, doctor.HealthBroken},
		{"displaced and missing after a compaction", []ln{{"u0", "", user("start")}, {"a0", "", text("hi")}, {"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}, {"r1", "", result("c1")}, {"u2", "", user("again")}, {"r2", "", result("c2")},
			{"k1", "", compaction("u1")}, {"u3", "", user("more")}, {"a3", "", calls("toolUse", "c3")}, {"u4", "", user("still there?")}, {"a4", "", text("done")}},
			1, 0, 1, doctor.HealthOK},
		{"result after a compaction moves into the kept part", []ln{{"u0", "", user("start")}, {"a0", "", text("hi")}, {"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")},
			{"k1", "", compaction("u1")}, {"r1", "", result("c1")}, {"u3", "", user("more")}, {"a3", "", text("done")}},
			0, 0, 1, doctor.HealthOK},
		{"call on another branch", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "u1", user("instead")}, {"r1", "", result("c1")}, {"a2", "", text("done")}},
			0, 1, 0, doctor.HealthOK},
		{"aborted assistant", []ln{{"u1", "", user("go")}, {"a1", "", calls("aborted", "c1", "c2")}, {"r1", "", result("c1")}, {"r2", "", result("c2")}, {"u2", "", user("again")}, {"a2", "", text("done")}},
			0, 2, 0, doctor.HealthOK},
		{"duplicate result", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"r1", "", result("c1")}, {"r2", "", result("c1")}, {"a2", "", text("done")}},
			0, 1, 0, doctor.HealthOK},
		{"calls at the end", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1", "c2")}},
			2, 0, 0, doctor.HealthOK},
		{"orphan first then missing", []ln{{"r0", "", result("c0")}, {"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("more")}, {"a2", "", text("done")}},
			1, 1, 0, doctor.HealthOK},
		{"orphan leaf stays", []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("more")}, {"r9", "", result("c9")}},
			1, 0, 0, doctor.HealthBroken},
	}
	var names []string
	var contexts [][]json.RawMessage
	for _, agent := range []string{"main", ""} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/agent=%q", tc.name, agent), func(t *testing.T) {
				data := transcript(tc.lines...)
				e := install(t, agent, "s1", data)
				res, err := e.doc.Fix(ctx(), e.ref)
				if err != nil {
					t.Fatal(err)
				}
				changes := tc.inserted + tc.detached + tc.moved
				if res.Applied != (changes > 0) || res.Inserted != tc.inserted || res.Detached != tc.detached || res.Moved != tc.moved || (changes > 0) != (res.After != nil) {
					t.Fatalf("fix: applied %v, inserted %d, detached %d, moved %d, after %+v; want %d, %d, %d", res.Applied, res.Inserted, res.Detached, res.Moved, res.After, tc.inserted, tc.detached, tc.moved)
				}
				if after := cmp.Or(res.After, res.Before); after.Health != tc.after {
					t.Fatalf("health after the fix: %s, want %s: %+v", after.Health, tc.after, after.Problems)
				}
				fixed := read(t, e.path)
				if n := bytes.Count(fixed, []byte("\n")) - bytes.Count(data, []byte("\n")); n != tc.inserted {
					t.Errorf("the fix added %d lines, want %d", n, tc.inserted)
				}
				for _, l := range strings.Split(string(data), "\n") {
					if !bytes.Contains(fixed, []byte(l)) && !strings.Contains(l, `"parentId"`) {
						t.Errorf("line lost: %s", l)
					}
				}
				if tc.after == doctor.HealthOK {
					msgs := checkOracle(t, e.path)
					// Every real result stays in the context, but those taken off
					// the active path: a moved one is not replaced by a synthetic.
					real, want := 0, -tc.detached
					for _, m := range msgs {
						real += bytes.Count(m, []byte(`"file body"`))
					}
					for _, l := range tc.lines {
						want += strings.Count(l.body, `"file body"`)
					}
					if real != want {
						t.Errorf("pi's context of the fixed transcript holds %d real tool results, want %d", real, want)
					}
					contexts = append(contexts, msgs)
					names = append(names, t.Name())
				}
				again, err := e.doc.Fix(ctx(), e.ref)
				if err != nil || again.Applied {
					t.Errorf("a second fix: %+v, %v; want nothing to do", again, err)
				}
				if _, err := e.doc.Restorer.RestoreAll(ctx(), e.ref, true); err != nil {
					t.Fatal(err)
				}
				if got := read(t, e.path); !bytes.Equal(got, data) {
					t.Errorf("restore --all --pristine after the fix is not byte-identical:\n%s\nwant\n%s", got, data)
				}
			})
		}
	}
	checkOpenClawRepair(t, names, contexts)
}

// TestSyntheticShape pins the synthetic result lines: OpenClaw's message
// for an OpenClaw session, pi-ai's for a pi session, in pi's entry shape.
func TestSyntheticShape(t *testing.T) {
	lines := []ln{{"u1", "", user("go")}, {"a1", "", calls("toolUse", "c1")}, {"u2", "", user("again")}, {"a2", "", text("done")}}
	for _, tc := range []struct{ agent, msg string }{
		{"main", `{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"[openclaw] missing tool result in session history; inserted synthetic error result for transcript repair."}],"details":{"openclawSyntheticMissingToolResult":true,"reason":"missing_tool_result"},"isError":true,"timestamp":1771608600000}`},
		{"", `{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"No result provided"}],"isError":true,"timestamp":1771608600000}`},
	} {
		e := install(t, tc.agent, "s1", transcript(lines...))
		if _, err := e.doc.Fix(ctx(), e.ref); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(string(read(t, e.path)), "\n")
		line := got[3] // header, u1, a1, then the synthetic result
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		id := strings.Trim(string(m["id"]), `"`)
		want := fmt.Sprintf(`{"type":"message","id":%q,"parentId":"a1","timestamp":"2026-02-20T17:30:00.000Z","message":%s}`, id, tc.msg)
		if line != want || len(id) != 8 {
			t.Errorf("agent %q: synthetic line\n%s\nwant\n%s", tc.agent, line, want)
		}
		if !strings.Contains(got[4], fmt.Sprintf(`"parentId":%q`, id)) {
			t.Errorf("the entry after the anchor is not re-parented to the synthetic result: %s", got[4])
		}
	}
}

// TestFixBusy holds the host's lock: Fix fails with a clear message and
// writes nothing.
func TestFixBusy(t *testing.T) {
	data := transcript(ln{"u1", "", user("go")}, ln{"a1", "", calls("toolUse", "c1")}, ln{"u2", "", user("again")}, ln{"a2", "", text("done")})
	e := install(t, "main", "s1", data)
	holder := exec.Command("sleep", "30") // a live process that is not this one holds the lock
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	lock := e.path + ".lock"
	if err := os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"createdAt":"%s"}`, holder.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.doc.Fix(ctx(), e.ref)
	if !errors.Is(err, bs.ErrBusy) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("fix of a locked session: %v; want ErrBusy saying nothing was written", err)
	}
	if got := read(t, e.path); !bytes.Equal(got, data) {
		t.Error("the fix of a busy session changed the transcript")
	}
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFixLeavesOthersAlone repairs a session whose first entry names a
// parent that is not in the file (a truncated file): the fix changes only
// the entries the repair needs and leaves that parentId as it is.
func TestFixLeavesOthersAlone(t *testing.T) {
	data := transcript(ln{"u1", "gone0001", user("go")}, ln{"a1", "", calls("toolUse", "c1")}, ln{"u2", "", user("again")}, ln{"a2", "", text("done")})
	e := install(t, "main", "s1", data)
	res, err := e.doc.Fix(ctx(), e.ref)
	if err != nil || !res.Applied || res.Inserted != 1 {
		t.Fatalf("fix: %+v, %v", res, err)
	}
	got := strings.Split(string(read(t, e.path)), "\n")
	want := strings.Split(string(data), "\n")
	if got[1] != want[1] || got[2] != want[2] || got[5] != want[4] {
		t.Errorf("the fix changed entries it did not need to:\n%s", strings.Join(got, "\n"))
	}
}
