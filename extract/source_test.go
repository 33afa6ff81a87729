package extract_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// randomJSONString returns a JSON string literal of random text written
// in every way JSON allows: raw UTF-8 of one to four bytes, \u escapes
// (lower and upper case hex, surrogate pairs, lone surrogates, NUL),
// short escapes and "\/".
func randomJSONString(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteByte('"')
	for range n {
		switch r.IntN(12) {
		case 0:
			fmt.Fprintf(&b, `\u%04x`, r.IntN(0xd800))
		case 1:
			hi, lo := 0xd800+r.IntN(0x400), 0xdc00+r.IntN(0x400)
			fmt.Fprintf(&b, `\u%04X\u%04x`, hi, lo) // a surrogate pair
		case 2:
			fmt.Fprintf(&b, `\u%04x`, 0xd800+r.IntN(0x800)) // a lone surrogate
		case 3:
			b.WriteString([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0000`}[r.IntN(9)])
		case 4:
			b.WriteRune(rune(0x80 + r.IntN(0x780))) // two bytes
		case 5:
			b.WriteRune(rune(0x800 + r.IntN(0xd000))) // three bytes
		case 6:
			b.WriteRune(rune(0x10000 + r.IntN(0xfffff))) // four bytes
		case 7:
			b.WriteString("\u2028\u2029<>&")
		default:
			if c := byte(0x20 + r.IntN(0x5f)); c != '"' && c != '\\' {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestSourceContentByteIdentity stores random content blocks as a source
// record and reads them back: the bytes are the ones given, whatever
// escapes and white space they hold.
func TestSourceContentByteIdentity(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 300 {
		sp := []string{"", " ", "\n  ", "\t"}[i%4]
		content := []byte("[" + sp + `{"type":"text",` + sp + `"text":` + randomJSONString(r, r.IntN(400)) + "}" + sp + "," +
			`{"type":"text","text":` + randomJSONString(r, r.IntN(50)) + `}` + sp + "]")
		if !json.Valid(content) {
			t.Fatalf("case %d: the generator made invalid JSON: %s", i, content)
		}
		details := []byte(`{"exitCode":` + fmt.Sprint(i) + `,"note":` + randomJSONString(r, 20) + `}`)
		key, err := extract.SourceKey(fmt.Sprintf("call_%d|fc-%d", i, i))
		if err != nil {
			t.Fatal(err)
		}
		rec := &extract.Record{Session: "main/s", EntryID: key, TriggerType: string(bs.TriggerToolResult), ExtractedAt: at,
			Extra: map[string]json.RawMessage{"source": json.RawMessage(`{"tool_call_id":"x"}`)}}
		rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, content, []byte(`[{"type":"text","text":"[[extracted-`+key+`]]"}]`), at))
		rec.Put(extract.NewStoredValue(extract.SourceDetailsPath, bs.TriggerToolResult, false, details, []byte(`null`), at))
		data, err := extract.EncodeRecord(rec)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		back, err := extract.DecodeRecord(data)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		got, err := extract.SourceContent(back)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("case %d: content %q, want %q (%v)", i, got, content, err)
		}
		d, err := extract.SourceDetails(back)
		if err != nil || !bytes.Equal(d, details) {
			t.Fatalf("case %d: details %q, want %q (%v)", i, d, details, err)
		}
		if back.EntryID != key || string(back.Extra["source"]) != `{"tool_call_id":"x"}` {
			t.Fatalf("case %d: key %q, extra %s", i, back.EntryID, back.Extra)
		}
	}
}

func TestSourceKey(t *testing.T) {
	for _, tc := range []struct {
		id, want, err string
	}{
		{"call_1", "tc-call_1", ""},
		{"toolu_01ABC", "tc-toolu_01ABC", ""},
		{"call_1|fc_2", "tc-call_1|fc_2", ""},
		{"", "", "found an empty id"},
		{"a b", "", "expected"},
		{"a/b", "", "expected"},
		{"é", "", "expected"},
		{strings.Repeat("x", 198), "", "expected"},
		{"functions.exec:0", "tc-functions.exec:0", ""},
		{"a]]b", "", "would break the placeholder"},
		{"a[b", "", "would break the placeholder"},
		{`a"b`, "", "would break the placeholder"},
		{"a<b", "", "would break the placeholder"},
	} {
		got, err := extract.SourceKey(tc.id)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("SourceKey(%q) = %q, %v; want %q, %q", tc.id, got, err, tc.want, tc.err)
		}
	}
}

func TestOwnKeys(t *testing.T) {
	result := `{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"exec","content":[{"type":"text","text":"[[extracted-tc-call_1]] stored"}]}}`
	other := `{"type":"message","id":"r2","parentId":"a1","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"toolResult","toolCallId":"call_2","toolName":"exec","content":[{"type":"text","text":"quotes [[extracted-tc-call_1]]"}]}}`
	user := `{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"[[extracted-tc-call_1]] [[extracted-u1]]"}]}}`
	for _, tc := range []struct {
		line string
		keys []string
		own  bool
	}{
		{result, []string{"r1", "tc-call_1"}, true},
		{other, []string{"r2", "tc-call_2"}, false},
		{user, []string{"u1"}, true},
	} {
		e := entry.Parse([]byte(tc.line), 1, 0)
		if got := extract.OwnKeys(e); fmt.Sprint(got) != fmt.Sprint(tc.keys) {
			t.Errorf("OwnKeys(%s) = %v, want %v", e.ID, got, tc.keys)
		}
		if got := extract.HoldsOwnPlaceholder(e.Raw, e); got != tc.own {
			t.Errorf("HoldsOwnPlaceholder(%s) = %v, want %v", e.ID, got, tc.own)
		}
	}
}
