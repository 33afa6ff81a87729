package portable_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/portable"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

type at struct{ t time.Time }

func (c at) Now() time.Time { return c.t }

// TestExportResolveCorpusOracle extracts copies of the corpus transcripts,
// exports them with Resolve and imports the exports: the imported session
// carries the original values (no placeholder of the tail is left), and
// the real pi SessionManager (without it, session.Open) builds from it the
// context it built from the transcript before extraction.
func TestExportResolveCorpusOracle(t *testing.T) {
	oracle.Optional(t) // without the oracle, checked against session.Open
	ctx := context.Background()
	checked, resolvedFiles := 0, 0
	for src, orig := range corpusTranscripts(t) {
		name := testcorpus.Name(src)
		root, path := testcorpus.Copy(t, src, "s1")
		st := session.NewStore(root)
		st.Writer.Quiet = 0
		ref, err := st.Resolve(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		side := sidedir.New(st)
		x := &extract.Extractor{Policy: extract.DefaultPolicy(), Store: st, Side: side, Clock: at{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}}
		res, err := x.Run(ctx, ref)
		if err != nil {
			t.Fatalf("%s: extract: %v", name, err)
		}
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := portable.Export(ctx, tr, side, portable.ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		doc, err := portable.Export(ctx, tr, side, portable.ExportOptions{Resolve: true})
		if err != nil {
			t.Fatalf("%s: export: %v", name, err)
		}
		for k := range doc.Tail {
			if !bytes.Equal(plain.Tail[k], doc.Tail[k]) {
				resolvedFiles++
				break
			}
		}
		for _, l := range doc.Tail {
			if strings.Contains(string(l), extract.PlaceholderPrefix) && res.Entries > 0 {
				var e struct{ ID string }
				_ = jsonUnmarshal(l, &e)
				if strings.Contains(string(l), extract.Placeholder(e.ID)) {
					t.Errorf("%s: tail line %s still holds its placeholder", name, e.ID)
				}
			}
		}
		s, err := doc.Session(portable.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		path0 := orig.ActivePath()
		want := piContext(t, upTo(t, src, orig.Nodes()[path0[len(path0)-1]].Line)).Messages
		got := piContext(t, writeSession(t, s)).Messages
		if doc.Summary != nil {
			if len(want) == 0 || len(got) == 0 {
				t.Errorf("%s: empty context", name)
				continue
			}
			want, got = want[1:], got[1:]
		}
		sameMessages(t, name, want, got)
		checked++
	}
	t.Logf("%d exports of extracted copies checked, %d had placeholders resolved in their tail", checked, resolvedFiles)
	if resolvedFiles == 0 {
		t.Error("no tail had a placeholder to resolve")
	}
}
