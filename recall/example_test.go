package recall_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Search a compacted session for text the model no longer sees, then
// expand the summary that replaced it.
func Example() {
	dir, _ := os.MkdirTemp("", "recall-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s1.jsonl")
	_ = os.WriteFile(path, []byte(strings.Join([]string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":"the port is 8443"}}`,
		`{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-07-01T09:00:02.000Z","message":{"role":"user","content":"deploy it"}}`,
		`{"type":"compaction","id":"c1","parentId":"u2","timestamp":"2026-07-01T09:00:03.000Z","summary":"User set up a deployment.","firstKeptEntryId":"u2","tokensBefore":900}`,
	}, "\n")+"\n"), 0o600)

	ctx := context.Background()
	tr, err := session.Open(ctx, path, bs.SessionRef{}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for h, err := range recall.Grep(ctx, tr, nil, "port is", recall.GrepOptions{}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s (%s) %s: %s\n", h.EntryID, h.Where, h.Pointer, h.Snippet)
	}
	x, err := recall.Expand(ctx, tr, "c1", recall.ExpandOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range x.Entries {
		fmt.Println("c1 stands for", e.ID, "on line", e.Line)
	}
	// Output:
	// u1 (compacted) /message/content: the port is 8443
	// c1 stands for u1 on line 2
}
