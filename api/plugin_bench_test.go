package api_test

import (
	"fmt"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/api"
)

// BenchmarkPluginSource stores a 200,000-character tool result (two text
// blocks, JSON escapes and multi-byte characters) at the source through
// POST /api/plugin/v1/source on a loopback server: request parsing, the
// conflict check, the side record written and synced, the answer. Each
// iteration stores under a new tool-call id. TMPDIR chooses the disk.
func BenchmarkPluginSource(b *testing.B) {
	f := newPlugFixture(b)
	srv := serve(b, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: b, srv: srv}
	content := twoBlockContent()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, plugKeyA, fmt.Sprintf("call_b%d", i), content, ""), 200, nil)
	}
}

// BenchmarkPluginSourceBuilt is BenchmarkPluginSource with a request
// that carries no placeholder, as the plugin sends it: the daemon also
// builds the placeholder (head and tail previews of 400 characters) and
// answers it.
func BenchmarkPluginSourceBuilt(b *testing.B) {
	f := newPlugFixture(b)
	srv := serve(b, api.Options{Installation: f.set.Installation, Backend: f.set, Daemon: newDaemon(b, f.set)})
	c := &client{tb: b, srv: srv}
	content := twoBlockContent()
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		callID := fmt.Sprintf("call_b%d", i)
		body := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"session_key":%q,"run_id":"run-1","tool_call_id":%q,"tool_name":"exec","tool_label":"exec","key":%q,"content":%s}`,
			plugSessA, plugKeyA, callID, "tc-"+callID, content)
		var a struct {
			PlaceholderContent []map[string]any `json:"placeholder_content"`
		}
		c.json("POST", "/api/plugin/v1/source", body, 200, &a)
		if len(a.PlaceholderContent) != 1 {
			b.Fatalf("the answer holds %d placeholder blocks, want 1", len(a.PlaceholderContent))
		}
	}
}

// twoBlockContent is the tool result of the source benchmarks: 200,000
// characters with JSON escapes and multi-byte characters, in two text
// blocks.
func twoBlockContent() string {
	half := []rune(bigText(200_000, "NEEDLE"))
	return "[" + `{"type":"text","text":` + escapedJSON(string(half[:100_000])) + `},{"type":"text","text":` + escapedJSON(string(half[100_000:])) + `}]`
}

// BenchmarkPluginRestorePage reads one 15,000-character page from the
// middle of a stored 200,000-character tool result through POST
// /api/plugin/v1/tool (purge_control restore with offset and max_chars).
func BenchmarkPluginRestorePage(b *testing.B) {
	f := newPlugFixture(b)
	srv := serve(b, api.Options{Installation: f.set.Installation, Backend: f.set})
	c := &client{tb: b, srv: srv}
	content := `[{"type":"text","text":` + escapedJSON(bigText(200_000, "NEEDLE")) + `}]`
	c.json("POST", "/api/plugin/v1/source", sourceBody(plugSessA, plugKeyA, "call_page", content, ""), 200, nil)
	req := fmt.Sprintf(`{"agent_id":"main","session_id":%q,"tool_call_id":"call_t","tool":"purge_control","params":{"action":"restore","key":"tc-call_page","offset":100000,"max_chars":15000}}`, plugSessA)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var a toolAnswer
		c.json("POST", "/api/plugin/v1/tool", req, 200, &a)
		if !a.OK {
			b.Fatalf("restore page: %s", a.Error)
		}
	}
}
