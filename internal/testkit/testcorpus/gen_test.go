package testcorpus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestGenerateDeterministic: the self-made corpus is the same on every run.
func TestGenerateDeterministic(t *testing.T) {
	a, b := generate(), generate()
	if len(a) != len(b) {
		t.Fatalf("%d files, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("%s: differs between two runs", a[i].Name)
		}
	}
}

// TestSelfMadeShapes checks that the self-made corpus has every shape the real corpus has, and that every line
// is one JSON value except the malformed and glued lines put there on purpose.
func TestSelfMadeShapes(t *testing.T) {
	want := map[string]int{}
	var total int
	for _, f := range SelfMadeFiles() {
		total += len(f.Data)
		if !bytes.HasSuffix(f.Data, []byte("\n")) {
			t.Errorf("%s: no trailing newline", f.Name)
		}
		lines := bytes.SplitAfter(f.Data, []byte("\n"))
		for i, l := range lines {
			if len(l) == 0 {
				continue
			}
			body := bytes.TrimRight(l, "\r\n")
			if bytes.HasSuffix(l, []byte("\r\n")) {
				want["crlf"]++
			}
			if !json.Valid(body) {
				dec := json.NewDecoder(bytes.NewReader(body))
				var v1, v2 json.RawMessage
				if dec.Decode(&v1) == nil && dec.Decode(&v2) == nil {
					want["glued"]++
				} else {
					want["malformed"]++
				}
				continue
			}
			var e struct {
				Type     string          `json:"type"`
				Version  *int            `json:"version"`
				ID       *string         `json:"id"`
				Parent   json.RawMessage `json:"parentId"`
				FirstIdx *int            `json:"firstKeptEntryIndex"`
				FirstID  *string         `json:"firstKeptEntryId"`
				Message  struct {
					Role    string `json:"role"`
					Content json.RawMessage
				} `json:"message"`
				Flat string `json:"__id"`
			}
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("%s line %d: %v", f.Name, i+1, err)
			}
			switch {
			case e.Type == "session" && e.Version == nil:
				want["v1 header"]++
			case e.Type == "session":
				want["v"+string(rune('0'+*e.Version))+" header"]++
			case e.Flat != "":
				want["flat entry"]++
			case e.ID == nil:
				want["v1 entry without id"]++
			}
			if e.Type == "compaction" && e.FirstIdx != nil {
				want["v1 compaction"]++
			}
			if e.Type == "compaction" && e.FirstID != nil {
				want["v3 compaction"]++
			}
			c := string(e.Message.Content)
			if strings.Contains(c, `"type":"image"`) {
				want["image"]++
			}
			if strings.Contains(c, `"type":"thinking"`) {
				want["thinking"]++
			}
			if e.Message.Role == "toolResult" && len(c) > 50_000 {
				want["big tool result"]++
			}
			if e.Message.Role == "hookMessage" {
				want["hookMessage"]++
			}
			if bytes.Contains(body, []byte(`\ud83d"`)) || bytes.Contains(body, []byte(`\ud83d `)) || bytes.Contains(body, []byte(`"\udc00`)) ||
				bytes.Contains(body, []byte(` \udc00`)) {
				want["lone surrogate"]++
			}
			if bytes.Contains(body, []byte(`"model":"delivery-mirror"`)) {
				want["branch (delivery-mirror sibling)"]++
			}
		}
	}
	for _, shape := range []string{"v1 header", "v2 header", "v3 header", "v1 entry without id", "flat entry",
		"v1 compaction", "v3 compaction", "image", "thinking", "big tool result", "hookMessage", "lone surrogate",
		"branch (delivery-mirror sibling)", "crlf", "glued", "malformed"} {
		if want[shape] == 0 {
			t.Errorf("self-made corpus has no %s", shape)
		}
	}
	t.Logf("self-made corpus: %d files, %d bytes; shapes %v", len(SelfMadeFiles()), total, want)
}

// TestStoreSchema: the committed DDL splits into the store's CREATE statements.
func TestStoreSchema(t *testing.T) {
	ddl := StoreSchema()
	if len(ddl) < 50 {
		t.Fatalf("%d statements", len(ddl))
	}
	var tables int
	for _, s := range ddl {
		if !strings.HasPrefix(s, "CREATE ") {
			t.Errorf("statement does not start with CREATE: %.60q", s)
		}
		if strings.HasPrefix(s, "CREATE TABLE transcript_events") || strings.HasPrefix(s, "CREATE TABLE session_nodes") {
			tables++
		}
	}
	if tables != 2 {
		t.Errorf("transcript_events and session_nodes: found %d of them", tables)
	}
}
