package agenttools_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/agenttools"
)

// placeholderCase is one case of the golden file: the input of the
// source placeholder and what it must give.
type placeholderCase struct {
	Name       string `json:"name"`
	Key        string `json:"key"`
	Tool       string `json:"tool"`
	AgentID    string `json:"agent_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	SessionKey string `json:"session_key,omitempty"`
	Preview    int    `json:"preview"`
	Bytes      int    `json:"bytes"`
	SHA256     string `json:"sha256"`
	// ContentJSON and DetailsJSON are the JSON texts the plugin sends
	// (JSON.stringify of the values); DetailsJSON is "" for absent
	// details.
	ContentJSON string `json:"content_json,omitempty"`
	DetailsJSON string `json:"details_json,omitempty"`
	WantContent string `json:"want_content,omitempty"`
	WantDetails string `json:"want_details,omitempty"`
	WantSession string `json:"want_session,omitempty"`
}

const placeholderGolden = "testdata/TestBuildPlaceholder/golden.json"

// TestBuildPlaceholder checks that the Go source placeholder is byte for
// byte what the plugin's JavaScript buildPlaceholder built before the
// daemon took it over: the golden file was written by that JavaScript
// (commit 5dc7dfe ran it through node for each case: emoji, lone
// surrogates, images, empty texts, several text blocks, preview 0, a
// preview above a quarter of the text, session names that need quoting,
// reserved details keys), and pins the placeholder's text, its details
// and the session the CLI hint names.
func TestBuildPlaceholder(t *testing.T) {
	b, err := os.ReadFile(placeholderGolden)
	if err != nil {
		t.Fatal(err)
	}
	var cases []placeholderCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("%s: %v", placeholderGolden, err)
	}
	if len(cases) < 13 {
		t.Errorf("%s holds %d cases, want the 13 written from the JavaScript", placeholderGolden, len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			session := agenttools.SourceSession(c.AgentID, c.SessionID, c.SessionKey)
			if session != c.WantSession {
				t.Errorf("SourceSession = %q, want %q", session, c.WantSession)
			}
			content, details, err := agenttools.BuildPlaceholder(agenttools.PlaceholderInput{Key: c.Key, Tool: c.Tool, Session: session,
				Content: json.RawMessage(c.ContentJSON), Details: json.RawMessage(c.DetailsJSON), PreviewChars: c.Preview, Bytes: c.Bytes, SHA256: c.SHA256})
			if err != nil {
				t.Fatal(err)
			}
			if string(content) != c.WantContent {
				t.Errorf("content:\n got %s\nwant %s", content, c.WantContent)
			}
			if string(details) != c.WantDetails {
				t.Errorf("details:\n got %s\nwant %s", details, c.WantDetails)
			}
		})
	}
}
