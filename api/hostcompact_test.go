package api_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
)

// TestHostCompaction asks for the compaction a host writes itself: the
// summary, a first kept entry of the transcript and the details come back,
// nothing is written, and bad requests are refused with what was
// expected.
func TestHostCompaction(t *testing.T) {
	f := newFixture(t, false)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set})}
	// A session of about 150k tokens, which the layers can cut.
	id := "00000000-0000-4000-8000-0000000000c1"
	dir := filepath.Join(f.agents, "alpha", "sessions")
	writeSynth(t, dir, id, synth.Options{Size: 600 << 10, Seed: 7, MinResult: 1000, MaxResult: 4000})
	writeSessionsJSON(t, dir, "alpha", append(f.synthIDs, id))
	path := filepath.Join(dir, id+".jsonl")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range []string{"", "full"} {
		var out api.HostCompaction
		c.json("POST", "/api/plugin/v1/compaction", `{"agent_id":"alpha","session_id":"`+id+`","layer":"`+layer+`","custom_instructions":"keep the plan"}`, 200, &out)
		want := string(compact.LayerSummarize)
		if layer != "" {
			want = layer
		}
		if !out.OK || out.Layer != want || out.Summary == "" || out.TokensAfter >= out.TokensBefore {
			t.Fatalf("layer %q: %+v", layer, out)
		}
		if !bytes.Contains(before, []byte(`"id":"`+out.FirstKeptEntryID+`"`)) {
			t.Errorf("layer %q: first kept entry %q is not an entry of the transcript", layer, out.FirstKeptEntryID)
		}
		var d struct {
			ReadFiles     []string        `json:"readFiles"`
			ModifiedFiles []string        `json:"modifiedFiles"`
			BrainSurgeon  json.RawMessage `json:"brainsurgeon"`
		}
		if err := json.Unmarshal(out.Details, &d); err != nil || d.BrainSurgeon == nil || d.ReadFiles == nil || d.ModifiedFiles == nil {
			t.Errorf("layer %q: details %s (%v): want pi's file lists and BrainSurgeon's record", layer, out.Details, err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Fatal("the compaction for the host wrote the transcript")
	}
	for _, tc := range []struct{ body, want string }{
		{`{"agent_id":"alpha","session_id":"` + id + `","layer":"prune"}`, `layer: expected \"summarize\", \"full\" or none`},
		{`{"agent_id":"alpha","session_id":"` + id + `","custom_instructions":"` + strings.Repeat("x", api.MaxCompactInstructions+1) + `"}`, "custom_instructions: expected at most"},
		{`{"agent_id":"alpha"}`, "expected session_id or session_key"},
	} {
		code, b, _ := c.do("POST", "/api/plugin/v1/compaction", tc.body)
		if code != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%.60s: %d %s; want 400 saying %q", tc.body, code, b, tc.want)
		}
	}
	if code, _, _ := c.do("POST", "/api/plugin/v1/compaction", `{"agent_id":"alpha","session_id":"00000000-0000-4000-8000-00000000dead"}`); code != 404 {
		t.Errorf("an unknown session: %d, want 404", code)
	}
}
