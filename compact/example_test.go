package compact_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// oneLine is a Summarizer for the example: a fixed summary.
type oneLine struct{}

func (oneLine) Summarize(_ context.Context, messages [][]byte, focus string) (compact.Summary, error) {
	return compact.Summary{Text: fmt.Sprintf("## Goal\nFix the build (%d lines summarized, focus %q).", len(messages), focus)}, nil
}

func Example() {
	ctx := context.Background()
	// A session of three tool turns (a user request, a tool call, its
	// output and an answer each) in an OpenClaw agents dir.
	agents, _ := os.MkdirTemp("", "agents")
	defer os.RemoveAll(agents)
	dir := filepath.Join(agents, "main", "sessions")
	_ = os.MkdirAll(dir, 0o700)
	lines := []string{`{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T00:00:00.000Z","cwd":"/"}`}
	parent := "null"
	for i := range 12 {
		id := fmt.Sprintf("m%07d", i)
		var msg string
		switch i % 4 {
		case 0:
			msg = `{"role":"user","content":"run the build"}`
		case 1:
			msg = fmt.Sprintf(`{"role":"assistant","content":[{"type":"toolCall","id":"c%d","name":"exec","arguments":{"command":"make"}}]}`, i)
		case 2:
			msg = fmt.Sprintf(`{"role":"toolResult","toolCallId":"c%d","toolName":"exec","content":[{"type":"text","text":"%s"}]}`, i-1, strings.Repeat("log ", 1000))
		case 3:
			msg = `{"role":"assistant","content":"it failed, retrying"}`
		}
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T00:00:0%d.000Z","message":%s}`, id, parent, i%10, msg))
		parent = fmt.Sprintf("%q", id)
	}
	path := filepath.Join(dir, "s1.jsonl")
	_ = os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)

	st := session.NewStore(agents)
	st.Writer.Quiet = 0 // the example's session was written just now
	ref, _ := st.Resolve(ctx, "main/s1")
	settings := compact.DefaultSettings()
	settings.ContextWindow = 3940
	settings.SummarizeKeepRecent = 1500

	tr, _ := st.Open(ctx, ref, nil)
	status, _ := compact.Status(ctx, tr, settings, compact.TokenOptions{})
	fmt.Printf("before: %d tokens, %.1f%% of the window, layer %q\n", status.Tokens, status.Percent, status.Layer)

	res, err := compact.Compact(ctx, st, ref, compact.Options{Summarizer: oneLine{}, Focus: "the build", Settings: settings})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d → %d tokens, %d messages summarized, kept from %s\n",
		res.Layer, res.TokensBefore, res.TokensAfter, res.MessagesCompacted, res.FirstKeptEntryID)

	tr, _ = st.Open(ctx, ref, nil)
	h, _ := compact.History(ctx, tr, 0)
	fmt.Println("compactions:", h.Compactions, "risk:", h.Risk, "layer:", h.Events[0].Layer, "trigger:", h.Events[0].Trigger)
	// Output:
	// before: 3545 tokens, 90.0% of the window, layer "summarize"
	// summarize: 3545 → 1339 tokens, 7 messages summarized, kept from m0000007
	// compactions: 1 risk: low layer: summarize trigger: manual
}
