package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// TestCountsAgree runs the commands a user runs on one session and checks
// that every count they show agrees: prune --dry-run announces exactly
// what prune then writes, verify lists it all as intact, and after the
// side store is damaged (one side file deleted, two corrupted, one value's
// bytes edited) verify and restore --all report the same lost
// placeholders, one each, with the same entries, paths and reasons.
func TestCountsAgree(t *testing.T) {
	src := testcorpus.RealOrSelfMade(t, "1f979e30-12ad-4b66-80ac-bcbb53b985ff.jsonl", "v3-openclaw.jsonl")
	agents, path := testcorpus.Copy(t, src, "s1")
	saveConfig(t, agents, func(c *config.Config) {
		c.Enabled, c.IdleSeconds, c.AgeThresholdHours, c.MinValueLength, c.MinSavingTokens = true, 0, 0, 200, 0
		c.TriggerTypes = config.TriggerTypes()
	})
	type counts struct {
		Status string `json:"status"`
		Result struct {
			Entries    int   `json:"entries"`
			Values     int   `json:"values"`
			BytesSaved int64 `json:"bytes_saved"`
			Details    []struct {
				ID   string   `json:"entry_id"`
				Keys []string `json:"keys"`
			} `json:"details"`
		} `json:"result"`
	}
	prune := func(args ...string) counts {
		t.Helper()
		code, out, errs := run(t, append([]string{"prune", "--agents-dir", agents, "--json"}, args...)...)
		wantCode(t, code, 0, out, errs)
		var rep struct {
			Sessions []counts `json:"sessions"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Sessions) != 1 {
			t.Fatalf("prune %v: %v\n%s", args, err, out)
		}
		return rep.Sessions[0]
	}
	dry := prune("--dry-run")
	real := prune()
	if dry.Status != "would_extract" || real.Status != "extracted" ||
		dry.Result.Entries != real.Result.Entries || dry.Result.Values != real.Result.Values || dry.Result.BytesSaved != real.Result.BytesSaved {
		t.Fatalf("dry run %+v, real pass %+v", dry.Result, real.Result)
	}

	type problem struct {
		EntryID string `json:"entry_id"`
		Path    string `json:"path"`
		Kind    string `json:"kind"`
	}
	verify := func(wantExit int) (placeholders, verified int, problems []string) {
		t.Helper()
		code, out, errs := run(t, "verify", "--agents-dir", agents, "--json")
		wantCode(t, code, wantExit, out, errs)
		var v struct {
			Placeholders int `json:"placeholders"`
			Verified     int `json:"verified"`
			Reports      []struct {
				Problems []problem `json:"problems"`
			} `json:"reports"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Reports) != 1 {
			t.Fatalf("verify: %v\n%s", err, out)
		}
		for _, p := range v.Reports[0].Problems {
			problems = append(problems, fmt.Sprintf("%s %s %s", p.EntryID, p.Path, p.Kind))
		}
		return v.Placeholders, v.Verified, problems
	}
	ph, ok, problems := verify(0)
	if ph != real.Result.Values || ok != ph || len(problems) != 0 {
		t.Fatalf("verify after the pass: %d placeholders, %d verified, %v; the pass wrote %d values", ph, ok, problems, real.Result.Values)
	}

	// Damage the side store.
	var multi, single []int
	for i, d := range real.Result.Details {
		if len(d.Keys) >= 2 {
			multi = append(multi, i)
		} else {
			single = append(single, i)
		}
	}
	if len(multi) < 2 || len(single) < 2 {
		t.Fatalf("fixture: %d entries with several values, %d with one", len(multi), len(single))
	}
	dir := sidetest.Dir(path, "s1")
	det := real.Result.Details
	var want []string
	if err := sidetest.RemoveRecord(dir, det[multi[0]].ID); err != nil {
		t.Fatal(err)
	}
	for _, k := range det[multi[0]].Keys {
		want = append(want, det[multi[0]].ID+" "+k+" missing_side_file")
	}
	for _, i := range single[:2] {
		if _, err := sidetest.CorruptRecord(dir, det[i].ID); err != nil {
			t.Fatal(err)
		}
		want = append(want, det[i].ID+" "+det[i].Keys[0]+" corrupt_side_file")
	}
	rec, _, err := sidetest.ReadRecord(dir, det[multi[1]].ID)
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(rec.Values[0].Raw)
	raw[1] ^= 1
	rec.Values[0].Raw = raw
	if err := sidetest.WriteRecord(dir, rec); err != nil {
		t.Fatal(err)
	}
	want = append(want, det[multi[1]].ID+" "+rec.Values[0].Path+" hash_mismatch")
	slices.Sort(want)

	ph2, ok2, problems := verify(1)
	slices.Sort(problems)
	if ph2 != ph || ok2 != ph-len(want) || !slices.Equal(problems, want) {
		t.Fatalf("verify after the damage: %d placeholders, %d verified, problems\n%v\nwant\n%v", ph2, ok2, problems, want)
	}
	code, out, errs := run(t, "restore", "s1", "--all", "--agents-dir", agents, "--json")
	wantCode(t, code, 1, out, errs)
	var all struct {
		Values   int       `json:"values"`
		Lost     []problem `json:"lost"`
		Pristine bool      `json:"pristine"`
	}
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("restore --all: %v\n%s", err, out)
	}
	var lost []string
	for _, p := range all.Lost {
		lost = append(lost, fmt.Sprintf("%s %s %s", p.EntryID, p.Path, p.Kind))
	}
	slices.Sort(lost)
	if !slices.Equal(lost, want) || all.Values != ok2 || all.Pristine {
		t.Fatalf("restore --all: %d values back (verify said %d intact), pristine %v, lost\n%v\nwant\n%v", all.Values, ok2, all.Pristine, lost, want)
	}
}
