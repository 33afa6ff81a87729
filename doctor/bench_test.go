package doctor_test

import (
	"bytes"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// BenchmarkDiagnose measures the diagnosis of one 10 MB synthetic
// transcript of realistic density (tool calls and results, thinking; no
// placeholders, so the side store is not read).
func BenchmarkDiagnose(b *testing.B) {
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: 10 << 20, Density: synth.DensityReal}); err != nil {
		b.Fatal(err)
	}
	e := install(b, "main", "bench", buf.Bytes())
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		rep, err := e.doc.Diagnose(ctx(), e.ref)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Health == "" {
			b.Fatal("no health")
		}
	}
}
