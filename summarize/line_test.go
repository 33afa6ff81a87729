package summarize

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// usedView keeps the fields of a view that the summaries read for its
// role (facts.go and prompt.go), and nothing for a line they pass over.
func usedView(v view, ok bool) view {
	if !ok || v.role == roleOther {
		return view{}
	}
	u := view{role: v.role, id: v.id}
	switch v.role {
	case roleUser, roleCustom:
		u.text, u.images = v.text, v.images
	case roleAssistant:
		u.text, u.thinking, u.calls, u.images = v.text, v.thinking, v.calls, v.images
		u.stopReason, u.errorMessage = v.stopReason, v.errorMessage
	case roleToolResult:
		u.text, u.images, u.callID, u.toolName = v.text, v.images, v.callID, v.toolName
		u.isError, u.exitCode, u.hasExit = v.isError, v.exitCode, v.hasExit
	case roleBash:
		u.command, u.output, u.excluded = v.command, v.output, v.excluded
		u.exitCode, u.hasExit = v.exitCode, v.hasExit
	case roleCompaction, roleBranchSummary:
		u.summary, u.readFiles, u.modifiedFiles = v.summary, v.readFiles, v.modifiedFiles
	}
	return u
}

// corpusFiles returns the self-made corpus, the package's synthetic
// transcript and, with BRAINSURGEON_SHARED set, every file of the shared
// corpus but the SQLite stores.
func corpusFiles(t *testing.T) []string {
	files := append(testcorpus.Transcripts(t), "testdata/synthetic.jsonl")
	if shared := os.Getenv("BRAINSURGEON_SHARED"); shared != "" {
		err := filepath.WalkDir(filepath.Join(shared, "corpus"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !strings.HasSuffix(p, ".sqlite") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	return files
}

// TestReadLineMatchesParseLine reads every line of every corpus file with
// both the view built from entry (readLine) and the package's former
// parser (parseLine): the fields the summaries read must agree.
func TestReadLineMatchesParseLine(t *testing.T) {
	lines := 0
	var roles [roleCompaction + 1]int
	for _, path := range corpusFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, raw := range bytes.Split(b, []byte("\n")) {
			lines++
			want := usedView(parseLine(raw))
			got := usedView(readLine(raw))
			roles[got.role]++
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d: readLine\n%+v\nparseLine\n%+v", path, i+1, got, want)
			}
		}
	}
	t.Logf("%d lines compared; by role (other, user, assistant, tool result, bash, custom, branch summary, compaction): %v", lines, roles)
}

// FuzzReadLine compares readLine with parseLine on arbitrary lines.
func FuzzReadLine(f *testing.F) {
	if b, err := os.ReadFile("testdata/synthetic.jsonl"); err == nil {
		for _, l := range splitLines(b) {
			f.Add(l)
		}
	}
	for _, s := range []string{
		`{"type":"message","message":{"role":"user","content":"a\ud800b"}}`,
		`{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":"{\"path\":\"x.go\"}"}]}}`,
		`{"type":"message","message":{"role":"toolResult","toolCallId":"c","isError":true,"content":[{"type":"text","text":"x"}],"details":{"exitCode":2}}}{"glued":1}`,
		`{"type":"message","message":{"role":"bashExecution","command":"ls","output":"","exitCode":1,"excludeFromContext":true}}`,
		`{"type":"compaction","summary":"s","details":{"readFiles":[1,"a"],"modifiedFiles":["b"]}}`,
		`{"__id":"e1","type":"tool_result","output":"error: boom"}`,
		`{"__id":"e2","type":"thinking","thinking":"hmm"}`,
		`{"type":"custom_message","content":[{"type":"text","text":"c"},{"type":"image"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if duplicateNames(raw) {
			t.Skip("duplicate member names: the former parser read the last, readLine may read more")
		}
		want := usedView(parseLine(raw))
		got := usedView(readLine(raw))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q: readLine\n%+v\nparseLine\n%+v", raw, got, want)
		}
	})
}

// duplicateNames reports whether the first JSON value of raw has an object
// with two members of one name (which JSON.stringify never writes).
func duplicateNames(raw []byte) bool {
	_, err := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowInvalidUTF8(true)).ReadValue()
	return errors.Is(err, jsontext.ErrDuplicateName)
}
