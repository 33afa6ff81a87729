package recall_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

func hitsOf(t *testing.T, tr bs.Transcript, side bs.SideStore, pattern string, o recall.GrepOptions) []recall.Hit {
	t.Helper()
	var out []recall.Hit
	for h, err := range recall.Grep(context.Background(), tr, side, pattern, o) {
		if err != nil {
			t.Fatalf("grep %q: %v", pattern, err)
		}
		out = append(out, h)
	}
	return out
}

// brief shows hits as "id@where" (with the pointer for extracted ones).
func brief(hs []recall.Hit) string {
	var s []string
	for _, h := range hs {
		x := h.EntryID + "@" + string(h.Where)
		if h.Where == recall.Extracted {
			x += "(" + string(h.EntryWhere) + ")"
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

func TestGrep(t *testing.T) {
	tr, side := open(t, fixture)
	for _, tt := range []struct {
		name, pattern string
		o             recall.GrepOptions
		want          string
	}{
		{"active", "epsilon", recall.GrepOptions{}, "u3@active a4@active c2@active"},
		{"off path", "gamma", recall.GrepOptions{}, "x1@off_path"},
		{"compacted", "delta", recall.GrepOptions{}, "u2@compacted a3@compacted c1@compacted"},
		{"extracted", "secret-value-42", recall.GrepOptions{}, "r1@extracted(compacted)"},
		{"escaped quote", `"beta"`, recall.GrepOptions{}, "a2@compacted"},
		{"decoded newline", "42\nline", recall.GrepOptions{}, "r1@extracted(compacted)"},
		{"ignore case", "ALPHA", recall.GrepOptions{IgnoreCase: true}, "u1@compacted a1@compacted a2@compacted c1@compacted c1@compacted c2@active r1@extracted(compacted)"},
		{"case sensitive", "ALPHA", recall.GrepOptions{}, ""},
		{"regexp", `^(zeta|now \w+)$`, recall.GrepOptions{Regexp: true}, "u2@compacted u4@active"},
		{"max hits", "alpha", recall.GrepOptions{IgnoreCase: true, MaxHits: 2}, "u1@compacted a1@compacted"},
		{"only active", "alpha", recall.GrepOptions{IgnoreCase: true, In: []recall.Where{recall.Active}}, "c2@active"},
		{"only extracted", "alpha", recall.GrepOptions{In: []recall.Where{recall.Extracted}}, "r1@extracted(compacted)"},
		{"placeholder text", "[[extracted-r1]]", recall.GrepOptions{}, "r1@compacted"},
		{"header", "/w", recall.GrepOptions{}, "sess-1@active"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := brief(hitsOf(t, tr, side, tt.pattern, tt.o)); got != tt.want {
				t.Errorf("grep %q:\n got %s\nwant %s", tt.pattern, got, tt.want)
			}
		})
	}
}

func TestGrepHitFields(t *testing.T) {
	tr, side := open(t, fixture)
	hs := hitsOf(t, tr, side, "secret", recall.GrepOptions{SnippetChars: 12})
	if len(hs) != 1 {
		t.Fatalf("got %d hits, want 1", len(hs))
	}
	h := hs[0]
	if h.Line != 4 || h.Pointer != "/message/content/0/text" || h.Offset != 8 || h.Role != "toolResult" {
		t.Errorf("hit = %+v", h)
	}
	if h.Snippet != "… = secret-va…" {
		t.Errorf("snippet %q", h.Snippet)
	}
	// A snippet never holds a line break, and a long one is cut.
	hs = hitsOf(t, tr, side, "line two", recall.GrepOptions{SnippetChars: 40})
	if len(hs) != 1 || strings.ContainsAny(hs[0].Snippet, "\n\r\t") || hs[0].Snippet != "alpha = secret-value-42 line two" {
		t.Errorf("hits %+v", hs)
	}
}

func TestGrepBadInput(t *testing.T) {
	tr, side := open(t, fixture)
	for _, tt := range []struct {
		name, pattern string
		o             recall.GrepOptions
	}{
		{"empty", "", recall.GrepOptions{}},
		{"bad regexp", "(", recall.GrepOptions{Regexp: true}},
		{"bad place", "x", recall.GrepOptions{In: []recall.Where{"gone"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for _, err := range recall.Grep(context.Background(), tr, side, tt.pattern, tt.o) {
				n++
				if !errors.Is(err, bs.ErrInvalid) {
					t.Errorf("err = %v, want ErrInvalid", err)
				}
			}
			if n != 1 {
				t.Errorf("%d results, want one error", n)
			}
		})
	}
}

func TestGrepStopsEarly(t *testing.T) {
	tr, side := open(t, fixture)
	n := 0
	for range recall.Grep(context.Background(), tr, side, "e", recall.GrepOptions{MaxHits: -1}) {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("n = %d", n)
	}
}

func TestDescribe(t *testing.T) {
	tr, _ := open(t, fixture)
	ctx := context.Background()
	d, err := recall.Describe(ctx, tr, "c1")
	if err != nil {
		t.Fatal(err)
	}
	c := d.Compaction
	if d.Where != recall.Compacted || c == nil || c.FirstKeptEntryID != "u2" || c.TokensBefore != 5000 || c.Previous != "" ||
		c.Span != (recall.Span{Count: 4, Messages: 4, FirstID: "u1", FirstLine: 2, LastID: "a2", LastLine: 5}) {
		t.Errorf("c1: %+v %+v", d, c)
	}
	d, err = recall.Describe(ctx, tr, "c2")
	if err != nil {
		t.Fatal(err)
	}
	c = d.Compaction
	if d.Where != recall.Active || c.Level != 1 || c.Layer != "summarize" || !c.FromHook || strings.Join(c.Covers, ",") != "c1" || c.Previous != "c1" ||
		c.Span != (recall.Span{Count: 3, Messages: 2, FirstID: "u2", FirstLine: 7, LastID: "c1", LastLine: 9}) {
		t.Errorf("c2: %+v %+v", d, c)
	}
	d, err = recall.Describe(ctx, tr, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "message" || d.Role != "toolResult" || !d.Extracted || d.Where != recall.Compacted || d.Compaction != nil || d.Time.IsZero() || d.Bytes != len(fixture[3]) {
		t.Errorf("r1: %+v", d)
	}
	d, err = recall.Describe(ctx, tr, "x1")
	if err != nil || d.Where != recall.OffPath || d.Extracted {
		t.Errorf("x1: %+v %v", d, err)
	}
}

func TestDescribeUnknownListsNearby(t *testing.T) {
	tr, _ := open(t, fixture)
	_, err := recall.Describe(context.Background(), tr, "c9")
	if !errors.Is(err, bs.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{`"c9"`, "c1", "c2", "u4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

func TestExpand(t *testing.T) {
	tr, side := open(t, fixture)
	ctx := context.Background()
	ids := func(x *recall.Expansion) string {
		var s []string
		for _, e := range x.Entries {
			s = append(s, e.ID)
		}
		return strings.Join(s, " ")
	}
	x, err := recall.Expand(ctx, tr, "c1", recall.ExpandOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(x); got != "u1 a1 r1 a2" {
		t.Errorf("c1 expands to %s", got)
	}
	for k, e := range x.Entries {
		if string(e.Raw) != fixture[k+1] {
			t.Errorf("entry %s: raw line differs from the stored one", e.ID)
		}
	}
	// Resolve puts the extracted value back, in the returned line only.
	x, err = recall.Expand(ctx, tr, "c1", recall.ExpandOptions{Resolve: true, Side: side})
	if err != nil {
		t.Fatal(err)
	}
	r1 := x.Entries[2]
	if r1.Resolved != 1 || !strings.Contains(string(r1.Raw), `"text":`+secret+`}`) {
		t.Errorf("resolved r1 = %d %s", r1.Resolved, r1.Raw)
	}
	// A condensed summary lists the summaries it covers beside its own span.
	x, err = recall.Expand(ctx, tr, "c2", recall.ExpandOptions{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Covers) != 1 || x.Covers[0] != (recall.Covered{ID: "c1", Found: true, Line: 9, SummaryChars: 27, FirstKeptEntryID: "u2"}) {
		t.Errorf("c2: covers %+v", x.Covers)
	}
	if got := ids(x); got != "u2 a3" || !x.Truncated {
		t.Errorf("c2: entries %s truncated=%v", got, x.Truncated)
	}
	// Not a compaction, unknown, resolve without a side store.
	for _, tt := range []struct {
		id   string
		o    recall.ExpandOptions
		want error
	}{
		{"u1", recall.ExpandOptions{}, bs.ErrInvalid},
		{"nope", recall.ExpandOptions{}, bs.ErrNotFound},
		{"c1", recall.ExpandOptions{Resolve: true}, bs.ErrInvalid},
	} {
		if _, err := recall.Expand(ctx, tr, tt.id, tt.o); !errors.Is(err, tt.want) {
			t.Errorf("expand %s: err = %v, want %v", tt.id, err, tt.want)
		}
	}
}

// TestGrepSourceKeyLine finds a match in a tool result the plugin stored
// at the source (side key "tc-<toolCallId>", not the entry's id): the hit
// carries the line of the tool result that holds its placeholder, not 0.
func TestGrepSourceKeyLine(t *testing.T) {
	lines := append([]string(nil), fixture...)
	lines[3] = strings.Replace(lines[3], "[[extracted-r1]]", "[[extracted-tc-t1]]", 1)
	tr, side := open(t, lines)
	ctx := context.Background()
	at := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	content := []byte(`[{"type":"text","text":"source-only needle"}]`)
	rec := &extract.Record{Format: extract.Format, Session: "main/sess-1", EntryID: "tc-t1", TriggerType: "tool_result", ExtractedAt: at,
		Values: []extract.StoredValue{extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, content, []byte(`"[[extracted-tc-t1]]"`), at)}}
	if _, err := extract.SaveRecord(ctx, side, tr.Ref(), rec); err != nil {
		t.Fatal(err)
	}
	hs := hitsOf(t, tr, side, "source-only needle", recall.GrepOptions{})
	if len(hs) != 1 || hs[0].Line != 4 || hs[0].Where != recall.Extracted || hs[0].EntryWhere != recall.Compacted || hs[0].Role != "toolResult" {
		t.Fatalf("hits %+v; want one extracted hit at line 4 (r1, compacted)", hs)
	}
}
