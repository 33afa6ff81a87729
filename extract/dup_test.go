package extract_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// resultLine is a v3 tool result line with the given id, parent and text.
func resultLine(id, parent, text string) string {
	return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"` + text + `"}]}}`
}

// TestExtractDuplicateIDs checks that two lines carrying the same entry id
// (a host bug or a hand edit) never lose a value: placeholders name the id
// and side records are kept by it, so neither line is extracted, also
// when the records go out early (no hold-back) and when one of them was
// extracted by an earlier pass before the other appeared.
func TestExtractDuplicateIDs(t *testing.T) {
	defer extract.SetHoldBack(extract.SetHoldBack(0))
	defer extract.SetBatchTarget(extract.SetBatchTarget(0))
	ctx := context.Background()
	hdr := `{"type":"session","version":3,"id":"dup","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
	var tail []string
	for i := range 6 {
		tail = append(tail, resultLine("b"+string(rune('0'+i)), "a1", "short"))
	}
	write := func(t *testing.T, lines []string) (string, *session.Store) {
		ref, st := sessionOf(t, "dup", []byte(strings.Join(lines, "\n")+"\n"))
		return ref.Path, st
	}
	pristine := func(t *testing.T, path string, st *session.Store, want []byte) {
		ref, err := st.Resolve(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sidetest.Restorer(st, st.Root).RestoreAll(ctx, ref, true); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, want) {
			t.Fatal("restore --all --pristine does not give the original back")
		}
	}

	t.Run("one pass", func(t *testing.T) {
		lines := append([]string{hdr, resultLine("a1", "", strings.Repeat("x", 3000)), resultLine("a1", "a1", strings.Repeat("y", 3000))}, tail...)
		path, st := write(t, lines)
		ref, _ := st.Resolve(ctx, path)
		res := run(t, ref, st, allTypes(500, 0))
		if res.Written || res.Counts[extract.CodeDuplicateID] != 2 {
			t.Fatalf("written %v, decisions %v: want both lines kept as duplicate_id", res.Written, res.Counts)
		}
		pristine(t, path, st, []byte(strings.Join(lines, "\n")+"\n"))
	})

	t.Run("after an earlier pass", func(t *testing.T) {
		first := append([]string{hdr, resultLine("a1", "", strings.Repeat("x", 3000))}, tail...)
		path, st := write(t, first)
		ref, _ := st.Resolve(ctx, path)
		if res := run(t, ref, st, allTypes(500, 0)); !res.Written {
			t.Fatalf("first pass not written: %s", res.Skipped)
		}
		// The host appends a line that reuses the extracted entry's id.
		extracted, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dup := resultLine("a1", "b5", strings.Repeat("y", 3000)) + "\n"
		if err := os.WriteFile(path, append(extracted, dup...), 0o600); err != nil {
			t.Fatal(err)
		}
		ref, _ = st.Resolve(ctx, path)
		// One side store for the pass and what comes after it, as in the
		// daemon: whatever the skipped pass put is published by the
		// next Sync of the session.
		side := sidedir.New(st)
		x := &extract.Extractor{Policy: allTypes(500, 0), Store: st, Side: side}
		res, err := x.Run(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if res.Written || res.Counts[extract.CodeDuplicateID] != 1 {
			t.Fatalf("written %v, decisions %v: want the new line kept as duplicate_id", res.Written, res.Counts)
		}
		if err := side.Sync(ctx, ref); err != nil {
			t.Fatal(err)
		}
		pristine(t, path, st, []byte(strings.Join(first, "\n")+"\n"+dup))
	})
}
