package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// synthFlat is an entry of the flat shape ({"__id":…,"type":"tool_result",
// "output":…}) that the first BrainSurgeon wrote.
func synthFlat(id, output string) string {
	return `{"__id":"` + id + `","type":"tool_result","timestamp":"2026-01-01T00:00:05.000Z","output":"` + output + `"}`
}

// TestFlatEntriesStayInPlace prunes a SQLite session that mixes flat
// entries (whose values the store does not accept edits of: OpenClaw
// indexes them as it finds them) with ordinary tool results: the pass
// succeeds, extracts the tool results, leaves the flat rows and every
// other row byte-identical, and a pristine restore gives every row back.
// A forced flat entry (_extractable: true) is left in place too.
func TestFlatEntriesStayInPlace(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	const id = "flat-0001"
	turns := synthTurns(id, 3, 2000)
	forced := `{"__id":"f3","type":"tool_result","_extractable":true,"output":"` + longText("forced", 900) + `"}`
	rows := append([]string{}, turns[:5]...)
	rows = append(rows, synthFlat("f1", longText("flat one", 3000)), synthFlat("f2", longText("flat two", 1500)), forced)
	rows = append(rows, turns[5:]...)
	newSynthStore(t, agents, "main", synthSession{id: id, rows: rows})
	cfg := passConfig(t, agents, 500)
	set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(ctx, "main/"+id)
	if err != nil {
		t.Fatal(err)
	}
	before := rowsOf(t, set.Store)[ref.Identity()]
	rep, err := prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].Status != prune.StatusExtracted {
		t.Fatalf("pass: %+v", rep.Sessions)
	}
	res := rep.Sessions[0].Result
	got := map[string]bool{}
	for _, d := range res.Details {
		got[d.ID] = true
	}
	if !got["t0r"] || !got["t1r"] || got["f1"] || got["f2"] || got["f3"] {
		t.Fatalf("extracted %v, want t0r and t1r and no flat entry", got)
	}
	if n := res.Counts[extract.CodeNotEditable]; n != 3 {
		t.Errorf("%d decisions %q, want 3 (the flat entries): %v", n, extract.CodeNotEditable, res.Counts)
	}
	after := rowsOf(t, set.Store)[ref.Identity()]
	for i := 5; i < 8; i++ {
		if !bytes.Equal(after[i], before[i]) {
			t.Fatalf("flat row %d changed:\n%s", i, after[i])
		}
	}
	// A second pass finds nothing more to do.
	rep, err = prune.New(set.Store, set.Side, set.StateDir, cfg, nil).Run(ctx, nil)
	if err != nil || rep.Sessions[0].Status != prune.StatusUnchanged {
		t.Fatalf("second pass: %v %+v", err, rep.Sessions)
	}
	if _, err := restore.New(set.Store, set.Side, set.StateDir).RestoreAll(ctx, ref, true); err != nil {
		t.Fatal(err)
	}
	now := rowsOf(t, set.Store)[ref.Identity()]
	for i := range before {
		if !bytes.Equal(now[i], before[i]) {
			t.Fatalf("row %d differs after the pristine restore:\n%s\nwas\n%s", i, now[i], before[i])
		}
	}
}

// TestEditableValues asks the store value by value: it accepts what its
// projection guard accepts, within the trigger types Editable allows.
func TestEditableValues(t *testing.T) {
	st := sqlite.NewStore(t.TempDir(), sqlite.Options{})
	ph := func(id string) []byte { return []byte(`"` + extract.Placeholder(id) + `"`) }
	for _, tt := range []struct {
		name, line string
		want       []bool // per candidate, in document order
	}{
		{"ToolResult", synthResult("r1", "c", "call", "out"), []bool{true}},
		{"Flat", synthFlat("f1", "out"), []bool{false}},
		{"UserText", synthUser("u1", "", "hello"), []bool{false}},
		{"Thinking", `{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","thinkingSignature":"sig"},{"type":"text","text":"answer"}]}}`, []bool{true, true, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := entry.Parse([]byte(tt.line), 1, 1)
			cands := entry.Classify(e)
			with := make([][]byte, len(cands))
			for i := range cands {
				with[i] = ph(e.ID)
			}
			got := st.EditableValues(bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "s"}, e, cands, with)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("EditableValues = %v, want %v (candidates %+v)", got, tt.want, cands)
			}
		})
	}
}

// TestCheckEditFlatOutput pins the projection guard's rule for a flat
// tool_result row's output: it may be put back from its placeholder (a
// value extracted before OpenClaw's importer copied the row), never
// extracted, and no other member of the row may change; a user message's
// text may not change either way.
func TestCheckEditFlatOutput(t *testing.T) {
	st := sqlite.NewStore(t.TempDir(), sqlite.Options{})
	ref := bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "s"}
	ph := extract.Placeholder("f1")
	for _, tt := range []struct {
		name, old, new string
		ok             bool
	}{
		{"PutBack", synthFlat("f1", ph), synthFlat("f1", "the output"), true},
		{"PutBackPreview", synthFlat("f1", "the out… "+ph), synthFlat("f1", "the output"), true},
		{"Extract", synthFlat("f1", "the output"), synthFlat("f1", ph), false},
		{"OtherChange", synthFlat("f1", "the output"), synthFlat("f1", "another output"), false},
		{"Timestamp", synthFlat("f1", ph), strings.Replace(synthFlat("f1", "x"), "00:00:05", "00:00:06", 1), false},
		{"NotFlat", `{"__id":"f1","type":"note","output":"` + ph + `"}`, `{"__id":"f1","type":"note","output":"x"}`, false},
		{"WithMessage", `{"type":"tool_result","id":"f1","message":{},"output":"` + ph + `"}`, `{"type":"tool_result","id":"f1","message":{},"output":"x"}`, false},
		{"UserText", synthUser("u1", "", ph), synthUser("u1", "", "hello"), false},
		{"ToolResult", synthResult("r1", "c", "call", ph), synthResult("r1", "c", "call", "out"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := st.CheckEdit(ref, []byte(tt.old), []byte(tt.new))
			if (err == nil) != tt.ok {
				t.Fatalf("CheckEdit = %v, want ok %v", err, tt.ok)
			}
			if err != nil && (!errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "OpenClaw SQLite store")) {
				t.Fatalf("CheckEdit error %q: want one wrapping ErrUnsupported that states the rule", err)
			}
		})
	}
}
