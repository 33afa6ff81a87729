package tokens_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// BenchmarkO200k counts the tokens of a generated transcript's bytes (JSON
// lines with prose, tool output and base64), 1 MB per operation.
func BenchmarkO200k(b *testing.B) {
	var buf bytes.Buffer
	if _, err := synth.Generate(&buf, synth.Options{Size: 1 << 20, Density: synth.DensityReal}); err != nil {
		b.Fatal(err)
	}
	text := buf.Bytes()
	tok, err := tokens.O200k()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		tok.Tokens(text)
	}
}

// BenchmarkLearn learns the model of a generated 20 MB transcript with
// each base tokenizer; the transcript is opened (indexed) once. Reading
// and measuring the lines is the work: the fit itself is linear in the
// number of turns and cheap.
func BenchmarkLearn(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	st, err := synth.Generate(f, synth.Options{Size: 20 << 20, Density: synth.DensityReal})
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tr, err := session.Open(ctx, p, bs.SessionRef{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	o, err := tokens.O200k()
	if err != nil {
		b.Fatal(err)
	}
	for _, base := range []tokens.Tokenizer{tokens.CharsPer4{}, o} {
		b.Run("base="+base.Name(), func(b *testing.B) {
			b.SetBytes(st.Bytes)
			for b.Loop() {
				if _, err := tokens.Learn(ctx, tr, base); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
