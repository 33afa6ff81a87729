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
func O200k() (bs.Tokenizer, error) {
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
func New(name string) (bs.Tokenizer, error) {
	switch name {
	case NameO200k:
		return O200k()
	case NameCharsPer4:
		return bs.CharsPer4{}, nil
	case NameCalibrated:
		return nil, fmt.Errorf("tokenizer %q is learned from a transcript's recorded usage (use tokens.Learn), not made by name: %w", name, bs.ErrInvalid)
	}
	return nil, fmt.Errorf("unknown tokenizer %q (expected o200k or chars/4; calibrated comes from tokens.Learn): %w", name, bs.ErrInvalid)
}
