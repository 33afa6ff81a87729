package summarize_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/brainsurgeon/brainsurgeon/summarize"
)

// A compaction asks Escalate for its summary: the model with the normal
// prompt, then the aggressive one, then the offline extractive summary,
// which is marked degraded with the reason.
func ExampleEscalate() {
	model := summarize.FromEnv()            // key from BRAINSURGEON_SUMMARY_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY
	model.BaseURL = "http://127.0.0.1:1/v1" // nothing listens here
	model.Model = "llama3.1"
	model.Retries = 0
	e := &summarize.Escalate{Model: model, Logger: slog.New(slog.DiscardHandler)}
	lines := [][]byte{
		[]byte(`{"type":"message","id":"u1","message":{"role":"user","content":"Fix the failing parser test and keep the public API unchanged, please."}}`),
		[]byte(`{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"parser/parse.go","oldText":"a","newText":"b"}}]}}`),
	}
	s, err := e.SummarizeDetailed(context.Background(), lines, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Degraded, s.Summarizer, s.Attempts)
	// Output: true deterministic 3
}

// Facts gives the structured extraction that export writes as JSON.
func ExampleExtractFacts() {
	f := summarize.ExtractFacts([][]byte{
		[]byte(`{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"go.mod"}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"go test ./..."}}]}}`),
		[]byte(`{"type":"message","id":"r2","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","isError":true,"content":[{"type":"text","text":"FAIL parser"}]}}`),
	})
	fmt.Println(f.FilesRead, f.Commands[0].Command, f.Commands[0].Failed, f.Errors[0].Text)
	// Output: [go.mod] go test ./... true FAIL parser
}
