package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// TestRestoreAllPristineUpgradedRepair: a JSONL-era session pruned, then
// re-parented by a repair (doctor --fix), then imported into a SQLite store.
// A pristine restore --all cannot undo the re-parenting there (the store
// refuses a changed parentId), but it must still put back every value the
// store accepts and say what it could not undo, not fail whole.
func TestRestoreAllPristineUpgradedRepair(t *testing.T) {
	const id = "0badc0de-0000-4000-8000-000000000032"
	agents, file, orig := prunedUpgradeSession(t, id)
	// a2 (line 10) re-parented from r2 to c2.
	rows := repairUpgradeSession(t, agents, file, id, restore.Repair{Op: "doctor_fix",
		Reparents: []restore.Reparent{{Line: 10, EntryID: "a2", Parent: "c2"}}})
	if !strings.Contains(rows[9], `"parentId":"c2"`) || !strings.Contains(rows[8], "[[extracted-") {
		t.Fatalf("the JSONL era: %s\n%.200s", rows[9], rows[8])
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	db := testcorpus.WriteStore(t, agents, "main", testcorpus.StoreSession{ID: id, Rows: rows})

	code, out, errs := run(t, "restore", "main/"+id, "--all", "--pristine", "--agents-dir", agents)
	events := storeEvents(t, db, id)
	if code != 1 || strings.Contains(events[8], "[[extracted-") {
		t.Fatalf("restore --all --pristine: exit %d, r2's value back: %v\n%s\n%s", code, !strings.Contains(events[8], "[[extracted-"), out, errs)
	}
	// The summary says what stays, exactly: a repair's parentId is neither
	// a bookkeeping member nor an extracted value.
	for _, bad := range []string{"bookkeeping members (", "stay extracted", "placeholders could not"} {
		if strings.Contains(out+errs, bad) {
			t.Errorf("the summary says %q of a refused parentId:\n%s\n%s", bad, out, errs)
		}
	}
	for _, want := range []string{"1 entry re-parented by a repair (doctor --fix) keeps its new parentId", "the store does not accept 1 change undone",
		"1 change of a repair (doctor --fix) the store does not accept undone stays"} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("the summary lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	if !strings.Contains(out, "refused   a2 /parentId (line 10)") || events[9] != rows[9] || events[8] != orig[8] {
		t.Fatalf("restore --all --pristine: the re-parenting is not reported as refused, or a row is wrong\n%s\nrow 9: %s", out, events[9])
	}
	// The journal of a2 is kept: a second pass says the same.
	if code, out, _ = run(t, "restore", "main/"+id, "--all", "--pristine", "--agents-dir", agents); code != 1 || !strings.Contains(out, "refused   a2 /parentId (line 10)") {
		t.Fatalf("second restore --all --pristine: exit %d\n%s", code, out)
	}
}

// TestRestoreAllPristineUpgradedInsert: a JSONL-era session pruned, then
// given a line by a repair (doctor --fix) that no entry has as its parent,
// then imported into a SQLite store. The store removes no row, so a
// pristine restore --all keeps the line and lists it as refused, and still
// puts back every value in the same rewrite instead of writing nothing.
func TestRestoreAllPristineUpgradedInsert(t *testing.T) {
	const id = "0badc0de-0000-4000-8000-000000000033"
	const insID = "b00000a1"
	agents, file, orig := prunedUpgradeSession(t, id)
	ins := `{"type":"message","id":"` + insID + `","parentId":"a2","timestamp":"2026-02-18T09:00:10.000Z","message":{"role":"user","content":[{"type":"text","text":"inserted by a repair"}]}}`
	rows := repairUpgradeSession(t, agents, file, id, restore.Repair{Op: "doctor_fix",
		Inserts: []restore.Insert{{AfterLine: 10, AfterID: "a2", Entries: [][]byte{[]byte(ins)}, IDs: []string{insID}}}})
	if len(rows) != 11 || rows[10] != ins || !strings.Contains(rows[8], "[[extracted-") {
		t.Fatalf("the JSONL era: %d rows\n%.200s", len(rows), rows[8])
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	db := testcorpus.WriteStore(t, agents, "main", testcorpus.StoreSession{ID: id, Rows: rows})

	code, out, errs := run(t, "restore", "main/"+id, "--all", "--pristine", "--json", "--agents-dir", agents)
	events := storeEvents(t, db, id)
	if code != 1 || len(events) != 11 || events[8] != orig[8] || events[10] != ins {
		t.Fatalf("restore --all --pristine: exit %d, %d rows, r2's value back: %v, inserted row kept: %v\n%s\n%s",
			code, len(events), events[8] == orig[8], len(events) == 11 && events[10] == ins, out, errs)
	}
	var res restore.AllResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !res.Applied || res.LinesRemoved != 0 || res.Remaining.Inserted != 1 || res.Remaining.RefusedUndos != 1 || res.Remaining.Placeholders != 0 {
		t.Fatalf("restore --all --pristine: %+v\n%s", res.Remaining, out)
	}
	found := false
	for _, f := range res.Refused {
		if f.EntryID == insID && f.Key == "" && f.Line == 11 && strings.Contains(f.Reason, "removes rows") && f.How != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the inserted line is not listed as refused: %+v", res.Refused)
	}
	// The journal of the inserted line is kept: a second pass says the same.
	if code, out, _ = run(t, "restore", "main/"+id, "--all", "--pristine", "--json", "--agents-dir", agents); code != 1 || !strings.Contains(out, `"entry_id": "`+insID+`"`) {
		t.Fatalf("second restore --all --pristine: exit %d\n%s", code, out)
	}
}

// prunedUpgradeSession writes the JSONL-era session id (upgradeLines) into
// a new agents dir and prunes it with every value extractable; it returns
// the agents dir, the transcript and its original lines.
func prunedUpgradeSession(t *testing.T, id string) (agents, file string, orig []string) {
	t.Helper()
	agents = filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	orig = upgradeLines(id)
	file = filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(orig, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Default()
	c.Enabled, c.IdleSeconds, c.MinValueLength, c.KeepRecent, c.MinSavingTokens, c.AgeThresholdHours = true, 0, 500, 0, 0, 0
	if err := config.Save(agents, c); err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), agents, backend.FromConfig(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return agents, file, orig
}

// repairUpgradeSession applies the repair r (its Base set here) to the
// pruned session id of agents, as doctor --fix does, and returns the
// transcript's lines afterwards.
func repairUpgradeSession(t *testing.T, agents, file, id string, r restore.Repair) []string {
	t.Helper()
	ctx := context.Background()
	c, err := config.Load(ctx, agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(ctx, agents, backend.FromConfig(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref := bs.SessionRef{Backend: bs.BackendJSONL, Agent: "main", ID: id, Path: file}
	tr, err := session.Open(ctx, file, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Base = tr.Version()
	if err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Restorer().ApplyRepair(ctx, ref, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}
