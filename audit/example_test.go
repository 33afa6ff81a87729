package audit_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/brainsurgeon/brainsurgeon/audit"
)

// ExampleAppend appends one line to the audit log of a state dir.
func ExampleAppend() {
	stateDir, err := os.MkdirTemp("", "state")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(stateDir)
	ev := audit.Event{Time: time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC), Action: "compact", Session: "main/s1", Entry: "c1"}
	if err := audit.Append(audit.Path(stateDir), ev); err != nil {
		fmt.Println(err)
		return
	}
	b, err := os.ReadFile(filepath.Join(stateDir, "audit.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(b))
	// Output:
	// {"time":"2026-02-20T17:30:00Z","action":"compact","session":"main/s1","entry":"c1","path":"","error":""}
}
