package session_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session"
)

func TestCreate(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	if err := os.MkdirAll(filepath.Join(root, "main"), 0o700); err != nil {
		t.Fatal(err)
	}
	st := session.NewStore(root)
	lines := [][]byte{[]byte(`{"type":"session","version":3,"id":"n1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`),
		[]byte(`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}` + "\r")}
	ref, err := st.Create(ctx, "main", lines)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "main", "sessions", "n1.jsonl")
	if ref.Path != want || ref.ID != "n1" || ref.Backend != bs.BackendJSONL {
		t.Errorf("ref %+v", ref)
	}
	b, err := os.ReadFile(want)
	if err != nil || string(b) != string(lines[0])+"\n"+string(lines[1])+"\n" {
		t.Errorf("file %q %v", b, err)
	}
	fi, _ := os.Stat(want)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	// The store lists it as an orphan transcript of the agent.
	refs, _, err := st.Sessions(ctx)
	if err != nil || len(refs) != 1 || refs[0].ID != "n1" {
		t.Errorf("sessions %+v %v", refs, err)
	}
	// An existing file is never replaced; no temp file is left behind.
	if err := os.WriteFile(want, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, "main", lines); !errors.Is(err, bs.ErrInvalid) {
		t.Errorf("create over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(want); string(b) != "keep\n" {
		t.Errorf("existing file changed: %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(want))
	if len(ents) != 1 {
		t.Errorf("sessions dir holds %d files", len(ents))
	}
}

func TestCreatePiRefused(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "--home-u--"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := session.NewStore(root).Create(context.Background(), "main", [][]byte{[]byte(`{"type":"session","id":"n1"}`)})
	if !errors.Is(err, bs.ErrUnsupported) {
		t.Errorf("err = %v, want ErrUnsupported", err)
	}
}
