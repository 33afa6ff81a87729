package session_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Open a session by name and look at its tree and model context.
func ExampleOpen() {
	ctx := context.Background()
	d, err := session.DiscoverWith(ctx, "../testdata/demo/agents", session.DiscoverOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, err := d.Resolve("agent:main:main")
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := session.Open(ctx, ref.Path, ref, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	leaf, _ := tr.Leaf()
	fmt.Println("session:", ref)
	fmt.Println("format:", tr.Header().Version)
	fmt.Println("entries:", tr.EntryCount())
	fmt.Println("leaf:", leaf.ID)
	fmt.Println("context messages:", tr.Context().Count())
	fmt.Println("malformed lines:", len(tr.Malformed()))
	// Output:
	// session: main/7f3e2a10-5b6c-4d8e-9f01-23456789abcd
	// format: 3
	// entries: 20
	// leaf: b9015459
	// context messages: 13
	// malformed lines: 1
}

// Read lines as raw bytes and list the values extraction could move out.
func ExampleClassify() {
	const line = `{"type":"message","id":"f6071829","parentId":"e5f60718","message":{"role":"toolResult","toolCallId":"t1","toolName":"exec","content":[{"type":"text","text":"README.md\nsrc\n"}],"details":{"diff":"+a"},"isError":false}}`
	r := session.NewReader(strings.NewReader(line + "\n"))
	for r.Next() {
		e := r.Entry()
		for _, c := range entry.Classify(e) {
			fmt.Printf("%s %s %s\n", c.Trigger, c.Pointer, e.Raw[c.Start:c.End])
		}
	}
	// Output:
	// tool_result /message/content/0/text "README.md\nsrc\n"
	// tool_result /message/details/diff "+a"
}
