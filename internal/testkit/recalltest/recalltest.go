// Package recalltest holds the synthetic transcript the recall and
// portable tests share: an extracted tool result, an abandoned branch and
// two compactions, the second condensing the first.
package recalltest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// Fixture is a small v3 transcript with an extracted tool result, an
// abandoned branch and two compactions, the second condensing the first:
//
//	u1 a1 r1 a2 | u2 a3 c1 | u3 a4 c2 u4   (active path; c2 keeps from u3)
//	            x1                         (off the path, child of a2)
var Fixture = []string{
	`{"type":"session","version":3,"id":"sess-1","timestamp":"2026-07-01T09:00:00.000Z","cwd":"/w"}`,
	`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-07-01T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"find the alpha config"}]}}`,
	`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-07-01T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"alpha.conf"}}]}}`,
	`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-07-01T09:00:03.000Z","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"[[extracted-r1]]"}],"isError":false}}`,
	`{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-07-01T09:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Alpha says \"beta\" is on"}]}}`,
	`{"type":"message","id":"x1","parentId":"a2","timestamp":"2026-07-01T09:00:05.000Z","message":{"role":"user","content":[{"type":"text","text":"abandoned gamma idea"}]}}`,
	`{"type":"message","id":"u2","parentId":"a2","timestamp":"2026-07-01T09:00:06.000Z","message":{"role":"user","content":[{"type":"text","text":"now delta"}]}}`,
	`{"type":"message","id":"a3","parentId":"u2","timestamp":"2026-07-01T09:00:07.000Z","message":{"role":"assistant","content":[{"type":"text","text":"delta done"}]}}`,
	`{"type":"compaction","id":"c1","parentId":"a3","timestamp":"2026-07-01T09:00:08.000Z","summary":"Summary: alpha, beta, delta","firstKeptEntryId":"u2","tokensBefore":5000,"details":{"readFiles":["alpha.conf"],"modifiedFiles":[]},"fromHook":false}`,
	`{"type":"message","id":"u3","parentId":"c1","timestamp":"2026-07-01T09:00:09.000Z","message":{"role":"user","content":[{"type":"text","text":"epsilon please"}]}}`,
	`{"type":"message","id":"a4","parentId":"u3","timestamp":"2026-07-01T09:00:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"epsilon ok"}]}}`,
	`{"type":"compaction","id":"c2","parentId":"a4","timestamp":"2026-07-01T09:00:11.000Z","summary":"Condensed: alpha to epsilon","firstKeptEntryId":"u3","tokensBefore":7000,"details":{"readFiles":[],"modifiedFiles":[],"brainsurgeon":{"layer":"summarize","trigger":"manual","level":1,"covers":["c1"]}},"fromHook":true}`,
	`{"type":"message","id":"u4","parentId":"c2","timestamp":"2026-07-01T09:00:12.000Z","message":{"role":"user","content":[{"type":"text","text":"zeta"}]}}`,
}

// Secret is the extracted value of r1 in Fixture (a JSON string).
const Secret = `"alpha = secret-value-42\nline two"`

// Open writes lines as main/sessions/sess-1.jsonl in a temp agents dir,
// stores r1's extracted value (Secret) in a side store and opens the
// transcript.
func Open(tb testing.TB, lines []string) (bs.Transcript, bs.SideStore) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "sess-1.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	tr, err := session.Open(ctx, path, bs.SessionRef{Agent: "main"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	side := sidedir.New(sidedir.Fixed(filepath.Join(dir, "extracted", "sess-1")))
	at := time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC)
	rec := &extract.Record{Format: extract.Format, Session: "main/sess-1", EntryID: "r1", TriggerType: "tool_result", ExtractedAt: at,
		Values: []extract.StoredValue{extract.NewStoredValue("/message/content/0/text", bs.TriggerToolResult, false, []byte(Secret), []byte(`"[[extracted-r1]]"`), at)}}
	if _, err := extract.SaveRecord(ctx, side, tr.Ref(), rec); err != nil {
		tb.Fatal(err)
	}
	if err := side.Sync(ctx, tr.Ref()); err != nil {
		tb.Fatal(err)
	}
	return tr, side
}
