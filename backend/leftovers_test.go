package backend_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
)

// The leftovers of the real installs of the corpus (a read-only scan): no
// live transcript, lock or sessions.json is listed, every file is where
// the report says with the size it says, and its kind is its name's.
func TestLeftoversCorpus(t *testing.T) {
	shared := oracle.Shared(t)
	ctx := context.Background()
	roots, _ := filepath.Glob(filepath.Join(shared, "corpus", "openclaw", "*", "agents"))
	more, _ := filepath.Glob(filepath.Join(shared, "corpus", "openclaw", "*", ".openclaw"))
	roots = append(roots, more...)
	if len(roots) == 0 {
		t.Skip("no agents dir in the corpus")
	}
	total := 0
	for _, root := range roots {
		set, err := backend.Open(ctx, root, backend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		refs, _, err := set.Store.Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		live := map[string]bool{}
		for _, r := range refs {
			live[r.Path] = true
		}
		found, skipped, err := set.Store.(bs.LeftoverScanner).Leftovers(ctx)
		if err != nil || len(skipped) > 0 {
			t.Fatalf("%s: %v %v", root, err, skipped)
		}
		total += len(found)
		for _, l := range found {
			name := filepath.Base(l.Path)
			fi, err := os.Lstat(l.Path)
			switch {
			case err != nil:
				t.Errorf("%s: %v", l.Path, err)
			case fi.Size() != l.Bytes || l.DiskBytes <= 0 && l.Bytes > 0:
				t.Errorf("%s: %d bytes (%d on disk), the file has %d", l.Path, l.Bytes, l.DiskBytes, fi.Size())
			case live[l.Path] && l.Kind != bs.LeftoverOrphan, strings.Contains(name, ".lock"), name == "sessions.json":
				t.Errorf("%s listed as a %s leftover", l.Path, l.Kind)
			case l.Why == "":
				t.Errorf("%s: no why", l.Path)
			}
			if want := map[string]string{bs.LeftoverDeleted: ".jsonl.deleted.", bs.LeftoverReset: ".jsonl.reset.", bs.LeftoverCheckpoint: ".checkpoint."}[l.Kind]; want != "" && !strings.Contains(name, want) {
				t.Errorf("%s: kind %s, its name lacks %q", l.Path, l.Kind, want)
			}
		}
	}
	if total == 0 {
		t.Error("no leftovers in the corpus, which holds .deleted, .reset and .bak files")
	}
}
