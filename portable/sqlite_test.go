package portable_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
)

// TestSQLiteBackend exports, branches and greps the sessions of a corpus
// SQLite store (OpenClaw ≥ 2026.8) through the same interfaces, and checks
// that the store refuses to create the resulting sessions (BrainSurgeon
// never inserts rows), while a JSONL agents dir takes them.
func TestSQLiteBackend(t *testing.T) {
	ctx := context.Background()
	st := sqlite.NewStore(testcorpus.Store(t), sqlite.Options{})
	refs, _, err := st.Sessions(ctx)
	if err != nil || len(refs) == 0 {
		t.Fatalf("sessions: %v (%d)", err, len(refs))
	}
	jsonl, _ := newStore(t)
	for _, ref := range refs {
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.ActivePath()) == 0 {
			continue
		}
		x, err := portable.Export(ctx, tr, nil, portable.ExportOptions{})
		if err != nil {
			t.Fatalf("export %s: %v", ref, err)
		}
		var b bytes.Buffer
		if err := x.Encode(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := portable.Import(ctx, st, "main", b.Bytes(), portable.ImportOptions{}); !errors.Is(err, bs.ErrUnsupported) {
			t.Errorf("import into the SQLite store: err = %v, want ErrUnsupported", err)
		}
		if _, err := portable.Import(ctx, jsonl, "main", b.Bytes(), portable.ImportOptions{}); err != nil {
			t.Errorf("import %s into a JSONL agents dir: %v", ref, err)
		}
		s, err := portable.Branch(ctx, tr, "", portable.BranchOptions{})
		if err != nil {
			t.Fatalf("branch %s: %v", ref, err)
		}
		if _, err := portable.Create(ctx, st, "main", s); !errors.Is(err, bs.ErrUnsupported) {
			t.Errorf("branch into the SQLite store: err = %v, want ErrUnsupported", err)
		}
		// Grep works on this backend too: the leaf's own "id" member is one
		// of its string values.
		leaf := tr.Nodes()[tr.ActivePath()[len(tr.ActivePath())-1]].ID
		n := 0
		for h, err := range recall.Grep(ctx, tr, nil, leaf, recall.GrepOptions{MaxHits: -1}) {
			if err != nil {
				t.Fatal(err)
			}
			if h.EntryID == leaf && h.Where == recall.Active {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: grep found no active hit of the leaf's id %s", ref, leaf)
		}
	}
}
