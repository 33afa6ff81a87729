package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/agenttools"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestPurgeControlRestoreSource restores a tool result stored at the
// source by its key: the stored text, and nothing written.
func TestPurgeControlRestoreSource(t *testing.T) {
	f := newFixture(t, 0)
	side := sidedir.New(sidetest.Store(""))
	at := time.Now()
	rec := &extract.Record{Session: f.ref.String(), EntryID: "tc-call_9", TriggerType: string(bs.TriggerToolResult), ExtractedAt: at}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false,
		[]byte(`[{"type":"text","text":"stored \u00e9 result"},{"type":"image","data":"eA==","mimeType":"image/png"}]`), []byte(`[]`), at))
	ctx := context.Background()
	if _, err := extract.SaveRecord(ctx, side, f.ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, f.ref); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.path)
	code, out, errs := f.run(t, "restore", "tc-call_9", "--agent", "main", "--session", "direct:123")
	want(t, code, 0, out, errs)
	if !strings.HasPrefix(out, "stored é result\n") || !strings.Contains(out, "Restored tc-call_9") || !strings.Contains(out, "1 non-text blocks not shown") {
		t.Fatalf("output:\n%s", out)
	}
	after, _ := os.ReadFile(f.path)
	if !bytes.Equal(before, after) {
		t.Fatal("restoring a source key changed the transcript")
	}
	code, out, errs = f.run(t, "restore", "tc-call_404", "--agent", "main", "--session", "direct:123")
	if code == 0 || !strings.Contains(errs, "not found in this session") {
		t.Fatalf("missing key: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestPurgeControlRestoreSourcePage prints one page of a source value
// with --offset and --max-chars; bad values are a wrong command line.
func TestPurgeControlRestoreSourcePage(t *testing.T) {
	f := newFixture(t, 0)
	side := sidedir.New(sidetest.Store(""))
	at := time.Now()
	text := strings.Repeat("0123456789", 250) // 2,500 characters
	rec := &extract.Record{Session: f.ref.String(), EntryID: "tc-call_p", TriggerType: string(bs.TriggerToolResult), ExtractedAt: at}
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false,
		[]byte(`[{"type":"text","text":"`+text[:7]+`"},{"type":"text","text":"`+text[7:]+`"}]`), []byte(`[]`), at))
	ctx := context.Background()
	if _, err := extract.SaveRecord(ctx, side, f.ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, f.ref); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"first page", []string{"--max-chars", "1000"}, 0,
			"[BrainSurgeon tc-call_p: characters 0–1,000 of 2,500 (page 1 of 3). Next: purge_control restore tc-call_p --offset 1000 --max-chars 1000]\n" + text[:1000] + "\n"},
		{"last page", []string{"--offset", "2000"}, 0,
			"[BrainSurgeon tc-call_p: characters 2,000–2,500 of 2,500 (page 2 of 2, the last page).]\n" + text[2000:] + "\n"},
		{"offset at the end", []string{"--offset", "2500"}, 2, "--offset: expected 0…2499"},
		{"max-chars too small", []string{"--max-chars", "10"}, 2, "--max-chars: expected an integer from 1,000 to 100,000, found 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := f.run(t, append([]string{"restore", "tc-call_p", "--agent", "main", "--session", "direct:123"}, tc.args...)...)
			if code != tc.code || (code == 0 && out != tc.out) || (code != 0 && !strings.Contains(errs, tc.out)) {
				t.Fatalf("exit %d, want %d\nstdout:\n%.300s\nstderr:\n%s", code, tc.code, out, errs)
			}
		})
	}
	code, out, errs := f.run(t, "restore", "e1", "--offset", "5", "--agent", "main", "--session", "direct:123")
	if code != 2 || !strings.Contains(errs, "--offset and --max-chars page a tool result") {
		t.Fatalf("entry with --offset: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestPurgeControlPagesLikeThePlugin pages a stored value holding a lone
// surrogate escape and an escaped emoji at page boundaries: every page the
// command prints with --json has the offsets, numbers and text of the page
// the plugin's restore answers (agenttools.PageOf over the stored
// literals).
func TestPurgeControlPagesLikeThePlugin(t *testing.T) {
	f := newFixture(t, 0)
	side := sidedir.New(sidetest.Store(""))
	at := time.Now()
	lit := strings.Repeat("x", 999) + `\ud83d` + strings.Repeat("y", 998) + `\ud83d\ude00` + strings.Repeat("中", 600) + `\n`
	rec := &extract.Record{Session: f.ref.String(), EntryID: "tc-call_s", TriggerType: string(bs.TriggerToolResult), ExtractedAt: at}
	content := []byte(`[{"type":"text","text":"` + lit[:500] + `"},{"type":"text","text":"` + lit[500:] + `"}]`)
	rec.Put(extract.NewStoredValue(extract.SourceContentPath, bs.TriggerToolResult, false, content, []byte(`[]`), at))
	ctx := context.Background()
	if _, err := extract.SaveRecord(ctx, side, f.ref, rec); err != nil {
		t.Fatal(err)
	}
	if err := side.Sync(ctx, f.ref); err != nil {
		t.Fatal(err)
	}
	lits, _, err := extract.SourceTextLiterals(content)
	if err != nil {
		t.Fatal(err)
	}
	sv := &restore.SourceValue{Key: "tc-call_s", Content: content, TextLiterals: lits}
	pages := 0
	for off := 0; ; pages++ {
		exp, err := agenttools.PageOf(sv, off, 1000)
		if err != nil {
			t.Fatal(err)
		}
		code, out, errs := f.run(t, "restore", "tc-call_s", "--offset", strconv.Itoa(off), "--max-chars", "1000", "--json", "--agent", "main", "--session", "direct:123")
		want(t, code, 0, out, errs)
		var got struct {
			agenttext.Page
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("offset %d: %v\n%s", off, err, out)
		}
		if got.Offset != exp.Offset || got.End != exp.End || got.TotalChars != exp.TotalChars || got.Number != exp.Number ||
			got.Pages != exp.Pages || got.Text != exp.Text || (got.NextOffset == nil) != exp.Last() {
			t.Fatalf("offset %d: the command printed %+v, the plugin's page is %+v", off, got, exp)
		}
		if exp.Last() {
			break
		}
		off = *exp.NextOffset
	}
	if pages < 2 {
		t.Fatalf("%d pages: the value should take several", pages+1)
	}
}
