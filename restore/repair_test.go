package restore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// unpaired is a transcript whose tool call c1 (in a1) has no result: the
// user's next message u2 follows the assistant message directly.
func unpaired() []byte {
	return transcript(
		msg{id: "u1", body: userMsg("list files")},
		msg{id: "a1", body: assistantCall("let me look", "c1", "exec", `{"command":"ls"}`)},
		msg{id: "u2", body: userMsg("hello?")},
		msg{id: "a2", body: assistantText("sorry")},
	)
}

// syntheticLine is the line of an inserted tool result for call callID.
func syntheticLine(id, parent, callID string) []byte {
	return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-02-20T17:30:00.000Z","message":{"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":"No result provided"}],"isError":true,"timestamp":1771608600000}}`, id, parent, callID))
}

// fixRepair plans the repair of unpaired(): a result for c1 after a1 (line
// 3), u2 (line 4) re-parented to it.
func fixRepair(t *testing.T, ref bs.SessionRef) restore.Repair {
	t.Helper()
	return restore.Repair{Base: version(t, ref), Op: "doctor_fix",
		Inserts:   []restore.Insert{{AfterLine: 3, AfterID: "a1", Entries: [][]byte{syntheticLine("abcd0001", "a1", "c1")}, IDs: []string{"abcd0001"}}},
		Reparents: []restore.Reparent{{Line: 4, EntryID: "u2", Parent: "abcd0001"}},
	}
}

func version(t testing.TB, ref bs.SessionRef) bs.Version {
	t.Helper()
	tr, err := session.Open(context.Background(), ref.Path, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Version()
}

// auditLines returns the audit events of the Restorer's state dir.
func auditLines(t *testing.T, dir string) []audit.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(config.StateDir(dir), "audit.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Event
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var ev audit.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// journalOf returns the journal of an entry's side record (nil when it
// has no record).
func journalOf(t *testing.T, r *restore.Restorer, ref bs.SessionRef, id string) []restore.JournalItem {
	t.Helper()
	rec, err := extract.LoadRecord(context.Background(), r.Side, ref, id)
	if errors.Is(err, bs.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var j []restore.JournalItem
	if raw, ok := rec.Extra["journal"]; ok {
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// TestApplyRepair inserts a tool result and re-parents the next entry,
// checks the file, the journals and the audit line, then checks that a
// restore without pristine leaves the repair alone and that a pristine one
// takes it back byte for byte.
func TestApplyRepair(t *testing.T) {
	data := unpaired()
	dir, ref := install(t, "s1", data)
	r := newRestorer(dir)
	if err := r.ApplyRepair(ctx(), ref, fixRepair(t, ref)); err != nil {
		t.Fatal(err)
	}
	got := read(t, ref.Path)
	lines := strings.Split(string(data), "\n")
	want := strings.Join(lines[:3], "\n") + "\n" + string(syntheticLine("abcd0001", "a1", "c1")) + "\n" +
		strings.Replace(lines[3], `"parentId":"a1"`, `"parentId":"abcd0001"`, 1) + "\n" + strings.Join(lines[4:], "\n")
	if string(got) != want {
		t.Fatalf("after the repair:\n%s\nwant\n%s", got, want)
	}
	if j := journalOf(t, r, ref, "abcd0001"); len(j) != 1 || j[0].Path != "" || !j[0].Absent || j[0].Op != "doctor_fix" || j[0].RawBase64 == "" {
		t.Errorf("journal of the inserted entry: %+v", j)
	}
	if j := journalOf(t, r, ref, "u2"); len(j) != 1 || j[0].Path != "/parentId" || j[0].Absent || j[0].Op != "doctor_fix" {
		t.Errorf("journal of the re-parented entry: %+v", j)
	}
	evs := auditLines(t, dir)
	if len(evs) != 1 || evs[0].Action != "doctor_fix" || evs[0].Agent != "main" || evs[0].SessionID != "s1" ||
		evs[0].Session != ref.String() || !strings.Contains(evs[0].Entry, "abcd0001") {
		t.Fatalf("audit: %+v", evs)
	}
	if oracle.Optional(t) {
		c, err := oracle.Context(ctx(), ref.Path)
		if err != nil {
			t.Fatal(err)
		}
		var roles []string
		for _, m := range c.Messages {
			var v struct{ Role string }
			json.Unmarshal(m, &v)
			roles = append(roles, v.Role)
		}
		if strings.Join(roles, ",") != "user,assistant,toolResult,user,assistant" {
			t.Fatalf("pi's context: %v", roles)
		}
	}

	// Without pristine the repair stays: it is not an extraction.
	res, err := r.RestoreAll(ctx(), ref, false)
	if err != nil {
		t.Fatal(err)
	}
	if string(read(t, ref.Path)) != want || res.Applied || res.Pristine || res.Remaining.Inserted != 1 ||
		res.Remaining.Placeholders != 0 || len(res.Lost) != 0 {
		t.Fatalf("restore without pristine: %+v", res)
	}
	// Pristine: the original bytes, and the journals cleared.
	res, err = r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) {
		t.Fatalf("pristine: %s", firstDiff(data, got))
	}
	if !res.Pristine || res.LinesRemoved != 1 || res.ParentsUndone != 1 || res.Bookkeeping != 0 || res.Entries != 2 || len(res.Lost) != 0 {
		t.Fatalf("pristine result: %+v", res)
	}
	if j := journalOf(t, r, ref, "u2"); len(j) != 0 {
		t.Errorf("journal of u2 after the pristine restore: %+v", j)
	}
}

// TestApplyRepairAfterExtraction repairs an extracted transcript, restores
// a value, extracts again (the inserted entry too), and checks that the
// pristine restore undoes all of it.
func TestApplyRepairAfterExtraction(t *testing.T) {
	data, _ := basic()
	data = append(data, transcript(msg{id: "x1", body: assistantCall("again", "c9", "exec", `{}`)})[len(transcript()):]...)
	// x1 follows u3 in the file but names no parent: give it one.
	data = bytes.Replace(data, []byte(`"id":"x1","parentId":null`), []byte(`"id":"x1","parentId":"u3"`), 1)
	dir, ref := extracted(t, data)
	r := newRestorer(dir)
	after := bytes.Count(data, []byte("\n")) // x1's line: the anchor is the leaf
	rep := restore.Repair{Base: version(t, ref), Op: "doctor_fix",
		Inserts: []restore.Insert{{AfterLine: after, AfterID: "x1", Entries: [][]byte{syntheticLine("abcd0009", "x1", "c9")}, IDs: []string{"abcd0009"}}}}
	if err := r.ApplyRepair(ctx(), ref, rep); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pass after the repair extracts the inserted entry too; its
	// journal must survive.
	if _, err := extractor(allPolicy(1)).Run(ctx(), ref); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(read(t, ref.Path), []byte("[[extracted-abcd0009]]")) {
		t.Fatal("the inserted entry was not extracted")
	}
	res, err := r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) {
		t.Fatalf("pristine: %s\n%+v", firstDiff(data, got), res)
	}
	if !res.Pristine || res.LinesRemoved != 1 {
		t.Fatalf("pristine result: %+v", res)
	}
}

// TestApplyRepairInsertedLineChanged: an inserted line that changed since
// is kept, reported, and keeps its journal; the re-parent is undone.
func TestApplyRepairInsertedLineChanged(t *testing.T) {
	data := unpaired()
	dir, ref := install(t, "s1", data)
	r := newRestorer(dir)
	if err := r.ApplyRepair(ctx(), ref, fixRepair(t, ref)); err != nil {
		t.Fatal(err)
	}
	cur := read(t, ref.Path)
	changed := bytes.Replace(cur, []byte(`"No result provided"`), []byte(`"No result provided!"`), 1)
	if err := os.WriteFile(ref.Path, changed, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lost) != 1 || res.Lost[0].Kind != restore.ProblemInsertedChanged || res.Lost[0].EntryID != "abcd0001" ||
		res.Lost[0].Line != 4 || res.Pristine || res.Remaining.Inserted != 1 || res.Remaining.Placeholders != 0 || res.LinesRemoved != 0 {
		t.Fatalf("result: %+v", res)
	}
	got := read(t, ref.Path)
	if !bytes.Contains(got, []byte(`"No result provided!"`)) || !bytes.Contains(got, []byte(`"id":"u2","parentId":"a1"`)) {
		t.Fatalf("after the pristine restore:\n%s", got)
	}
	if j := journalOf(t, r, ref, "abcd0001"); len(j) != 1 {
		t.Errorf("the kept line's journal: %+v", j)
	}
}

// failingStore is a Store whose Rewrite fails.
type failingStore struct{ bs.Store }

func (failingStore) Rewrite(context.Context, bs.SessionRef, bs.Version, []bs.Edit, func() error) error {
	return fmt.Errorf("disk full (test)")
}

// TestApplyRepairRewriteFails: the side records written before a failed
// rewrite are harmless: a pristine restore finds nothing to undo.
func TestApplyRepairRewriteFails(t *testing.T) {
	data := unpaired()
	dir, ref := install(t, "s1", data)
	r := newRestorer(dir)
	r.Store = failingStore{r.Store}
	if err := r.ApplyRepair(ctx(), ref, fixRepair(t, ref)); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("ApplyRepair: %v, want the rewrite's error", err)
	}
	if len(journalOf(t, r, ref, "abcd0001")) != 1 || len(auditLines(t, dir)) != 0 {
		t.Fatal("expected the journal written first and no audit line")
	}
	r = newRestorer(dir)
	res, err := r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) || !res.Pristine || res.Applied || len(res.Lost) != 0 || len(res.Warnings) != 0 {
		t.Fatalf("pristine after a failed repair: %+v\n%s", res, got)
	}
	// A retry succeeds and is undone as well.
	if err := r.ApplyRepair(ctx(), ref, fixRepair(t, ref)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.RestoreAll(ctx(), ref, true); err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) {
		t.Fatalf("pristine after the retry: %s", firstDiff(data, got))
	}
}

// TestApplyRepairRefused: bad repairs, a busy session, a changed one and
// the SQLite store write nothing: no transcript byte, no side record, no
// audit line.
func TestApplyRepairRefused(t *testing.T) {
	good := func(t *testing.T, ref bs.SessionRef) restore.Repair { return fixRepair(t, ref) }
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ref *bs.SessionRef) restore.Repair
		err   error
		msg   string
	}{
		{"NoOp", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			return restore.Repair{Op: "doctor_fix"}
		}, nil, ""},
		{"BadOp", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Op = "Doctor Fix"
			return rep
		}, bs.ErrInvalid, "operation name"},
		{"NoBase", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Base = bs.Version{}
			return rep
		}, bs.ErrInvalid, "no base version"},
		{"ShortID", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = []string{"abc"}
			rep.Inserts[0].Entries = [][]byte{syntheticLine("abc", "a1", "c1")}
			return rep
		}, bs.ErrInvalid, "at least 8 characters"},
		{"BadID", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = []string{"../../etc"}
			return rep
		}, bs.ErrInvalid, "entry id"},
		{"IDMismatch", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = []string{"abcd0002"}
			return rep
		}, bs.ErrInvalid, `expected an "id" member "abcd0002"`},
		{"NotAnObject", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].Entries = [][]byte{[]byte(`["abcd0001"]`)}
			return rep
		}, bs.ErrInvalid, "expected a JSON object"},
		{"TwoLines", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].Entries = [][]byte{[]byte("{\"id\":\"abcd0001\"}\n{}")}
			return rep
		}, bs.ErrInvalid, "line break"},
		{"CountMismatch", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = append(rep.Inserts[0].IDs, "abcd0002")
			return rep
		}, bs.ErrInvalid, "1 entries and 2 ids"},
		{"DuplicateInsertedID", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = append(rep.Inserts[0].IDs, "abcd0001")
			rep.Inserts[0].Entries = append(rep.Inserts[0].Entries, rep.Inserts[0].Entries[0])
			return rep
		}, bs.ErrInvalid, "inserted twice"},
		{"TwoReparentsOfOneLine", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Reparents = append(rep.Reparents, rep.Reparents[0])
			return rep
		}, bs.ErrInvalid, "re-parented twice"},
		{"AnchorMoved", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].AfterLine = 2
			return rep
		}, bs.ErrChanged, `expected entry a1 on line 2, found entry "u1"`},
		{"ReparentLineMoved", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Reparents[0].Line = 9
			return rep
		}, bs.ErrChanged, "found no entry there"},
		{"InsertedIDTaken", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Inserts[0].IDs = []string{"a2a2a2a2"}
			rep.Inserts[0].Entries = [][]byte{syntheticLine("a2a2a2a2", "a1", "c1")}
			rep.Reparents[0].Parent = "a2a2a2a2"
			data := bytes.Replace(read(t, ref.Path), []byte(`"id":"a2"`), []byte(`"id":"a2a2a2a2"`), 1)
			writeOld(t, ref.Path, data)
			rep.Base = version(t, *ref)
			return rep
		}, bs.ErrChanged, "already in the transcript"},
		{"UnknownParent", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			rep.Reparents[0].Parent = "ffff0000"
			return rep
		}, bs.ErrChanged, "neither in the transcript nor inserted"},
		{"Changed", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			writeOld(t, ref.Path, append(read(t, ref.Path), transcript(msg{id: "u9", body: userMsg("more")})[len(transcript()):]...))
			return rep
		}, bs.ErrChanged, "no longer the version"},
		{"Busy", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			liveLock(t, ref.Path)
			return good(t, *ref)
		}, bs.ErrBusy, "held by live pid"},
		{"Running", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			ref.Status = "running"
			return good(t, *ref)
		}, bs.ErrBusy, "run in flight"},
		{"SQLite", func(t *testing.T, ref *bs.SessionRef) restore.Repair {
			rep := good(t, *ref)
			ref.Backend = bs.BackendSQLite
			return rep
		}, bs.ErrUnsupported, "cannot insert or re-parent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, ref := install(t, "s1", unpaired())
			r := newRestorer(dir)
			rep := tc.setup(t, &ref)
			before := read(t, ref.Path)
			err := r.ApplyRepair(ctx(), ref, rep)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.err, tc.msg)
			}
			if got := read(t, ref.Path); !bytes.Equal(got, before) {
				t.Fatalf("transcript changed:\n%s", got)
			}
			ref.Backend = ""
			if infos, err := r.Side.List(ctx(), ref); err != nil || len(infos) != 0 {
				t.Fatalf("side records written: %v %v", infos, err)
			}
			if evs := auditLines(t, dir); len(evs) != 0 {
				t.Fatalf("audit lines written: %+v", evs)
			}
		})
	}
}

// writeOld writes data to path with an old modification time.
func writeOld(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestApplyRepairReparentOnly detaches entries without inserting any: a
// new parent, a null one, one that is already the parent (nothing to
// write for it); the pristine restore puts every "parentId" back.
func TestApplyRepairReparentOnly(t *testing.T) {
	data := unpaired()
	dir, ref := install(t, "s1", data)
	r := newRestorer(dir)
	rep := restore.Repair{Base: version(t, ref), Op: "doctor_fix", Reparents: []restore.Reparent{
		{Line: 4, EntryID: "u2", Parent: "u1"},
		{Line: 5, EntryID: "a2", Parent: ""},
		{Line: 3, EntryID: "a1", Parent: "u1"},
	}}
	if err := r.ApplyRepair(ctx(), ref, rep); err != nil {
		t.Fatal(err)
	}
	got := read(t, ref.Path)
	if !bytes.Contains(got, []byte(`"id":"u2","parentId":"u1"`)) || !bytes.Contains(got, []byte(`"id":"a2","parentId":null`)) ||
		!bytes.Contains(got, []byte(`"id":"a1","parentId":"u1"`)) {
		t.Fatalf("after the repair:\n%s", got)
	}
	if j := journalOf(t, r, ref, "a1"); len(j) != 0 {
		t.Errorf("a1 was not changed but has a journal: %+v", j)
	}
	res, err := r.RestoreAll(ctx(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, ref.Path); !bytes.Equal(got, data) || res.ParentsUndone != 2 || res.Bookkeeping != 0 || !res.Pristine {
		t.Fatalf("pristine: %+v\n%s", res, got)
	}
}

// TestPristineKeepsInsertedParent: after a repair whose inserted result
// became the leaf, the host appends a child of it; a pristine restore
// keeps every inserted line an entry that stays has as its parent (else
// that entry's parentId names no entry) and says the result is not
// pristine. An append to a line no repair inserted changes nothing.
func TestPristineKeepsInsertedParent(t *testing.T) {
	leaf := transcript(
		msg{id: "u1", body: userMsg("list files")},
		msg{id: "a1", body: assistantCall("let me look", "c1", "exec", `{"command":"ls"}`)},
	)
	appended := func(parent string) string {
		return `{"type":"message","id":"u3000000","parentId":"` + parent + `","timestamp":"2026-02-20T18:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"next"}],"timestamp":1771500000000}}` + "\n"
	}
	for _, c := range []struct {
		name     string
		data     []byte
		repair   func(ref bs.SessionRef) restore.Repair
		parent   string   // of the appended entry
		kept     []string // inserted lines kept
		pristine bool
	}{
		{"LeafChild", leaf, func(ref bs.SessionRef) restore.Repair {
			return restore.Repair{Base: version(t, ref), Op: "doctor_fix",
				Inserts: []restore.Insert{{AfterLine: 3, AfterID: "a1", Entries: [][]byte{syntheticLine("abcd0001", "a1", "c1")}, IDs: []string{"abcd0001"}}}}
		}, "abcd0001", []string{"abcd0001"}, false},
		{"ChainChild", leaf, func(ref bs.SessionRef) restore.Repair {
			return restore.Repair{Base: version(t, ref), Op: "doctor_fix",
				Inserts: []restore.Insert{{AfterLine: 3, AfterID: "a1", Entries: [][]byte{syntheticLine("abcd0001", "a1", "c1"),
					syntheticLine("abcd0002", "abcd0001", "c2")}, IDs: []string{"abcd0001", "abcd0002"}}}}
		}, "abcd0002", []string{"abcd0001", "abcd0002"}, false},
		{"ChildOfHostLine", unpaired(), func(ref bs.SessionRef) restore.Repair { return fixRepair(t, ref) }, "a2", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, ref := install(t, "s1", c.data)
			r := newRestorer(dir)
			if err := r.ApplyRepair(ctx(), ref, c.repair(ref)); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(ref.Path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(appended(c.parent)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			res, err := r.RestoreAll(ctx(), ref, true)
			if err != nil {
				t.Fatal(err)
			}
			got := read(t, ref.Path)
			if c.pristine {
				if want := string(c.data) + appended(c.parent); string(got) != want || !res.Pristine || len(res.Lost) != 0 {
					t.Fatalf("%+v\n%s", res, firstDiff([]byte(want), got))
				}
				return
			}
			if res.Pristine || res.Remaining.Inserted != len(c.kept) || res.Remaining.Placeholders != 0 || res.LinesRemoved != 0 || len(res.Lost) != len(c.kept) {
				t.Fatalf("result: %+v", res)
			}
			for i, id := range c.kept {
				if p := res.Lost[i]; p.Kind != restore.ProblemInsertedHasChildren || p.EntryID != id || p.Path != "" {
					t.Errorf("lost[%d] = %+v; want %s kept as a parent", i, p, id)
				}
				if !bytes.Contains(got, []byte(`"id":"`+id+`"`)) {
					t.Errorf("inserted line %s removed although it is a parent:\n%s", id, got)
				}
				if j := journalOf(t, r, ref, id); len(j) != 1 {
					t.Errorf("the kept line %s lost its journal: %+v", id, j)
				}
			}
			// Once the child is gone, the next pristine restore removes them.
			if err := os.WriteFile(ref.Path, bytes.TrimSuffix(got, []byte(appended(c.parent))), 0o600); err != nil {
				t.Fatal(err)
			}
			if res, err := r.RestoreAll(ctx(), ref, true); err != nil || !res.Pristine || string(read(t, ref.Path)) != string(c.data) {
				t.Fatalf("second restore: %v %+v", err, res)
			}
		})
	}
}

// racingStore is a Store whose Rewrite first lets another writer replace
// the side records of ids with copies read before the repair's journals
// (as the daemon's extraction could), then rewrites, then calls after.
type racingStore struct {
	bs.Store
	side  bs.SideStore
	ids   []string
	after func()
}

func (s racingStore) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	for _, id := range s.ids {
		rec, err := extract.LoadRecord(ctx, s.side, ref, id)
		if err != nil {
			return err
		}
		delete(rec.Extra, "journal")
		if _, err := extract.SaveRecord(ctx, s.side, ref, rec); err != nil {
			return err
		}
	}
	if err := s.Store.Rewrite(ctx, ref, base, edits, gate); err != nil {
		return err
	}
	if s.after != nil {
		s.after()
	}
	return nil
}

// gatedSide is a SideStore whose Put fails while *fail is set.
type gatedSide struct {
	bs.SideStore
	fail *bool
}

func (s gatedSide) Put(ctx context.Context, ref bs.SessionRef, recs []bs.SideRecord) error {
	if *s.fail {
		return fmt.Errorf("side store read-only (test)")
	}
	return s.SideStore.Put(ctx, ref, recs)
}

// TestApplyRepairJournalRace: a writer that replaces the side records
// between the journals' flush and the rewrite loses no journal: the
// repair puts them back, so the pristine restore is still byte-identical.
// When they cannot be put back, the error names the entries.
func TestApplyRepairJournalRace(t *testing.T) {
	data := unpaired()
	t.Run("PutBack", func(t *testing.T) {
		dir, ref := install(t, "s1", data)
		r := newRestorer(dir)
		r.Store = racingStore{Store: r.Store, side: r.Side, ids: []string{"abcd0001", "u2"}}
		if err := r.ApplyRepair(ctx(), ref, fixRepair(t, ref)); err != nil {
			t.Fatal(err)
		}
		if j := journalOf(t, r, ref, "u2"); len(j) != 1 || j[0].Path != "/parentId" || j[0].RawBase64 != "ImExIg==" {
			t.Fatalf("u2's journal: %+v", j)
		}
		r = newRestorer(dir)
		res, err := r.RestoreAll(ctx(), ref, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := read(t, ref.Path); !bytes.Equal(got, data) || !res.Pristine {
			t.Fatalf("pristine: %+v\n%s", res, firstDiff(data, got))
		}
	})
	t.Run("CannotPutBack", func(t *testing.T) {
		dir, ref := install(t, "s1", data)
		r := newRestorer(dir)
		fail := false
		r.Side = gatedSide{SideStore: r.Side, fail: &fail}
		r.Store = racingStore{Store: r.Store, side: r.Side, ids: []string{"u2"}, after: func() { fail = true }}
		err := r.ApplyRepair(ctx(), ref, restore.Repair{Base: version(t, ref), Op: "doctor_fix",
			Inserts:   []restore.Insert{{AfterLine: 3, AfterID: "a1", Entries: [][]byte{syntheticLine("abcd0001", "a1", "c1")}, IDs: []string{"abcd0001"}}},
			Reparents: []restore.Reparent{{Line: 4, EntryID: "u2", Parent: "abcd0001"}}})
		if err == nil || !strings.Contains(err.Error(), "entries u2 ") || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("ApplyRepair: %v; want an error naming entry u2", err)
		}
	})
}
