package doctor

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/brainsurgeon/brainsurgeon/entry"
)

// decodeMessage is the reference reading of the pairing fields: the line
// decoded by encoding/json, member by member (duplicates: the last wins).
func decodeMessage(raw []byte) *msgInfo {
	var env struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(raw, &env) != nil || len(env.Message) == 0 || env.Message[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(env.Message, &m) != nil {
		return nil
	}
	info := &msgInfo{role: str(m["role"])}
	switch info.role {
	case "assistant":
		info.stopReason = str(m["stopReason"])
		var blocks []json.RawMessage
		if json.Unmarshal(m["content"], &blocks) != nil {
			return info
		}
		for _, raw := range blocks {
			var b map[string]json.RawMessage
			if json.Unmarshal(raw, &b) != nil || !toolCallTypes[str(b["type"])] || str(b["id"]) == "" {
				continue
			}
			c := toolCall{id: str(b["id"])}
			if n, ok := b["name"]; ok && len(n) > 0 && n[0] == '"' {
				c.name, c.hasName = str(n), true
			}
			info.calls = append(info.calls, c)
		}
	case "toolResult":
		for _, k := range resultIDMembers {
			if id := strings.TrimSpace(str(m[k])); id != "" {
				info.resultID = id
				break
			}
		}
	default:
		return nil
	}
	return info
}

var parseSeeds = []string{
	`{"type":"message","id":"a1","parentId":null,"message":{"role":"assistant","content":[{"type":"text","text":"x"},{"type":"toolCall","id":"c1","name":"read","arguments":{"p":"\"id\":\"no\""}}],"stopReason":"toolUse"}}`,
	`{"type":"message","id":"a2","message":{"role":"assistant","content":[{"type":"toolUse","id":"c2"},{"type":"functionCall","id":"","name":"x"},{"type":"toolCall","id":"c3","name":5}],"stopReason":"aborted"}}`,
	`{"type":"message","id":"r1","message":{"role":"toolResult","toolCallId":"  c1 ","content":[{"type":"text","text":"{\"toolCallId\":\"fake\"}"}],"details":{"toolCallId":"nested"}}}`,
	`{"type":"message","id":"r2","message":{"role":"toolResult","toolCallId":"","tool_use_id":"c9","content":[]}}`,
	`{"type":"message","id":"r3","message":{"role":"toolResult","toolCallId":"a","toolCallId":"b"}}`,
	`{"type":"message","id":"u1","message":{"role":"user","content":"assistant"}}`,
	`{"type":"message","id":"x","message":{"role":"assistant","content":"plain"}}`,
	`{"type":"message","id":"e\u0301","message":{"role":"assistant","content":[{"type":"toolCall","id":"c\u00e9\n","name":"n\"q"}]}}`,
}

// parseMessage, which reads the store scanner's string values, agrees with
// decoding the whole line.
func TestParseMessageMatchesDecoding(t *testing.T) {
	for _, s := range parseSeeds {
		checkParse(t, []byte(s))
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkParse(t, raw) })
}

func checkParse(t *testing.T, raw []byte) {
	t.Helper()
	e := entry.Parse(raw, 1, 0)
	if e == nil || e.Type != "message" || (e.Role != "assistant" && e.Role != "toolResult") {
		return
	}
	if !jsontext.Value(raw).IsValid(jsontext.AllowInvalidUTF8(true)) {
		// A member named twice (or not one JSON value): hosts write lines
		// with JSON.stringify, which never names a member twice, and the
		// reference below keeps the last of two names where the store's
		// string listing has every string.
		return
	}
	want := decodeMessage(raw)
	if want == nil {
		return // not one valid message object by encoding/json: the store calls it malformed
	}
	if got := parseMessage(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nparseMessage %+v\ndecoding     %+v", raw, got, want)
	}
}
