package entry

import "testing"

func TestMarshalCompaction(t *testing.T) {
	type ours struct {
		Layer string `json:"layer"`
	}
	e := Compaction[ours]{Type: "compaction", ID: "a1b2c3d4", Timestamp: "2026-07-01T09:00:00.000Z",
		Summary: "<done> & kept", FirstKeptEntryID: "k", TokensBefore: 12, FromHook: true,
		Details: CompactionDetails[ours]{ReadFiles: []string{}, ModifiedFiles: []string{"a.go"}, BrainSurgeon: ours{Layer: "summarize"}}}
	got, err := Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"compaction","id":"a1b2c3d4","parentId":null,"timestamp":"2026-07-01T09:00:00.000Z","summary":"<done> & kept",` +
		`"firstKeptEntryId":"k","tokensBefore":12,"details":{"readFiles":[],"modifiedFiles":["a.go"],"brainsurgeon":{"layer":"summarize"}},"fromHook":true}`
	if string(got) != want {
		t.Errorf("Marshal =\n%s\nwant (pi's member order, no HTML escaping, no line break)\n%s", got, want)
	}
}
