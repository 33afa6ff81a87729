package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/api"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// TestPluginSourceBuildsPlaceholder stores tool results whose requests
// carry no placeholder: the daemon builds it (agenttools.BuildPlaceholder
// with the request's session, the tool label and the configured
// source_preview_chars), stores it in the side record as a plugin's own
// used to be stored, and answers it with the settings in force, which
// GET /api/plugin/v1/health shows too and a config change updates.
func TestPluginSourceBuildsPlaceholder(t *testing.T) {
	ctx := context.Background()
	f := newPlugFixture(t)
	d := newDaemon(t, f.set)
	c := &client{tb: t, srv: serve(t, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: d})}
	settings := func(want agenttools.SourceSettings) {
		t.Helper()
		var h struct {
			agenttools.SourceSettings
			OK bool `json:"ok"`
		}
		c.json("GET", "/api/plugin/v1/health", "", 200, &h)
		if !h.OK || h.SourceSettings != want {
			t.Fatalf("plugin health shows %+v, want %+v", h.SourceSettings, want)
		}
	}
	settings(agenttools.SourceSettings{OffloadAboveChars: 40000, PreviewChars: 400})

	content := `[{"type":"text","text":"` + strings.Repeat("abcdefghij", 20) + `\ud83d"},{"type":"image","data":"AAAA"}]`
	details := `{"exitCode":1,"aggregated":"big","status":"failed"}`
	for _, tt := range []struct {
		name, callID, label, details, key string
		preview                           int
	}{
		{"default preview, label, details", "call_b1", "read", details, "agent:main:main", 400},
		{"no label, no details, no key", "call_b2", "", "", "", 400},
		{"preview set in the config", "call_b3", "", details, "", 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.preview != 400 {
				if _, err := d.Config().Set(ctx, []byte(fmt.Sprintf(`{"source_preview_chars":%d,"source_offload_above_chars":5000}`, tt.preview))); err != nil {
					t.Fatal(err)
				}
				settings(agenttools.SourceSettings{OffloadAboveChars: 5000, PreviewChars: tt.preview})
			}
			body := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"session_key":%q,"run_id":"run-1","tool_call_id":%q,"tool_name":"tool_call","tool_label":%q,"key":%q,"content":%s`,
				plugSessA, tt.key, tt.callID, tt.label, "tc-"+tt.callID, content)
			if tt.details != "" {
				body += `,"details":` + tt.details
			}
			body += "}"
			var out api.SourceResponse
			c.json("POST", "/api/plugin/v1/source", body, 200, &out)
			label := tt.label
			if label == "" {
				label = "tool_call"
			}
			wantContent, wantDetails, err := agenttools.BuildPlaceholder(agenttools.PlaceholderInput{Key: "tc-" + tt.callID, Tool: label,
				Session: "main/" + plugSessA, Content: json.RawMessage(content), Details: json.RawMessage(tt.details),
				PreviewChars: tt.preview, Bytes: len(content), SHA256: out.SHA256})
			if err != nil {
				t.Fatal(err)
			}
			if string(out.PlaceholderContent) != string(wantContent) || string(out.PlaceholderDetails) != string(wantDetails) {
				t.Fatalf("answer's placeholder:\n got %s %s\nwant %s %s", out.PlaceholderContent, out.PlaceholderDetails, wantContent, wantDetails)
			}
			if !strings.Contains(string(out.PlaceholderContent), "stored this "+label+" result (201 characters and 1 image)") {
				t.Errorf("placeholder %s does not name the label %s", out.PlaceholderContent, label)
			}
			want := agenttools.SourceSettings{OffloadAboveChars: 40000, PreviewChars: 400}
			if tt.preview != 400 {
				want = agenttools.SourceSettings{OffloadAboveChars: 5000, PreviewChars: tt.preview}
			}
			if out.SourceSettings != want {
				t.Errorf("answer's settings %+v, want %+v", out.SourceSettings, want)
			}
			rec, err := extract.LoadRecord(ctx, f.set.Side, f.ref(t, plugSessA), "tc-"+tt.callID)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := rec.Value(extract.SourceContentPath)
			if !ok || string(v.Placeholder) != string(wantContent) {
				t.Errorf("stored placeholder %s, want %s", v.Placeholder, wantContent)
			}
			d, ok := rec.Value(extract.SourceDetailsPath)
			switch {
			case tt.details == "" && ok:
				t.Errorf("a result without details got a details value %s", d.Placeholder)
			case tt.details != "" && (!ok || string(d.Placeholder) != string(wantDetails)):
				t.Errorf("stored details placeholder %s, want %s", d.Placeholder, wantDetails)
			}
		})
	}

	// placeholder_details without placeholder_content is refused.
	body := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"tool_call_id":"call_b9","tool_name":"exec","key":"tc-call_b9","content":%s,"placeholder_details":{"a":1}}`, plugSessA, content)
	if code, b, _ := c.do("POST", "/api/plugin/v1/source", body); code != 400 || !strings.Contains(string(b), "placeholder_details: expected none without placeholder_content") {
		t.Fatalf("placeholder_details alone: %d %s", code, b)
	}
}
