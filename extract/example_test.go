package extract_test

import (
	"fmt"
	"time"

	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// Decide tells, for one entry, whether to extract it now and why.
func ExampleDecide() {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	line := `{"type":"message","id":"45","timestamp":"2026-11-19T12:00:00Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"exec","content":[{"type":"text","text":"` + big(600) + `"}],"isError":false}}`
	e := entry.Parse([]byte(line), 12, 0)
	p := extract.DefaultPolicy()

	d := extract.Decide(e, 5, p, now) // the 6th newest message
	fmt.Println(d.Reason)
	for _, c := range d.Candidates {
		fmt.Println(c.Trigger, c.Pointer, c.Len(), "bytes")
	}
	fmt.Println(extract.Decide(e, 1, p, now).Reason) // among the last keep_recent messages
	// Output:
	// Entry 45: tool_result, 2d old → EXTRACT
	// tool_result /message/content/0/text 602 bytes
	// Entry 45: tool_result, 2d old → KEEP (message 1 from the end, keep_recent 3)
}

// The text that replaces a value, bare or with a preview.
func ExamplePlaceholderText() {
	fmt.Println(extract.PlaceholderText("total 48\ndrwxr-xr-x  5 user", 0, "8797d4c7"))
	fmt.Println(extract.PlaceholderText("total 48\ndrwxr-xr-x  5 user", 8, "8797d4c7"))
	// Output:
	// [[extracted-8797d4c7]]
	// total 48… [[extracted-8797d4c7]]
}
