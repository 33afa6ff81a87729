package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// TestPluginSourceConflict stores a tool result, accepts the same bytes
// again (a retry) and refuses other content under the same tool call id
// (a host that repeats ids in a later turn) with 409, keeping the value.
func TestPluginSourceConflict(t *testing.T) {
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	first := `[{"type":"text","text":"first result"}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_0", first, ""), 200, nil)
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_0", first, ""), 200, nil)
	code, b, _ := c.do("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_0", `[{"type":"text","text":"second result"}]`, ""))
	if code != 409 || !strings.Contains(string(b), "other content") {
		t.Fatalf("other content under call_0: %d %s", code, b)
	}
	rec, err := extract.LoadRecord(context.Background(), f.set.Side, f.ref(t, plugSessA), "tc-call_0")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := extract.SourceContent(rec); err != nil || string(got) != first {
		t.Fatalf("stored %s (%v), want the first result kept", got, err)
	}
}

// decodeLiteral decodes a JSON string literal into UTF-16 code units as
// JavaScript's JSON.parse does: a lone surrogate escape stays itself.
func decodeLiteral(t *testing.T, lit []byte) []uint16 {
	t.Helper()
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		t.Fatalf("not a string literal: %.40q", lit)
	}
	body := lit[1 : len(lit)-1]
	var out []uint16
	for i := 0; i < len(body); {
		switch c := body[i]; {
		case c == '\\' && body[i+1] == 'u':
			v, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, uint16(v))
			i += 6
		case c == '\\':
			m := map[byte]uint16{'n': '\n', 't': '\t', 'r': '\r', 'b': '\b', 'f': '\f', '"': '"', '\\': '\\', '/': '/'}
			out = append(out, m[body[i+1]])
			i += 2
		default:
			r, size := utf8.DecodeRune(body[i:])
			out = append(out, utf16.Encode([]rune{r})...)
			i += size
		}
	}
	return out
}

// TestPluginRestoreLoneSurrogates pages a text holding lone surrogates
// (at page boundaries and inside) and emoji, escaped and raw, and gets
// back every UTF-16 code unit; a value that fits one page comes back as
// the stored block's bytes.
func TestPluginRestoreLoneSurrogates(t *testing.T) {
	const n = 200_000
	var units []uint16
	var lit strings.Builder
	lit.WriteByte('"')
	for len(units) < n {
		i := len(units)
		switch {
		case i%14_999 == 0 || i%15_000 == 0 || i%59_999 == 0 || i%60_000 == 0 || i%7_777 == 0:
			units = append(units, 0xD83D) // a lone high surrogate
			lit.WriteString(`\ud83d`)
		case i%9_001 == 0:
			units = append(units, 0xDE00) // a lone low surrogate
			lit.WriteString(`\uDE00`)
		case i%501 == 0:
			units = append(units, 0xD83D, 0xDE00) // an escaped pair
			lit.WriteString(`\ud83d\ude00`)
		case i%333 == 0:
			units = append(units, utf16.Encode([]rune("😀"))...) // a raw pair
			lit.WriteString("😀")
		case i%97 == 0:
			units = append(units, '\n', '"')
			lit.WriteString(`\n\"`)
		case i%89 == 0:
			units = append(units, '中')
			lit.WriteString("中")
		default:
			units = append(units, 'x')
			lit.WriteByte('x')
		}
	}
	lit.WriteByte('"')
	content := `[{"type":"text","text":` + lit.String() + `}]`
	if got := decodeLiteral(t, []byte(lit.String())); !equalUnits(got, units) {
		t.Fatal("the test's own literal does not decode to its units")
	}
	f := newPlugFixture(t)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_s", content, ""), 200, nil)
	for _, max := range []int{15_000, 60_000} {
		var got []uint16
		for off, pages := 0, 0; ; pages++ {
			if pages > 100 {
				t.Fatal("too many pages")
			}
			a := callTool(t, c, plugSessA, "purge_control", fmt.Sprintf(`{"action":"restore","key":"tc-call_s","offset":%d,"max_chars":%d}`, off, max))
			if !a.OK || len(a.Content) < 2 {
				t.Fatalf("page at %d: %+v", off, a)
			}
			var blk struct {
				Text json.RawMessage `json:"text"`
			}
			if err := json.Unmarshal(a.Content[len(a.Content)-1], &blk); err != nil {
				t.Fatal(err)
			}
			page := decodeLiteral(t, blk.Text)
			if len(page) > max {
				t.Fatalf("page at %d: %d UTF-16 units, above %d", off, len(page), max)
			}
			got = append(got, page...)
			next, ok := a.Details["next_offset"].(float64)
			if !ok {
				break
			}
			off = int(next)
		}
		if !equalUnits(got, units) {
			t.Fatalf("max_chars %d: the pages hold %d units, want the %d units stored exactly", max, len(got), len(units))
		}
	}
	// One page: the stored block's bytes, lone surrogate escape included.
	small := `[{"type":"text","text":"cut \ud83d here \uDE00 and 😀 \u00e9"}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, "", "call_t", small, ""), 200, nil)
	a := callTool(t, c, plugSessA, "purge_control", `{"action":"restore","key":"tc-call_t"}`)
	if !a.OK || len(a.Content) != 1 || "["+string(a.Content[0])+"]" != small {
		t.Fatalf("one page: %s, want %s", a.Content, small)
	}
}

func equalUnits(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSplitTextBlocksLiteral splits a long text block on its literal:
// lone surrogates survive and a pair is never cut.
func TestSplitTextBlocksLiteral(t *testing.T) {
	content := []byte(`[{"type":"image","data":"QQ==","mimeType":"image/png"},{"type":"text","text":"ab\ud83dcd\ud83d\ude00e\uDE00"}]`)
	blocks, err := api.SplitTextBlocks(content, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint16
	for _, b := range blocks[1:] {
		var blk struct {
			Text json.RawMessage `json:"text"`
		}
		if err := json.Unmarshal(b, &blk); err != nil {
			t.Fatal(err)
		}
		u := decodeLiteral(t, blk.Text)
		if len(u) > 3 {
			t.Fatalf("block %s: %d units", b, len(u))
		}
		got = append(got, u...)
	}
	want := []uint16{'a', 'b', 0xD83D, 'c', 'd', 0xD83D, 0xDE00, 'e', 0xDE00}
	if string(blocks[0]) != `{"type":"image","data":"QQ==","mimeType":"image/png"}` || !equalUnits(got, want) {
		t.Fatalf("blocks %s: units %x", blocks, got)
	}
}
