package portable_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// Branch a session at an earlier entry into a new session of the same
// agent.
func ExampleBranch() {
	root, _ := os.MkdirTemp("", "portable-example")
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "agents", "main", "sessions")
	_ = os.MkdirAll(dir, 0o700)
	_ = os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(strings.Join([]string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":"plan A"}}`,
		`{"type":"message","id":"u2","parentId":"u1","timestamp":"2026-07-01T09:00:02.000Z","message":{"role":"user","content":"no, plan B"}}`,
	}, "\n")+"\n"), 0o600)

	ctx := context.Background()
	st := session.NewStore(filepath.Join(root, "agents"))
	ref, err := st.Resolve(ctx, "main/s1")
	if err != nil {
		fmt.Println(err)
		return
	}
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := portable.Branch(ctx, tr, "u1", portable.BranchOptions{ID: "s2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	nref, err := portable.Create(ctx, st, "main", s)
	if err != nil {
		fmt.Println(err)
		return
	}
	ntr, err := st.Open(ctx, nref, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(nref.String(), "entries:", len(ntr.ActivePath()), "parent:", filepath.Base(ntr.Header().ParentSession))

	_, err = portable.Branch(ctx, tr, "u9", portable.BranchOptions{})
	fmt.Println(err)
	var _ bs.Store = st
	// Output:
	// main/s2 entries: 1 parent: s1.jsonl
	// branch: --at "u9": no entry of session main/s1 has that id (expected an entry id; nearby ids: u1, u2): not found
}
