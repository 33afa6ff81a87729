package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testtree"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

// TestAutoCompactSQLiteRefused: on OpenClaw's SQLite store a compaction
// entry is never written (BrainSurgeon never inserts rows): every session
// over the thresholds is refused with the reason at debug, nothing changes,
// and the refused sessions are not read again until they change.
func TestAutoCompactSQLiteRefused(t *testing.T) {
	t.Setenv(summarize.EnvModel, "")
	ctx := context.Background()
	agents := testcorpus.Store(t)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := Open(ctx, Options{AgentsDir: agents, Open: opener(agents), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Config().Set(ctx, []byte(`{"compaction": {"auto_enabled": true, "context_window": 1000, "tokenizer": "chars/4", "auto_quiet_seconds": 0}}`)); err != nil {
		t.Fatal(err)
	}
	before := testtree.Snapshot(t, agents)
	r := d.autoCompact(ctx)
	if r == nil || r.Sessions == 0 || r.Refused == 0 || r.Compacted != 0 || r.Failed != 0 {
		t.Fatalf("auto-compaction on SQLite = %+v, want sessions refused, none compacted", r)
	}
	if !strings.Contains(buf.String(), "level=DEBUG") || !strings.Contains(buf.String(), "refused, tried again once it changes") {
		t.Errorf("want the refusals at debug:\n%s", buf.String())
	}
	testtree.Unchanged(t, agents, before)
	again := d.autoCompact(ctx)
	if again.Unchanged != r.Checked || again.Refused != 0 || again.Checked != 0 {
		t.Errorf("second pass = %+v, want every checked session unchanged (first: %+v)", again, r)
	}
	t.Logf("first pass %+v", r)
}
