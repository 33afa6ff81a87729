package extract_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// refusingStore is a store whose rewrites fail as when the host wrote the
// session meanwhile.
type refusingStore struct{ bs.Store }

func (refusingStore) Rewrite(_ context.Context, ref bs.SessionRef, _ bs.Version, _ []bs.Edit, _ func() error) error {
	return fmt.Errorf("rewrite %s: the host wrote it: %w", ref, bs.ErrChanged)
}

// TestReuseStoredRecords makes passes over a session whose write fails:
// the side records of the first are reused by the next passes while they
// are younger than Policy.ReuseStoredWithin and hold the same bytes, and
// written again otherwise (older, reuse off, or a value that changed).
func TestReuseStoredRecords(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	result := func(id, parent, text string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"exec","content":[{"type":"text","text":"` + text + `"}],"isError":false}}`
	}
	write := func(second string) string {
		lines := []string{
			`{"type":"session","version":3,"id":"reuse-0001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}`,
			`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go"}]}}`,
			result("r1", "u1", strings.Repeat("first output line. ", 80)),
			result("r2", "r1", second),
			`{"type":"message","id":"u2","parentId":"r2","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":[{"type":"text","text":"thanks"}]}}`,
		}
		p := filepath.Join(dir, "reuse-0001.jsonl")
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	path := write(strings.Repeat("second output line. ", 80))
	js := session.NewStore(root)
	js.Writer.Quiet = 0
	side := sidedir.New(js)
	ref, err := js.Resolve(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sideDir, _ := js.SideDir(ref)
	packs := func() int {
		ents, _ := os.ReadDir(sideDir)
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "pack-") {
				n++
			}
		}
		return n
	}
	start := time.Now()
	pass := func(after, within time.Duration) {
		t.Helper()
		p := allTypes(100, 1)
		p.ReuseStoredWithin = within
		x := &extract.Extractor{Policy: p, Store: refusingStore{js}, Side: side, Clock: fixedClock{start.Add(after)}}
		if _, err := x.Run(ctx, ref); !errors.Is(err, bs.ErrChanged) {
			t.Fatalf("pass: %v, want the write to fail", err)
		}
	}
	for _, step := range []struct {
		name          string
		after, within time.Duration
		edit          string // a new text for r2, "" for none
		packs         int
	}{
		{"First", 0, time.Hour, "", 1},
		{"Reused", 10 * time.Minute, time.Hour, "", 1},
		{"ReusedAgain", 50 * time.Minute, time.Hour, "", 1},
		{"TooOld", 2 * time.Hour, time.Hour, "", 2},
		{"ReuseOff", 2 * time.Hour, 0, "", 3},
		{"ValueChanged", 2 * time.Hour, 24 * time.Hour, strings.Repeat("changed output line. ", 80), 4},
		{"ChangedValueReused", 2 * time.Hour, 24 * time.Hour, "", 4},
	} {
		if step.edit != "" {
			write(step.edit)
		}
		pass(step.after, step.within)
		if got := packs(); got != step.packs {
			t.Fatalf("%s: %d packs, want %d", step.name, got, step.packs)
		}
	}
	// The newest record of r2 holds the changed value.
	rec, err := extract.LoadRecord(ctx, side, ref, "r2")
	if err != nil {
		t.Fatal(err)
	}
	v, ok := rec.Value("/message/content/0/text")
	if b, err := v.Bytes(); !ok || err != nil || !strings.Contains(string(b), "changed output") {
		t.Fatalf("r2's record holds %q (%v), want the changed value", b, err)
	}
}
