package restore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// verifyPolicy extracts every value of minLen bytes or more, anywhere.
func verifyPolicy(minLen, preview int) extract.Policy {
	return extract.Policy{Enabled: true, KeepRecent: 0, MinValueLength: minLen, Triggers: bs.TriggerTypes(),
		AgeThreshold: 0, MinSavingTokens: 0, PreviewChars: preview}
}

// verifyExtract copies src into a fresh agents dir and extracts it. Side
// files are never compressed, so tests can edit them.
func verifyExtract(t *testing.T, src string, p extract.Policy) (bs.SessionRef, *extract.Result) {
	t.Helper()
	_, path := testcorpus.Copy(t, src, "s1")
	ref := bs.SessionRef{Agent: "main", ID: "s1", Path: path}
	st := sidetest.Store("")
	x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st)}
	res, err := x.Run(context.Background(), ref)
	if err != nil {
		t.Fatalf("extract: %v", err)
	}
	return ref, res
}

func mustVerify(t *testing.T, ref bs.SessionRef) *restore.VerifyReport {
	t.Helper()
	st := sidetest.Store("")
	rep, err := restore.Verify(context.Background(), st, sidedir.New(st), ref)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

// TestVerifyCorpusClean extracts every corpus transcript (every trigger
// type, with and without previews) and checks that Verify finds every
// placeholder intact and nothing orphaned.
func TestVerifyCorpusClean(t *testing.T) {
	for i, f := range corpusFiles(t) {
		preview := 0
		if i%2 == 1 {
			preview = 16
		}
		t.Run(testcorpus.Name(f), func(t *testing.T) {
			ref, xr := verifyExtract(t, f, verifyPolicy(200, preview))
			rep := mustVerify(t, ref)
			if !rep.OK() || len(rep.Orphans) > 0 {
				t.Fatalf("problems %+v\norphans %+v", rep.Problems, rep.Orphans)
			}
			if rep.Placeholders != xr.Values || rep.Verified != xr.Values || rep.Entries != xr.Entries {
				t.Fatalf("placeholders %d, verified %d, entries %d; extracted %d values of %d entries",
					rep.Placeholders, rep.Verified, rep.Entries, xr.Values, xr.Entries)
			}
			if xr.Entries > 0 && (rep.SideFiles != xr.Entries || rep.Values != xr.Values) {
				t.Fatalf("side files %d, values %d; want %d, %d", rep.SideFiles, rep.Values, xr.Entries, xr.Values)
			}
		})
	}
}

// verifySource is the corpus transcript of the damage tests.
func verifySource(t *testing.T) string {
	t.Helper()
	return testcorpus.RealOrSelfMade(t, "1f979e30-12ad-4b66-80ac-bcbb53b985ff.jsonl", "v3-openclaw.jsonl")
}

// damaged returns a freshly extracted copy of the source with a clean
// report, and the details of two extracted entries, one of them with
// several values when there is one.
func damaged(t *testing.T) (ref bs.SessionRef, dir string, one, multi extract.EntryResult) {
	t.Helper()
	ref, xr := verifyExtract(t, verifySource(t), verifyPolicy(200, 0))
	if xr.Entries < 3 {
		t.Fatalf("only %d entries extracted", xr.Entries)
	}
	if rep := mustVerify(t, ref); !rep.OK() || len(rep.Orphans) > 0 || rep.Verified != xr.Values {
		t.Fatalf("not clean before damage: %+v", rep)
	}
	one = xr.Details[0]
	multi = xr.Details[len(xr.Details)-1]
	for _, d := range xr.Details[1:] {
		if len(d.Keys) > 1 {
			multi = d
			break
		}
	}
	return ref, sidetest.Dir(ref.Path, ref.ID), one, multi
}

func problemsOf(rep *restore.VerifyReport, id string) []restore.VerifyProblem {
	var out []restore.VerifyProblem
	for _, p := range rep.Problems {
		if p.EntryID == id {
			out = append(out, p)
		}
	}
	return out
}

func TestVerifyMissingSideFile(t *testing.T) {
	ref, dir, one, _ := damaged(t)
	if err := sidetest.RemoveRecord(dir, one.ID); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, ref)
	ps := problemsOf(rep, one.ID)
	if rep.OK() || len(ps) != len(one.Keys) || len(rep.Problems) != len(ps) {
		t.Fatalf("problems %+v, want %d for entry %s", rep.Problems, len(one.Keys), one.ID)
	}
	for i, p := range ps {
		if p.Kind != restore.ProblemMissingFile || p.Session != "main/s1" || p.Path != one.Keys[i] || p.Line != one.Line {
			t.Errorf("problem %+v, want %s at %s line %d", p, restore.ProblemMissingFile, one.Keys[i], one.Line)
		}
	}
	if rep.Verified != rep.Placeholders-len(one.Keys) {
		t.Errorf("verified %d of %d", rep.Verified, rep.Placeholders)
	}
}

func TestVerifyHashMismatch(t *testing.T) {
	ref, dir, one, _ := damaged(t)
	rec, _, err := sidetest.ReadRecord(dir, one.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(rec.Values[0].Raw)
	// Flip one letter inside the value; the stored hash stays.
	for i := 1; i < len(raw)-1; i++ {
		if raw[i] >= 'a' && raw[i] <= 'y' {
			raw[i]++
			break
		}
	}
	rec.Values[0].Raw = raw
	if err := sidetest.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, ref)
	if len(rep.Problems) != 1 {
		t.Fatalf("problems %+v, want one", rep.Problems)
	}
	p := rep.Problems[0]
	if p.Kind != restore.ProblemHashMismatch || p.EntryID != one.ID || p.Path != rec.Values[0].Path || !strings.Contains(p.Detail, "sha256") {
		t.Fatalf("problem %+v", p)
	}
}

func TestVerifyCorruptFileAndMissingValue(t *testing.T) {
	ref, dir, one, multi := damaged(t)
	if len(multi.Keys) < 2 || multi.ID == one.ID {
		t.Fatalf("fixture: no entry with several values besides %s", one.ID)
	}
	if _, err := sidetest.CorruptRecord(dir, one.ID); err != nil {
		t.Fatal(err)
	}
	rec, _, err := sidetest.ReadRecord(dir, multi.ID)
	if err != nil {
		t.Fatal(err)
	}
	dropped := rec.Values[0].Path
	rec.Values = rec.Values[1:]
	if err := sidetest.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, ref)
	kinds := map[string]int{}
	for _, p := range rep.Problems {
		kinds[p.Kind]++
		if p.Kind == restore.ProblemMissingValue && (p.EntryID != multi.ID || p.Path != dropped) {
			t.Errorf("missing value %+v, want %s %s", p, multi.ID, dropped)
		}
		if p.Kind == restore.ProblemCorruptFile && p.EntryID != one.ID {
			t.Errorf("corrupt file %+v, want entry %s", p, one.ID)
		}
	}
	if kinds[restore.ProblemCorruptFile] != len(one.Keys) || kinds[restore.ProblemMissingValue] != 1 || len(rep.Problems) != len(one.Keys)+1 {
		t.Fatalf("problems %+v", rep.Problems)
	}
}

func TestVerifyOrphans(t *testing.T) {
	ref, dir, one, _ := damaged(t)
	// A stray side file of an entry the transcript does not have.
	stray := &extract.Record{Session: "main/s1", EntryID: "stray-entry", TriggerType: "tool_result"}
	stray.Put(extract.StoredValue{Path: "/message/content/0/text", Trigger: "tool_result", Raw: []byte(`"x"`), Size: 3})
	if err := sidetest.WriteRecord(dir, stray); err != nil {
		t.Fatal(err)
	}
	// An entry whose values are back in the transcript.
	r := sidetest.Restorer(sidetest.Store(filepath.Dir(filepath.Dir(filepath.Dir(ref.Path)))), filepath.Dir(filepath.Dir(filepath.Dir(ref.Path))))
	if _, err := r.Restore(context.Background(), ref, one.ID, nil, restore.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, ref)
	if !rep.OK() {
		t.Fatalf("orphans are not problems: %+v", rep.Problems)
	}
	got := map[string]restore.VerifyOrphan{}
	for _, o := range rep.Orphans {
		got[o.EntryID] = o
	}
	if o, ok := got["stray-entry"]; !ok || o.Kind != restore.OrphanSideFile || !strings.Contains(o.Detail, "not in the transcript") {
		t.Errorf("stray orphan %+v in %+v", o, rep.Orphans)
	}
	if o, ok := got[one.ID]; !ok || o.Kind != restore.OrphanSideFile || !strings.Contains(o.Detail, "back in the transcript") {
		t.Errorf("restored orphan %+v in %+v", o, rep.Orphans)
	}
	if len(rep.Orphans) != 2 {
		t.Errorf("orphans %+v, want 2", rep.Orphans)
	}
}

// TestVerifyForeignPlaceholder: a value quoting another entry's
// placeholder, or holding text around its own, is not a placeholder.
func TestVerifyForeignPlaceholder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s2.jsonl")
	data := `{"type":"session","version":3,"id":"s2","timestamp":"2026-02-18T09:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-02-18T09:01:00.000Z","message":{"role":"user","content":[{"type":"text","text":"see [[extracted-b2]]"},{"type":"text","text":"[[extracted-a1]] and more"}]}}
{"type":"message","id":"b2","parentId":"a1","timestamp":"2026-02-18T09:02:00.000Z","message":{"role":"user","content":[{"type":"text","text":"abc… [[extracted-b2]]"}]}}
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, bs.SessionRef{Agent: "main", Path: path})
	if rep.Session != "main/s2" || rep.Placeholders != 1 || len(rep.Problems) != 1 {
		t.Fatalf("report %+v", rep)
	}
	if p := rep.Problems[0]; p.EntryID != "b2" || p.Path != "/message/content/0/text" || p.Kind != restore.ProblemMissingFile || p.Line != 3 {
		t.Fatalf("problem %+v", p)
	}
	if _, err := restore.Verify(context.Background(), sidetest.Store(""), sidedir.New(sidetest.Store("")), bs.SessionRef{Path: filepath.Join(dir, "nope.jsonl")}); err == nil ||
		!strings.Contains(err.Error(), "s2") {
		t.Fatalf("missing transcript: %v", err)
	}
}
