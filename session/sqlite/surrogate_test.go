package sqlite_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// loneHigh is a lone high surrogate escape followed by an ordinary
// character: what JavaScript's JSON.stringify writes for a string cut in
// the middle of an emoji.
const loneHigh = `\ud83dx`

// TestLoneSurrogates prunes a store whose rows hold lone UTF-16 surrogate
// escapes, in a tool result that is extracted (a plain row) and in user
// text that must not change, next to a compressed tool result: the pass
// extracts both tool results, leaves the user row byte-identical, and a
// pristine restore gives every row back byte for byte.
func TestLoneSurrogates(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	const id = "surrogates-0001"
	rows := synthTurns(id, 3, 2000)
	// Turn 0: the user text and the tool result carry lone surrogates.
	rows[1] = synthUser("t0u", "", longText("user", 800)+loneHigh+` and \udc00 alone`)
	rows[3] = synthResult("t0r", "t0c", "t0call", longText("result", 2000)+loneHigh+longText("tail", 300))
	newSynthStore(t, agents, "main", synthSession{id: id, rows: rows, zstd: map[int]bool{7: true}})
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
	got := map[string]bool{}
	for _, d := range rep.Sessions[0].Result.Details {
		got[d.ID] = true
	}
	if !got["t0r"] || !got["t1r"] {
		t.Fatalf("extracted %v, want t0r (lone surrogate) and t1r (compressed row)", got)
	}
	after := rowsOf(t, set.Store)[ref.Identity()]
	if !bytes.Equal(after[1], before[1]) {
		t.Fatalf("the user row changed:\n%s\nwas\n%s", after[1], before[1])
	}
	if !strings.Contains(string(after[3]), extract.Placeholder("t0r")) {
		t.Fatalf("tool result row holds no placeholder: %s", after[3])
	}
	v, err := restore.Verify(ctx, set.Store, set.Side, ref)
	if err != nil || !v.OK() || v.Placeholders < 2 {
		t.Fatalf("verify: %v %+v", err, v)
	}
	if _, err := restore.New(set.Store, set.Side, set.StateDir).RestoreAll(ctx, ref, true); err != nil {
		t.Fatal(err)
	}
	now := rowsOf(t, set.Store)[ref.Identity()]
	if len(now) != len(before) {
		t.Fatalf("%d rows, was %d", len(now), len(before))
	}
	for i := range before {
		if !bytes.Equal(now[i], before[i]) {
			t.Fatalf("row %d differs after the pristine restore:\n%s\nwas\n%s", i, now[i], before[i])
		}
	}
}
