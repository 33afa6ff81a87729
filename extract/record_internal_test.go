package extract

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// TestRecordHeadByHand: the hand-written head of a record is byte for
// byte what encoding/json writes, which the other strings still go
// through.
func TestRecordHeadByHand(t *testing.T) {
	for _, tc := range []struct {
		session, id, trigger string
		at                   time.Time
	}{
		{"main/abc", "a1b2c3d4", "thinking", time.Date(2026, 11, 22, 9, 30, 0, 123456789, time.UTC)},
		{"research/0000-4000", "msg-1", "tool_result", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"", "x", "", time.Time{}},
		{"a:b/c", "id_with.dots", "image", time.Date(2026, 6, 1, 0, 0, 0, 1000, time.FixedZone("CEST", 7200))},
	} {
		rec := &Record{Session: tc.session, EntryID: tc.id, TriggerType: tc.trigger, ExtractedAt: tc.at,
			Extra: map[string]json.RawMessage{"journal": json.RawMessage(`[1]`)}}
		rec.Put(newStoredValue("/message/content/0/text", bs.TriggerType("tool_result"), false, []byte(`"hello"`), []byte(`"[[extracted-x]]"`), tc.at))
		got, err := EncodeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		meta := *rec
		meta.Values = nil
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(&meta); err != nil {
			t.Fatal(err)
		}
		head := bytes.TrimRight(buf.Bytes(), "\n")
		i := bytes.Index(head, []byte(`"values":null`))
		if !bytes.HasPrefix(got, head[:i]) {
			t.Errorf("%+v:\n got %s\nwant a head of %s", tc, got, head[:i])
		}
		back, err := DecodeRecord(got)
		if err != nil || back.Session != rec.Session || back.EntryID != rec.EntryID || !back.ExtractedAt.Equal(rec.ExtractedAt) || string(back.Extra["journal"]) != `[1]` {
			t.Errorf("%+v: decoded %+v, %v", tc, back, err)
		}
	}
}
