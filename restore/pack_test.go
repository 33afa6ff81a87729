package restore_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestMixedSideDir: a side dir holding a pack, a tombstone pack, one of our
// old per-entry files (.json.zst) and a file of the first BrainSurgeon
// (__meta) verifies and restores completely; the pristine restore gives the
// original bytes back.
func TestMixedSideDir(t *testing.T) {
	data, _ := basic()
	legacyLine := `{"__id":"msg-1","type":"tool_result","output":"[[extracted]]","_extractable":3}` + "\n"
	dir, ref := extracted(t, data)
	side := sidetest.Dir(ref.Path, ref.ID)
	// r1 moves from the pack to an old per-entry file.
	rec, _, err := sidetest.ReadRecord(side, "r1")
	if err != nil {
		t.Fatal(err)
	}
	js, err := extract.EncodeRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := sidetest.RemoveRecord(side, "r1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	enc, _ := zstd.NewWriter(nil)
	if err := os.WriteFile(filepath.Join(side, "r1.json.zst"), enc.EncodeAll(js, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	legacy := `{"output": "line one\nline two", "__meta": {"extracted_at": "2026-02-19T10:00:00.000Z", "trigger_type": "tool_result"}}`
	if err := os.WriteFile(filepath.Join(side, "msg-1.json"), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(ref.Path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(legacyLine)
	f.Close()
	ents, _ := os.ReadDir(side)
	var kinds []string
	for _, e := range ents {
		kinds = append(kinds, e.Name())
	}
	if len(ents) != 4 || sidetest.Location(side, "a1") == "" || !strings.HasSuffix(sidetest.Location(side, "a1"), ".bszst") ||
		!strings.HasSuffix(sidetest.Location(side, "r1"), "r1.json.zst") {
		t.Fatalf("side dir %v; a1 at %s, r1 at %s", kinds, sidetest.Location(side, "a1"), sidetest.Location(side, "r1"))
	}
	st := sidetest.Store(dir)
	rep, err := restore.Verify(ctx(), st, sidedir.New(st), ref)
	if err != nil || !rep.OK() || rep.Verified != 2 || rep.Placeholders != 2 || rep.SideFiles != 3 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	// Verify does not count the flat legacy line in a pi transcript as a
	// placeholder (its record shows as an orphan); RestoreAll restores it.
	if lr, _, err := sidetest.ReadRecord(side, "msg-1"); err != nil || !lr.Legacy || len(lr.Values) != 1 {
		t.Fatalf("legacy record: %+v %v", lr, err)
	}
	if _, err := newRestorer(dir).RestoreAll(ctx(), ref, true); err != nil {
		t.Fatal(err)
	}
	got := read(t, ref.Path)
	restored := `{"__id":"msg-1","type":"tool_result","output":"line one\nline two","_extractable":3}` + "\n"
	if want := append(bytes.Clone(data), restored...); !bytes.Equal(got, want) {
		t.Fatalf("pristine: %s", firstDiff(want, got))
	}
}

// TestVerifyNamesPack: a damaged frame in a pack is a corrupt record of its
// entry only, and the report names the pack and the entry.
func TestVerifyNamesPack(t *testing.T) {
	data, _ := basic()
	dir, ref := extracted(t, data)
	side := sidetest.Dir(ref.Path, ref.ID)
	pack, err := sidetest.CorruptRecord(side, "a1")
	if err != nil {
		t.Fatal(err)
	}
	st := sidetest.Store(dir)
	rep, err := restore.Verify(ctx(), st, sidedir.New(st), ref)
	if err != nil || rep.OK() || len(rep.Problems) == 0 {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	for _, p := range rep.Problems {
		if p.EntryID != "a1" || p.Kind != restore.ProblemCorruptFile || !strings.Contains(p.Detail, filepath.Base(pack)) {
			t.Errorf("problem %+v, want a corrupt record of a1 naming %s", p, pack)
		}
	}
	if rep.Verified != rep.Placeholders-len(rep.Problems) || rep.Verified == 0 {
		t.Errorf("verified %d of %d", rep.Verified, rep.Placeholders)
	}
	res, err := newRestorer(dir).Restore(ctx(), ref, "r1", nil, restore.RestoreOptions{})
	if err != nil || !res.Restored {
		t.Fatalf("r1 beside the damaged frame: %+v %v", res, err)
	}
}
