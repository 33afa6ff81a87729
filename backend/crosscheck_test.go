package backend_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// crossSource is the corpus transcript of the cross-checks: many
// extractable values, several entries with more than one.
const crossSource = "1f979e30-12ad-4b66-80ac-bcbb53b985ff.jsonl"

// crossSelfMade stands in for crossSource without the shared directory.
const crossSelfMade = "v3-openclaw.jsonl"

// crossConfig extracts every trigger type from values of 200 bytes or more,
// with no quiet period and no age threshold.
func crossConfig() config.Config {
	cfg := config.Default()
	cfg.Enabled = true
	cfg.IdleSeconds = 0
	cfg.AgeThresholdHours = 0
	cfg.MinValueLength = 200
	cfg.MinSavingTokens = 0
	cfg.TriggerTypes = config.TriggerTypes()
	return cfg
}

// crossFixture copies the source into a fresh agents dir and opens it.
func crossFixture(t *testing.T, cfg config.Config) (*backend.Set, bs.SessionRef) {
	t.Helper()
	src := testcorpus.RealOrSelfMade(t, crossSource, crossSelfMade)
	agents, path := testcorpus.Copy(t, src, "s1")
	set, err := backend.Open(context.Background(), agents, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return set, ref
}

// pass runs one pass over ref and returns its session report.
func pass(t *testing.T, set *backend.Set, cfg config.Config, ref bs.SessionRef, dryRun bool) prune.SessionReport {
	t.Helper()
	p := prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
	p.DryRun = dryRun
	rep, err := p.Run(context.Background(), []bs.SessionRef{ref})
	if err != nil || len(rep.Sessions) != 1 {
		t.Fatalf("pass (dry run %v): %v, %+v", dryRun, err, rep)
	}
	return rep.Sessions[0]
}

// lostKey is what must agree between the reports of a lost placeholder.
func lostKey(p restore.Problem) string {
	return fmt.Sprintf("%s %d %s %s", p.EntryID, p.Line, p.Path, p.Kind)
}

func lostKeys(ps []restore.Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = lostKey(p)
	}
	return out
}

// TestCrossCheckLost damages an extracted session — one side file deleted
// (an entry with two placeholders or more), two corrupted, one value's raw
// bytes edited so that its hash mismatches (in an entry whose other values
// are intact) — and checks that Verify, GetContext and RestoreAll report
// the same lost placeholders, one per placeholder, with the same entries,
// lines, paths and kinds.
func TestCrossCheckLost(t *testing.T) {
	ctx := context.Background()
	cfg := crossConfig()
	set, ref := crossFixture(t, cfg)
	sr := pass(t, set, cfg, ref, false)
	if sr.Status != prune.StatusExtracted || sr.Result.Entries < 6 {
		t.Fatalf("extraction: %+v", sr)
	}
	var multi []extract.EntryResult
	var single []extract.EntryResult
	for _, d := range sr.Result.Details {
		if len(d.Keys) >= 2 {
			multi = append(multi, d)
		} else {
			single = append(single, d)
		}
	}
	if len(multi) < 2 || len(single) < 2 {
		t.Fatalf("fixture: %d entries with several values, %d with one; want 2 of each", len(multi), len(single))
	}
	deleted, mismatched, corrupt := multi[0], multi[1], single[:2]
	dir := sidetest.Dir(ref.Path, ref.ID)
	want := map[string]bool{}
	expect := func(d extract.EntryResult, kind string, keys ...string) {
		for _, k := range keys {
			want[fmt.Sprintf("%s %d %s %s", d.ID, d.Line, k, kind)] = true
		}
	}

	if err := sidetest.RemoveRecord(dir, deleted.ID); err != nil {
		t.Fatal(err)
	}
	expect(deleted, restore.ProblemMissingFile, deleted.Keys...)
	for _, d := range corrupt {
		if _, err := sidetest.CorruptRecord(dir, d.ID); err != nil {
			t.Fatal(err)
		}
		expect(d, restore.ProblemCorruptFile, d.Keys...)
	}
	rec, _, err := sidetest.ReadRecord(dir, mismatched.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(rec.Values[0].Raw)
	if rec.Values[0].RawBase64 != "" || len(raw) < 3 {
		t.Fatalf("fixture: value %s of %s is not plain raw JSON", rec.Values[0].Path, mismatched.ID)
	}
	raw[1] ^= 0x01 // one byte changed, the stored sha256 stays
	rec.Values[0].Raw = raw
	if err := sidetest.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	expect(mismatched, restore.ProblemHashMismatch, rec.Values[0].Path)
	wantKeys := make([]string, 0, len(want))
	for k := range want {
		wantKeys = append(wantKeys, k)
	}
	slices.Sort(wantKeys)

	rep, err := restore.Verify(ctx, set.Store, set.Side, ref)
	if err != nil {
		t.Fatal(err)
	}
	r := restore.New(set.Store, set.Side, set.StateDir)
	cx, err := r.GetContext(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	all, err := r.RestoreAll(ctx, ref, false)
	if err != nil {
		t.Fatal(err)
	}
	after, err := restore.Verify(ctx, set.Store, set.Side, ref)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d values extracted, %d placeholders lost: %s", sr.Result.Values, len(wantKeys), strings.Join(wantKeys, "; "))
	for _, tt := range []struct {
		name string
		lost []restore.Problem
		n    int
	}{
		{"Verify", rep.Problems, len(rep.Problems)},
		{"GetContext", cx.Lost, cx.LostValues},
		{"RestoreAll", all.Lost, all.Remaining.Placeholders},
		{"VerifyAfterRestoreAll", after.Problems, after.Placeholders},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := lostKeys(tt.lost)
			slices.Sort(got)
			if !slices.Equal(got, wantKeys) || tt.n != len(wantKeys) {
				t.Fatalf("%d lost (count %d):\n%s\nwant %d:\n%s", len(got), tt.n, strings.Join(got, "\n"), len(wantKeys), strings.Join(wantKeys, "\n"))
			}
			if !slices.Equal(lostKeys(tt.lost), lostKeys(rep.Problems)) {
				t.Fatalf("not in Verify's order:\n%s", strings.Join(lostKeys(tt.lost), "\n"))
			}
		})
	}
	if all.Pristine || all.Values != sr.Result.Values-len(wantKeys) {
		t.Fatalf("restore all: pristine %v, %d values back; want false, %d", all.Pristine, all.Values, sr.Result.Values-len(wantKeys))
	}
}

// TestCrossCheckPass checks that a dry run reports what the real pass then
// writes, and that a pass below min_saving_tokens is "unchanged" with
// nothing written, dry or not.
func TestCrossCheckPass(t *testing.T) {
	ctx := context.Background()
	below := crossConfig()
	below.MinSavingTokens = 1 << 30
	for _, tt := range []struct {
		name      string
		cfg       config.Config
		dryStatus string
		status    string
		writes    bool
	}{
		{"Extracts", crossConfig(), prune.StatusWouldExtract, prune.StatusExtracted, true},
		{"BelowMinSaving", below, prune.StatusUnchanged, prune.StatusUnchanged, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, ref := crossFixture(t, tt.cfg)
			orig, err := os.ReadFile(ref.Path)
			if err != nil {
				t.Fatal(err)
			}
			dry := pass(t, set, tt.cfg, ref, true)
			if now, _ := os.ReadFile(ref.Path); string(now) != string(orig) {
				t.Fatal("the dry run changed the transcript")
			}
			real := pass(t, set, tt.cfg, ref, false)
			if dry.Status != tt.dryStatus || real.Status != tt.status {
				t.Fatalf("statuses %s, %s (%s; %s); want %s, %s", dry.Status, real.Status, dry.Note, real.Note, tt.dryStatus, tt.status)
			}
			d, w := dry.Result, real.Result
			if d.Entries != w.Entries || d.Values != w.Values || d.BytesSaved != w.BytesSaved || d.BytesAfter != w.BytesAfter {
				t.Fatalf("dry run %d entries, %d values, %d bytes saved, %d after; the pass %d, %d, %d, %d",
					d.Entries, d.Values, d.BytesSaved, d.BytesAfter, w.Entries, w.Values, w.BytesSaved, w.BytesAfter)
			}
			fi, err := os.Stat(ref.Path)
			if err != nil {
				t.Fatal(err)
			}
			if w.Written != tt.writes || (w.Entries > 0) != tt.writes || w.BytesAfter != fi.Size() {
				t.Fatalf("written %v, %d entries, %d bytes after; file %d bytes; want written %v", w.Written, w.Entries, w.BytesAfter, fi.Size(), tt.writes)
			}
			if !tt.writes {
				if !strings.Contains(real.Note, "below min_saving_tokens") || d.Planned.Entries == 0 || d.Planned != w.Planned {
					t.Fatalf("notes %q, %q; planned %+v, %+v", dry.Note, real.Note, d.Planned, w.Planned)
				}
				return
			}
			rep, err := restore.Verify(ctx, set.Store, set.Side, ref)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Placeholders != w.Values || rep.Entries != w.Entries || !rep.OK() {
				t.Fatalf("verify: %d placeholders in %d entries, problems %v; the pass wrote %d values in %d entries",
					rep.Placeholders, rep.Entries, rep.Problems, w.Values, w.Entries)
			}
		})
	}
}

// TestRestoreAllNeverPruned: a session BrainSurgeon never touched is
// pristine after a RestoreAll, with or without the pristine mode.
func TestRestoreAllNeverPruned(t *testing.T) {
	for _, pristine := range []bool{false, true} {
		t.Run(fmt.Sprintf("Pristine%v", pristine), func(t *testing.T) {
			set, ref := crossFixture(t, crossConfig())
			all, err := restore.New(set.Store, set.Side, set.StateDir).RestoreAll(context.Background(), ref, pristine)
			if err != nil {
				t.Fatal(err)
			}
			if !all.Pristine || all.Applied || len(all.Lost) != 0 || all.PristineMode != pristine {
				t.Fatalf("%+v", all)
			}
		})
	}
}
