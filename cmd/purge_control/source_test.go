package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
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
