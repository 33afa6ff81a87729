package engine

import (
	"encoding/json"
	"fmt"
	"strings"
)

// condenseRun returns the oldest run of fanout top-level summaries of one
// level among tops, or nil.
func condenseRun(tops []*SummaryRecord, fanout int) []*SummaryRecord {
	for i := 0; i+fanout <= len(tops); i++ {
		run := tops[i : i+fanout]
		same := true
		for _, t := range run[1:] {
			same = same && t.Level == run[0].Level
		}
		if same {
			return run
		}
	}
	return nil
}

// condenseJob prepares the condensation of run: the children's texts
// (their pinned sections carried forward as they are).
func condenseJob(run []*SummaryRecord) *job {
	j := &job{rec: SummaryRecord{Level: run[0].Level + 1, Layer: layerCondense}}
	var pinned strings.Builder
	for _, c := range run {
		text, carried := splitPinned(c.Text)
		pinned.WriteString(carried)
		j.rec.Children = append(j.rec.Children, c.ID)
		j.rec.TokensBefore += c.TokensBefore
		j.rec.Pinned = append(j.rec.Pinned, c.Pinned...)
		j.input = append(j.input, childLine(c, text))
	}
	j.pinned = pinned.String()
	return j
}

// childLine renders a summary as a user message line the summarizer
// reads as part of the conversation.
func childLine(c *SummaryRecord, text string) []byte {
	body := fmt.Sprintf("Summary %s (level %d) of an earlier part of the conversation:\n\n%s", c.ID, c.Level, text)
	b, _ := json.Marshal(body) // a string always encodes
	return []byte(`{"type":"message","id":"` + c.ID + `","message":{"role":"user","content":[{"type":"text","text":` + string(b) + `}]}}`)
}

// splitPinned splits a summary text into its own part and the body of its
// pinned section ("" when it has none).
func splitPinned(text string) (own, pinned string) {
	if i := strings.Index(text, pinnedHeading); i >= 0 {
		return text[:i], text[i+len(pinnedHeading):]
	}
	return text, ""
}
