package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// exampleState writes a store holding the self-made corpus (OpenClaw's
// schema, synthetic rows) into a fresh state dir.
func exampleState() (string, func(), error) {
	state, err := os.MkdirTemp("", "example")
	if err != nil {
		return "", nil, err
	}
	done := func() { os.RemoveAll(state) }
	if _, err := testcorpus.CreateStore(filepath.Join(state, "agents"), "main", testcorpus.SelfMadeStoreSessions("main")...); err != nil {
		done()
		return "", nil, err
	}
	return state, done, nil
}

// List the sessions of an OpenClaw state dir, open one, and replace the
// text of its first tool result with a placeholder.
func Example() {
	ctx := context.Background()
	state, done, err := exampleState()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	agents, _ := sqlite.Detect(state)
	fmt.Println("agents with a SQLite store:", agents)

	st := sqlite.NewStore(state, sqlite.Options{})
	ref, err := st.Resolve(ctx, "agent:main:main")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("session:", ref)

	// Find the first tool result's text while the transcript is read.
	var edit bs.Edit
	tr, err := st.Open(ctx, ref, &bs.Visitor{
		Want: func(raw []byte) bool { return bytes.Contains(raw, []byte(`"toolResult"`)) },
		Visit: func(e *bs.Entry) error {
			if edit.Line != 0 || e.Role != "toolResult" {
				return nil
			}
			for _, v := range e.Strings {
				if v.Pointer == "/message/content/0/text" {
					ph, _ := jsontext.AppendQuote(nil, "[[extracted-"+e.ID+"]]")
					sum := bs.LineSum(e.Raw)
					edit = bs.Edit{Line: e.Line, ID: e.ID, Sum: sum, Splices: []bs.Splice{{Start: v.Start, End: v.End, With: ph}}}
				}
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lines:", len(tr.Nodes()), "context messages:", tr.Context().Count())

	if err := st.Rewrite(ctx, ref, tr.Version(), []bs.Edit{edit}, nil); err != nil {
		fmt.Println(err)
		return
	}
	tr2, _ := st.Open(ctx, ref, nil)
	e, _ := tr2.Entry(ctx, edit.Line)
	fmt.Println("placeholder written:", bytes.Contains(e.Raw, []byte("[[extracted-"+edit.ID+"]]")))
	fmt.Println("same tree:", len(tr2.Nodes()) == len(tr.Nodes()), tr2.Context().Count() == tr.Context().Count())

	// Writing against the old version fails: the fences moved.
	err = st.Rewrite(ctx, ref, tr.Version(), []bs.Edit{edit}, nil)
	fmt.Println("stale base:", errors.Is(err, bs.ErrChanged))
	fmt.Println("tool_call editable:", st.Editable(bs.SessionRef{}, bs.TriggerToolCall))
	// Output:
	// agents with a SQLite store: [main]
	// session: main/416c4485-99ca-429a-ad93-bcf0fc3f7b0d
	// lines: 60 context messages: 14
	// placeholder written: true
	// same tree: true true
	// stale base: true
	// tool_call editable: false
}
