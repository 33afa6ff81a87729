package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// touched is the test's own reading of the files a stretch of lines
// touches through pi's file tools, decoded with encoding/json and maps
// (independent of the package's parser): the most recent file modified,
// the most recent file only read, and all of them.
type touched struct {
	lastModified, lastRead string
	modified, read         map[string]bool
}

func touchedFiles(lines [][]byte) touched {
	tc := touched{modified: map[string]bool{}, read: map[string]bool{}}
	type op struct {
		path string
		mod  bool
	}
	var ops []op
	for _, l := range lines {
		var e struct {
			Message struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &e) != nil || e.Message.Role != "assistant" {
			continue
		}
		var blocks []map[string]any
		if json.Unmarshal(e.Message.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b["type"] != "toolCall" {
				continue
			}
			name, _ := b["name"].(string)
			args, _ := b["arguments"].(map[string]any)
			p, _ := args["path"].(string)
			if p == "" {
				p, _ = args["file_path"].(string)
			}
			if p == "" {
				continue
			}
			switch name {
			case "read":
				ops = append(ops, op{p, false})
			case "write", "edit":
				ops = append(ops, op{p, true})
			}
		}
	}
	for _, o := range ops {
		if o.mod {
			tc.modified[o.path] = true
		}
	}
	for _, o := range ops {
		if !tc.modified[o.path] {
			tc.read[o.path] = true
		}
	}
	for i := len(ops) - 1; i >= 0; i-- {
		o := ops[i]
		if tc.modified[o.path] && tc.lastModified == "" {
			tc.lastModified = o.path
		}
		if !tc.modified[o.path] && tc.lastRead == "" {
			tc.lastRead = o.path
		}
	}
	return tc
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// TestCorpusProperties runs the extraction, the deterministic summary and
// the prompt over every corpus transcript, whole and in windows of 300
// lines: nothing panics, the summary stays within its limit, is marked
// degraded, names the files most recently modified and read, and the
// facts list every file the tool calls touch.
func TestCorpusProperties(t *testing.T) {
	d := &Deterministic{}
	for _, path := range testcorpus.Transcripts(t) {
		t.Run(testcorpus.Name(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			all := splitLines(b)
			windows := [][][]byte{all}
			for i := 0; i < len(all); i += 300 {
				windows = append(windows, all[i:min(i+300, len(all))])
			}
			for wi, lines := range windows {
				input := inputSize(lines)
				sum, err := d.Summarize(context.Background(), lines, "")
				s, degraded := sum.Text, sum.Degraded
				if err != nil || !degraded {
					t.Fatalf("window %d: degraded %v err %v", wi, degraded, err)
				}
				if lim := d.Limit(input); len(s) > lim || len(s) > DefaultMaxBytes {
					t.Errorf("window %d: summary %d bytes, limit %d", wi, len(s), lim)
				}
				if !strings.Contains(s, "## Goal") || !strings.Contains(s, "## Next Steps") {
					t.Errorf("window %d: summary lacks the skeleton", wi)
				}
				tc := touchedFiles(lines)
				f := ExtractFacts(lines)
				mod, read := setOf(f.FilesModified), setOf(f.FilesRead)
				for p := range tc.modified {
					if !mod[p] {
						t.Errorf("window %d: facts miss modified file %q", wi, p)
					}
				}
				for p := range tc.read {
					if !read[p] && !mod[p] {
						t.Errorf("window %d: facts miss read file %q", wi, p)
					}
				}
				// The summary has room for the latest files unless its
				// input is tiny.
				if input >= 20_000 {
					if tc.lastModified != "" && !strings.Contains(s, tc.lastModified) {
						t.Errorf("window %d: summary does not name the latest modified file %q", wi, tc.lastModified)
					}
					if tc.lastRead != "" && !strings.Contains(s, tc.lastRead) {
						t.Errorf("window %d: summary does not name the latest read file %q", wi, tc.lastRead)
					}
				}
				if wi == 0 {
					p := BuildPrompt(lines, "", Aggressive)
					if !strings.Contains(p.User, "## Critical Context") || len(p.User) > aggressiveMaxChars+len(p.PreviousSummary)+8000 {
						t.Errorf("aggressive prompt: %d bytes", len(p.User))
					}
					if _, err := json.Marshal(f); err != nil {
						t.Errorf("facts do not encode: %v", err)
					}
				}
			}
		})
	}
}

func setOf(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}
