package recall_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

type clock struct{ t time.Time }

func (c clock) Now() time.Time { return c.t }

// TestExtractedCorpus runs the extraction engine on copies of the corpus
// transcripts that have compactions, then checks that grep finds text of
// extracted values in the side store (and says so), and that expanding
// every compaction with Resolve gives back the lines as they were before
// extraction, byte for byte.
func TestExtractedCorpus(t *testing.T) {
	ctx := context.Background()
	files, found, expanded, resolved := 0, 0, 0, 0
	for _, src := range testcorpus.Transcripts(t) {
		orig, err := session.Open(ctx, src, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if orig.Header().Version < 2 || len(orig.Compactions()) == 0 {
			continue
		}
		name := testcorpus.Name(src)
		root, path := testcorpus.Copy(t, src, "s1")
		st := session.NewStore(root)
		st.Writer.Quiet = 0
		ref, err := st.Resolve(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		side := sidedir.New(st)
		x := &extract.Extractor{Policy: extract.DefaultPolicy(), Store: st, Side: side, Clock: clock{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}}
		res, err := x.Run(ctx, ref)
		if err != nil {
			t.Fatalf("%s: extract: %v", name, err)
		}
		if len(res.Details) == 0 {
			continue
		}
		files++
		tr, err := st.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Grep: text from the middle of the first extracted string value.
		for _, er := range res.Details {
			rec, err := extract.LoadRecord(ctx, side, ref, er.ID)
			if err != nil {
				t.Fatal(err)
			}
			v := rec.Values[0]
			raw, err := v.Bytes()
			if err != nil || v.Block || raw[0] != '"' {
				continue
			}
			text, err := jsontext.AppendUnquote(nil, raw)
			if err != nil || len(text) < 600 {
				continue
			}
			e := &bs.Entry{Raw: raw, Strings: []bs.Value{{Pointer: v.Path, Start: 0, End: len(raw)}}}
			probeText, _, ok := probe(e)
			if !ok {
				continue
			}
			hit := false
			for h, err := range recall.Grep(ctx, tr, side, probeText, recall.GrepOptions{MaxHits: -1}) {
				if err != nil {
					t.Fatal(err)
				}
				if h.EntryID == er.ID && h.Where == recall.Extracted && h.Pointer == v.Path && h.Line == er.Line {
					hit = true
				}
			}
			if !hit {
				t.Errorf("%s: grep did not find text of the extracted value %s %s", name, er.ID, v.Path)
			}
			found++
			break
		}
		// Expand with Resolve gives back the original lines.
		for _, ci := range tr.(*session.Transcript).Compactions() {
			id := tr.Nodes()[ci].ID
			xp, err := recall.Expand(ctx, tr, id, recall.ExpandOptions{Resolve: true, Side: side})
			if err != nil {
				t.Fatalf("%s: expand %s: %v", name, id, err)
			}
			for _, e := range xp.Entries {
				o, err := orig.Entry(ctx, e.Line)
				if err != nil {
					t.Fatal(err)
				}
				if string(o.Raw) != string(e.Raw) {
					t.Errorf("%s: expand %s: line %d (%d resolved) differs from the line before extraction", name, id, e.Line, e.Resolved)
				}
				expanded++
				resolved += e.Resolved
			}
		}
		_ = os.RemoveAll(root)
	}
	t.Logf("%d extracted corpus copies, %d extracted values found by grep, %d expanded lines (%d placeholders resolved) equal the originals", files, found, expanded, resolved)
	if files == 0 || found == 0 || resolved == 0 {
		t.Error("nothing was extracted to search")
	}
}
