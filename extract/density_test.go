package extract_test

import (
	"context"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestSynthRealDensity checks that synth.DensityReal gives what the
// corpus gives: with the default policy, about 20,000 extracted entries
// per 100 MB (the anuo transcript: 582 from 2.8 MB), all of 500–5,000
// bytes.
func TestSynthRealDensity(t *testing.T) {
	size := int64(8 << 20)
	if testing.Short() {
		size = 2 << 20
	}
	ref, st, orig := generated(t, size, "")
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st)}
	res, err := x.Run(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	per100MB := float64(res.Entries) * 100e6 / float64(len(orig))
	t.Logf("%d bytes: %d entries extracted, %.0f per 100 MB", len(orig), res.Entries, per100MB)
	if per100MB < 17_000 || per100MB > 23_000 {
		t.Fatalf("%.0f extracted entries per 100 MB, want about 20,000", per100MB)
	}
}
