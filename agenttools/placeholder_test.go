package agenttools_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/agenttools"
)

var update = flag.Bool("update", false, "rewrite testdata/TestBuildPlaceholder/golden.json from the plugin's JavaScript buildPlaceholder")

// placeholderCase is one input of the source placeholder and, in the
// golden file, what it must give. Content and Details are JSON texts as
// the plugin sends them (JSON.stringify of the values).
type placeholderCase struct {
	Name       string          `json:"name"`
	Key        string          `json:"key"`
	Tool       string          `json:"tool"`
	AgentID    string          `json:"agent_id,omitempty"`
	SessionID  string          `json:"session_id,omitempty"`
	SessionKey string          `json:"session_key,omitempty"`
	Preview    int             `json:"preview"`
	Bytes      int             `json:"bytes"`
	SHA256     string          `json:"sha256"`
	Content    json.RawMessage `json:"content,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	// ContentJSON and DetailsJSON (golden file) are the JSON texts the
	// plugin sent; DetailsJSON is "" for absent details.
	ContentJSON string `json:"content_json,omitempty"`
	DetailsJSON string `json:"details_json,omitempty"`
	WantContent string `json:"want_content,omitempty"`
	WantDetails string `json:"want_details,omitempty"`
	WantSession string `json:"want_session,omitempty"`
}

// placeholderCases are the inputs of TestBuildPlaceholder.
var placeholderCases = []placeholderCase{
	{Name: "plain", Key: "tc-call_1", Tool: "exec", AgentID: "main", SessionID: "s-1", Preview: 400, Bytes: 123, SHA256: "abc",
		Content: json.RawMessage(`[{"type":"text","text":"` + repeat("0123456789", 300) + `"}]`),
		Details: json.RawMessage(`{"status":"completed","ok":true,"success":true,"error":null,"timedOut":false,"exitCode":3,"aggregated":"big","nested":{"a":1}}`)},
	{Name: "emoji", Key: "tc-e", Tool: "read", SessionKey: "agent:ops:main", Preview: 7, Bytes: 9, SHA256: "f00",
		Content: json.RawMessage(`[{"type":"text","text":"😀é漢字` + repeat("😀", 40) + `a\n\"b\\c\u0001\u2028<>&"}]`)},
	{Name: "lone surrogates", Key: "tc-l", Tool: "t", SessionID: "s", Preview: 3, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"\ud83d` + repeat("x", 20) + `\ude00\udc00"},{"type":"text","text":"\ud800\ud83d\ude00"}]`)},
	{Name: "images", Key: "tc-i", Tool: "browser", Preview: 10, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"` + repeat("y", 100) + `"}]`)},
	{Name: "two images", Key: "tc-i2", Tool: "browser", Preview: 10, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"image","data":"AAAA"},{"type":"image","data":"BBBB"}]`), Details: json.RawMessage(`["status"]`)},
	{Name: "empty texts", Key: "tc-0", Tool: "t", Preview: 400, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":""},{"type":"text","text":""},null,"text",{"type":"text","text":5},{"type":"text"}]`)},
	{Name: "several text blocks", Key: "tc-m", Tool: "exec", SessionID: "s-2", SessionKey: "agent:dev:x", Preview: 30, Bytes: 5, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"` + repeat("a", 50) + `"},{"type":"text","text":"` + repeat("b", 50) + `"},{"type":"text","text":"` + repeat("c", 50) + `"}]`),
		Details: json.RawMessage(`{"exitCode":0,"status":"x"}`)},
	{Name: "preview 0", Key: "tc-call|fc_1", Tool: "t", Preview: 0, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"` + repeat("z", 5000) + `"}]`)},
	{Name: "preview above a quarter", Key: "tc-k", Tool: "t", Preview: 5000, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"` + repeat("x", 2000) + `"}]`)},
	{Name: "session needing quoting", Key: "tc-q", Tool: "my tool", SessionKey: "agent:main:it's a $key", Preview: 2, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"abcdefgh"}]`)},
	{Name: "session id with agent from the key", Key: "tc-r", Tool: "t", SessionID: "s 1", SessionKey: "agent:ops:main", Preview: 1, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"abcd"}]`)},
	{Name: "session named <session>", Key: "tc-s", Tool: "t", SessionKey: "<session>", Preview: 1, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"abcd"}]`)},
	{Name: "details with nested values", Key: "tc-d", Tool: "t", Preview: 1, Bytes: 1, SHA256: "s",
		Content: json.RawMessage(`[{"type":"text","text":"abcd"}]`),
		Details: json.RawMessage(`{"error":{"message":"x\u00e9\ud83d","code":[1,2.5]},"success":false,"other":1}`)},
}

func repeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }

// placeholderScript runs the plugin's buildPlaceholder and cliSession on
// the cases read from stdin and prints, per case, the JSON texts of the
// content and details it built and the session it named.
const placeholderScript = `
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
const { buildPlaceholder, cliSession } = await import(pathToFileURL(join(process.argv[1], "offload.js")).href);
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map((c) => {
  const session = cliSession({ agentId: c.agent_id, sessionId: c.session_id, sessionKey: c.session_key });
  const ph = buildPlaceholder({ key: c.key, toolName: c.tool, content: c.content, details: c.details, previewChars: c.preview, bytes: c.bytes, sha256: c.sha256, session });
  return { content: JSON.stringify(c.content), details: c.details === undefined ? undefined : JSON.stringify(c.details),
    want_content: JSON.stringify(ph.content), want_details: JSON.stringify(ph.details), want_session: session };
});
console.log(JSON.stringify(out));
`

const placeholderGolden = "testdata/TestBuildPlaceholder/golden.json"

// TestBuildPlaceholder checks that the Go source placeholder is byte for
// byte what the plugin's JavaScript buildPlaceholder built, for the cases
// of the golden file (written from the JavaScript with -update).
func TestBuildPlaceholder(t *testing.T) {
	if *update {
		writePlaceholderGolden(t)
	}
	b, err := os.ReadFile(placeholderGolden)
	if err != nil {
		t.Fatal(err)
	}
	var cases []placeholderCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatalf("%s: %v", placeholderGolden, err)
	}
	if len(cases) != len(placeholderCases) {
		t.Errorf("%s holds %d cases, the test %d: run go test -update", placeholderGolden, len(cases), len(placeholderCases))
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

// writePlaceholderGolden runs placeholderScript over placeholderCases and
// writes the golden file.
func writePlaceholderGolden(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("-update needs node: %v", err)
	}
	dir, err := filepath.Abs(pluginDir)
	if err != nil {
		t.Fatal(err)
	}
	in, err := json.Marshal(placeholderCases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--input-type=module", "-e", placeholderScript, dir)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []struct {
		Content     string  `json:"content,omitempty"`
		Details     *string `json:"details"`
		WantContent string  `json:"want_content"`
		WantDetails string  `json:"want_details"`
		WantSession string  `json:"want_session"`
	}
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(placeholderCases) {
		t.Fatalf("node printed %.300q: %v", out, err)
	}
	cases := make([]placeholderCase, len(placeholderCases))
	for i, c := range placeholderCases {
		c.Content, c.Details = nil, nil
		c.ContentJSON = got[i].Content
		if got[i].Details != nil {
			c.DetailsJSON = *got[i].Details
		}
		c.WantContent, c.WantDetails, c.WantSession = got[i].WantContent, got[i].WantDetails, got[i].WantSession
		cases[i] = c
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cases); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(placeholderGolden), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(placeholderGolden, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
