package extract

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestMarshalIndexMatchesJSON checks the hand-written index encoding
// against encoding/json, byte for byte, on random indexes (odd ids and
// zones take the encoding/json path inside marshalIndex).
func TestMarshalIndexMatchesJSON(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		id := rapid.StringMatching(`[A-Za-z0-9._:\-]{1,12}|[<>&"\\ é\x01]{1,4}`)
		tm := rapid.Custom(func(rt *rapid.T) time.Time {
			t := time.Unix(rapid.Int64Range(-1e11, 3e11).Draw(rt, "sec"), rapid.Int64Range(0, 999999999).Draw(rt, "ns"))
			switch rapid.IntRange(0, 2).Draw(rt, "zone") {
			case 0:
				return t.UTC()
			case 1:
				return t.In(time.FixedZone("x", rapid.IntRange(-50000, 50000).Draw(rt, "off")))
			}
			return t.In(time.FixedZone("y", 3600*rapid.IntRange(-12, 12).Draw(rt, "h")))
		})
		ix := &packIndex{Format: PackFormat, PassTime: tm.Draw(rt, "pass")}
		if rapid.Bool().Draw(rt, "entries") {
			ix.Entries = map[string]packEntry{}
			for range rapid.IntRange(0, 20).Draw(rt, "n") {
				ix.Entries[id.Draw(rt, "id")] = packEntry{
					Offset: rapid.Int64Range(0, 1<<40).Draw(rt, "off"), Length: rapid.Int64Range(0, 1<<30).Draw(rt, "len"),
					Start: rapid.Int64Range(0, 3).Draw(rt, "start"), Size: rapid.Int64Range(0, 1<<30).Draw(rt, "size"),
					SHA256: rapid.StringMatching(`[0-9a-f]{64}|<&>`).Draw(rt, "sum"), Time: tm.Draw(rt, "time")}
			}
		}
		if rapid.Bool().Draw(rt, "deleted") {
			ix.Deleted = map[string]time.Time{}
			for range rapid.IntRange(0, 5).Draw(rt, "nd") {
				ix.Deleted[id.Draw(rt, "did")] = tm.Draw(rt, "dtime")
			}
		}
		want, werr := json.Marshal(ix)
		got, gerr := marshalIndex(ix)
		if (werr != nil) != (gerr != nil) {
			rt.Fatalf("errors differ: %v vs %v", gerr, werr)
		}
		if !bytes.Equal(got, want) {
			rt.Fatalf("marshalIndex:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}
