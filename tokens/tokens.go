package tokens

import (
	"fmt"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// The tokenizer names New knows.
const (
	// NameO200k is the exact o200k_base BPE tokenizer.
	NameO200k = "o200k"
	// NameCharsPer4 is one token per four bytes, OpenClaw's estimate.
	NameCharsPer4 = "chars/4"
	// NameCalibrated is the usage-calibrated tokenizer of a Model.
	NameCalibrated = "calibrated"
)

var (
	o200kOnce  sync.Once
	o200kCodec tokenizer.Codec
	o200kErr   error
)

// o200k is the Tokenizer backed by the o200k_base codec.
type o200k struct{ c tokenizer.Codec }

// Tokens returns the o200k token count of text. Invalid UTF-8 is counted
// byte by byte, as the codec does by default.
func (o o200k) Tokens(text []byte) int {
	if len(text) == 0 {
		return 0
	}
	n, err := o.c.Count(string(text))
	if err != nil {
		// The codec fails only in its strict error mode, which is not
		// ours; fall back on a byte estimate rather than report 0.
		return (len(text) + 3) / 4
	}
	return n
}

// Name returns "o200k".
func (o200k) Name() string { return NameO200k }

// O200k returns the exact o200k_base BPE tokenizer (the encoding of
// OpenAI's GPT-4o and later models). It works offline: the vocabulary is
// compiled in. The codec is built once per process; the returned Tokenizer
// is safe for concurrent use.
func O200k() (Tokenizer, error) {
	o200kOnce.Do(func() {
		o200kCodec, o200kErr = tokenizer.Get(tokenizer.O200kBase)
	})
	if o200kErr != nil {
		return nil, fmt.Errorf("o200k tokenizer: %w", o200kErr)
	}
	return o200k{o200kCodec}, nil
}

// New returns the tokenizer named name: "o200k" or "chars/4". The
// calibrated tokenizer needs a transcript's recorded usage: get it from
// [Learn] and [Model.Tokenizer]; New returns an error wrapping
// brainsurgeon.ErrInvalid for it and for any unknown name.
func New(name string) (Tokenizer, error) {
	switch name {
	case NameO200k:
		return O200k()
	case NameCharsPer4:
		return CharsPer4{}, nil
	case NameCalibrated:
		return nil, fmt.Errorf("tokenizer %q is learned from a transcript's recorded usage (use tokens.Learn), not made by name: %w", name, bs.ErrInvalid)
	}
	return nil, fmt.Errorf("unknown tokenizer %q (expected o200k or chars/4; calibrated comes from tokens.Learn): %w", name, bs.ErrInvalid)
}

// Tokenizer counts the tokens of a text as a model would.
type Tokenizer interface {
	// Tokens returns the token count of text.
	Tokens(text []byte) int
	// Name names the method ("chars/4", "o200k", "calibrated").
	Name() string
}

// CharsPer4 is the Tokenizer that counts one token per four bytes, as
// OpenClaw estimates.
type CharsPer4 struct{}

// Tokens returns len(text)/4, rounded up.
func (CharsPer4) Tokens(text []byte) int { return (len(text) + 3) / 4 }

// Name returns "chars/4".
func (CharsPer4) Name() string { return "chars/4" }

// OfBytes estimates t's count for n bytes of ordinary text, when
// only a size is known: for CharsPer4 or a nil t it computes (n+3)/4
// without asking t; for any other tokenizer it counts a fixed English
// sample with t and scales that count to n bytes, rounded to the nearest
// token. It returns 0 for n <= 0.
func OfBytes(t Tokenizer, n int64) int64 {
	if n <= 0 {
		return 0
	}
	if _, ok := t.(CharsPer4); ok || t == nil {
		return (n + 3) / 4
	}
	sample := []byte("The quick brown fox jumps over the lazy dog while the agent reads a file. ")
	per := float64(t.Tokens(sample)) / float64(len(sample))
	return int64(float64(n)*per + 0.5)
}
