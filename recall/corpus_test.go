package recall_test

import (
	"context"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// probe picks a piece of text from one string value of a line: up to 24
// bytes from the middle of the first value of at least 40 bytes, cut at
// character boundaries. ok is false when the line has none.
func probe(e *bs.Entry) (text, pointer string, ok bool) {
	for _, v := range e.Strings {
		if v.Len() < 40 {
			continue
		}
		s, err := jsontext.AppendUnquote(nil, e.Raw[v.Start:v.End])
		if err != nil || !utf8.Valid(s) || len(s) < 40 {
			continue
		}
		from := len(s) / 2
		for from > 0 && !utf8.RuneStart(s[from]) {
			from--
		}
		to := from + 24
		for to < len(s) && !utf8.RuneStart(s[to]) {
			to++
		}
		return string(s[from:min(to, len(s))]), v.Pointer, true
	}
	return "", "", false
}

// TestGrepCorpus takes text from entries of every corpus transcript (on
// the active path, compacted away, off the path) and checks that grep
// finds it in that entry and value, as plain text and as a case-insensitive
// regular expression, and says where the entry is.
func TestGrepCorpus(t *testing.T) {
	ctx := context.Background()
	checked := map[recall.Where]int{}
	for _, p := range testcorpus.Transcripts(t) {
		tr, err := session.Open(ctx, p, bs.SessionRef{Agent: "main"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes := tr.Nodes()
		where := map[int]recall.Where{}
		for _, i := range tr.ActivePath() {
			where[i] = recall.Active
		}
		c := tr.Context()
		if c.Compaction >= 0 && c.FirstKept >= 0 {
			for _, i := range tr.ActivePath() {
				if i == c.FirstKept {
					break
				}
				where[i] = recall.Compacted
			}
		}
		// One probe per place, from the newest entries of each.
		want := map[recall.Where]int{}
		for i := len(nodes) - 1; i >= 0; i-- {
			n := &nodes[i]
			if n.Kind != bs.KindEntry || n.ID == "" {
				continue
			}
			w, ok := where[i]
			if !ok {
				w = recall.OffPath
			}
			if _, done := want[w]; done {
				continue
			}
			e, err := tr.Entry(ctx, n.Line)
			if err != nil {
				t.Fatal(err)
			}
			text, ptr, ok := probe(e)
			if !ok {
				continue
			}
			want[w] = i
			for _, o := range []recall.GrepOptions{{MaxHits: -1}, {MaxHits: -1, Regexp: true, IgnoreCase: true}} {
				pattern := text
				if o.Regexp {
					pattern = regexp.QuoteMeta(text)
				}
				found := false
				for h, err := range recall.Grep(ctx, tr, nil, pattern, o) {
					if err != nil {
						t.Fatalf("%s: %v", testcorpus.Name(p), err)
					}
					if h.Line == n.Line && h.Pointer == ptr {
						found = true
						if h.EntryID != n.ID || h.Where != w {
							t.Errorf("%s line %d: hit %+v, want entry %s %s", testcorpus.Name(p), n.Line, h, n.ID, w)
						}
					}
				}
				if !found {
					t.Errorf("%s: grep %+v did not find text of entry %s (line %d, %s)", testcorpus.Name(p), o, n.ID, n.Line, ptr)
				}
			}
			checked[w]++
		}
	}
	t.Logf("probes found per place: %v", checked)
	for _, w := range []recall.Where{recall.Active, recall.Compacted, recall.OffPath} {
		if checked[w] == 0 {
			t.Errorf("no corpus probe of a %s entry", w)
		}
	}
}

// TestExpandCorpus describes and expands every compaction of the corpus:
// the expansion's entries are the described span, raw lines equal the
// stored ones, and a span does not overlap the span of the compaction
// before it on its path (compactions on sibling branches may share
// ancestors).
func TestExpandCorpus(t *testing.T) {
	ctx := context.Background()
	total := 0
	files := testcorpus.Transcripts(t)
	for _, p := range files {
		tr, err := session.Open(ctx, p, bs.SessionRef{Agent: "main"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header().Version < 2 {
			continue
		}
		spans := map[string]map[int]bool{}
		for _, ci := range tr.Compactions() {
			id := tr.Nodes()[ci].ID
			x, err := recall.Expand(ctx, tr, id, recall.ExpandOptions{})
			if err != nil {
				t.Errorf("%s: expand %s: %v", testcorpus.Name(p), id, err)
				continue
			}
			sp := x.Compaction.Compaction.Span
			if len(x.Entries) != sp.Count || (sp.Count > 0 && (x.Entries[0].ID != sp.FirstID || x.Entries[len(x.Entries)-1].Line != sp.LastLine)) {
				t.Errorf("%s: expand %s: %d entries, span %+v", testcorpus.Name(p), id, len(x.Entries), sp)
			}
			spans[id] = map[int]bool{}
			prev := spans[x.Compaction.Compaction.Previous]
			for _, e := range x.Entries {
				if prev[e.Line] {
					t.Errorf("%s: line %d in the spans of %s and of the compaction before it", testcorpus.Name(p), e.Line, id)
				}
				spans[id][e.Line] = true
			}
			if len(x.Entries) > 0 {
				e := x.Entries[len(x.Entries)/2]
				got, err := tr.Entry(ctx, e.Line)
				if err != nil || string(got.Raw) != string(e.Raw) {
					t.Errorf("%s: expand %s: line %d not the stored bytes", testcorpus.Name(p), id, e.Line)
				}
			}
			total++
		}
	}
	t.Logf("%d compactions expanded", total)
	if want := map[bool]int{true: 100, false: 15}[testcorpus.HasReal(files)]; total < want {
		t.Errorf("only %d corpus compactions, want at least %d", total, want)
	}
}
