package restore_test

import (
	"bytes"
	"fmt"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/atonce"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// roundTripConfigs are the extraction settings of the corpus round trips:
// every trigger type, keep_recent 0, no age threshold, no minimum saving.
// sample is how many entries (spread over the file) are restored one by
// one through Restore; 0 means every extracted entry.
var roundTripConfigs = []struct {
	name         string
	minLen, prev int
	sample       int
	reExtract    bool
}{
	{name: "MinLen1", minLen: 1, sample: 10},
	{name: "MinLen200Preview16", minLen: 200, prev: 16, sample: 10},
	{name: "MinLen2000", minLen: 2000, sample: 0, reExtract: true},
}

// TestCorpusRoundTrip extracts every corpus transcript as hard as the
// policy allows, restores entries one by one through Restore (each value
// must come back byte-identical, in the result and in the file), then the
// rest with RestoreAll, and finally RestoreAll pristine: the file must be
// byte-identical to the original (sha256).
func TestCorpusRoundTrip(t *testing.T) {
	// Each case has its own dir; four at a time, the fsyncs of one overlap
	// the work of another.
	var cases []atonce.Case
	for _, f := range corpusFiles(t) {
		orig := read(t, f)
		for _, cfg := range roundTripConfigs {
			cases = append(cases, atonce.Case{Name: corpusName(f) + "/" + cfg.name, Run: func(t *testing.T) {
				dir, ref := install(t, "s1", orig)
				p := allPolicy(cfg.minLen)
				p.PreviewChars = cfg.prev
				xr, err := extractor(p).Run(ctx(), ref)
				if err != nil {
					t.Fatal(err)
				}
				if xr.Entries == 0 && cfg.minLen == 1 && xr.Counts[extract.CodeNoID] == 0 {
					t.Fatalf("nothing extracted: %+v", xr)
				}
				origLines := linesByID(orig)
				r := newRestorer(dir)
				chosen := sampleEntries(xr.Details, cfg.sample)
				for _, d := range chosen {
					res, err := r.Restore(ctx(), ref, d.ID, nil, restore.RestoreOptions{})
					if err != nil {
						t.Fatalf("restore %s: %v", d.ID, err)
					}
					if !res.Restored || !res.Applied || res.Queued {
						t.Fatalf("restore %s: %+v", d.ID, res)
					}
					origLine := origLines[d.ID]
					for _, k := range d.Keys {
						if res.SizesBytes[k] != len(valueAt(t, origLine, k)) {
							t.Fatalf("restore %s: size of %s = %d, want %d", d.ID, k, res.SizesBytes[k], len(valueAt(t, origLine, k)))
						}
					}
				}
				curLines := linesByID(read(t, ref.Path))
				for _, d := range chosen {
					checkValues(t, origLines, curLines, d)
				}
				if cfg.reExtract {
					// Restored entries are extracted again (KeepAfterRestore 0):
					// the journal must survive the side record's rewrite.
					if _, err := extractor(p).Run(ctx(), ref); err != nil {
						t.Fatal(err)
					}
				}
				all, err := r.RestoreAll(ctx(), ref, false)
				if err != nil {
					t.Fatal(err)
				}
				if len(all.Lost) > 0 {
					t.Fatalf("lost: %q", all.Lost)
				}
				curLines = linesByID(read(t, ref.Path))
				for _, d := range xr.Details {
					checkValues(t, origLines, curLines, d)
				}
				pr, err := r.RestoreAll(ctx(), ref, true)
				if err != nil {
					t.Fatal(err)
				}
				if got := read(t, ref.Path); sum(got) != sum(orig) {
					t.Fatalf("pristine restore is not byte-identical (%d vs %d bytes): %s; result %+v", len(got), len(orig), firstDiff(orig, got), pr)
				}
			}})
		}
	}
	atonce.Run(t, 4, cases)
}

// sampleEntries picks n entries spread evenly (all when n is 0 or more
// than there are).
func sampleEntries(all []extract.EntryResult, n int) []extract.EntryResult {
	if n == 0 || len(all) <= n {
		return all
	}
	out := make([]extract.EntryResult, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i*len(all)/n])
	}
	return out
}

// checkValues compares every extracted value of an entry with the
// original line's bytes.
func checkValues(t *testing.T, orig, cur map[string][]byte, d extract.EntryResult) {
	t.Helper()
	o, c := orig[d.ID], cur[d.ID]
	for _, k := range d.Keys {
		if a, b := valueAt(t, o, k), valueAt(t, c, k); a != b {
			t.Fatalf("entry %s %s: restored %.80q, want %.80q", d.ID, k, b, a)
		}
	}
}

// linesByID maps each entry id to its (last) raw line.
func linesByID(data []byte) map[string][]byte {
	out := map[string][]byte{}
	r := session.NewReader(bytes.NewReader(data))
	for r.Next() {
		if e := r.Entry(); e.Kind == bs.KindEntry && e.ID != "" {
			out[e.ID] = bytes.Clone(r.Raw())
		}
	}
	return out
}

func firstDiff(a, b []byte) string {
	ra, rb := session.NewReader(bytes.NewReader(a)), session.NewReader(bytes.NewReader(b))
	for ra.Next() {
		if !rb.Next() {
			return fmt.Sprintf("line %d missing", ra.Line())
		}
		if !bytes.Equal(ra.Raw(), rb.Raw()) {
			e := ra.Entry()
			return fmt.Sprintf("line %d (entry %s, %s) differs:\n%.400s\n%.400s\n%s", ra.Line(), e.ID, e.Kind, ra.Raw(), rb.Raw(), diffSpan(ra.Raw(), rb.Raw()))
		}
	}
	return "extra lines"
}

func diffSpan(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-60)
	return fmt.Sprintf("at byte %d: %q vs %q", i, a[lo:min(len(a), i+60)], b[lo:min(len(b), i+60)])
}
