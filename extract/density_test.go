package extract_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
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
	dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "d1.jsonl")
	var buf bytes.Buffer
	gs, err := synth.Generate(&buf, synth.Options{Size: size, Density: synth.DensityReal})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(filepath.Dir(filepath.Dir(dir)))
	st.Writer.Quiet = 0
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	x := &extract.Extractor{Policy: p, Store: st, Side: extract.NewDirStore(st)}
	res, err := x.Run(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	per100MB := float64(res.Entries) * 100e6 / float64(gs.Bytes)
	t.Logf("%d bytes, %d turns: %d entries extracted, %.0f per 100 MB", gs.Bytes, gs.Turns, res.Entries, per100MB)
	if per100MB < 17_000 || per100MB > 23_000 {
		t.Fatalf("%.0f extracted entries per 100 MB, want about 20,000", per100MB)
	}
}
