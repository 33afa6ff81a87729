package daemon

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/demo"
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

// TestAutoCompactLeavesEngineSessions: a session the context engine served
// a view of within EngineServesWithin is left to the engine (its summaries
// live in the view; a compaction entry would summarize the same history
// twice), and the others are compacted as usual.
func TestAutoCompactLeavesEngineSessions(t *testing.T) {
	t.Setenv(summarize.EnvModel, "")
	t.Setenv(summarize.EnvBaseURL, "")
	ctx := context.Background()
	agents, sessions, err := demo.Write(t.TempDir(), demo.Options{Agents: []string{"main"}, Sessions: 2, Size: 96 << 10})
	if err != nil {
		t.Fatal(err)
	}
	// The window of the sessions' model comes from the host's config.
	if err := os.WriteFile(filepath.Join(filepath.Dir(agents), "openclaw.json"), []byte(`{"agents":{"defaults":{"contextTokens":1000}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := Open(ctx, Options{AgentsDir: agents, Open: opener(agents), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Config().Set(ctx, []byte(`{"compaction": {"auto_enabled": true, "context_window": 1000, "tokenizer": "chars/4",
		"auto_quiet_seconds": 0, "summarize_keep_recent": 200, "prune_min_tool_tokens": 100000000}}`)); err != nil {
		t.Fatal(err)
	}
	eng := d.Engine()
	if eng == nil {
		t.Fatal("no context engine")
	}
	served := sessions[0]
	dir := filepath.Join(eng.StateDir, "engine", served.Agent)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	state := fmt.Sprintf(`{"version":1,"compactions":0,"turns":[{"turn":1,"at":%q,"messages":3,"view_messages":3,"matched":3,"unmatched":0,"base_tokens":10,"predicted_tokens":10,"prefix_changed":false}],"calibration":{"ratio":1,"overhead":0,"samples":0}}`,
		time.Now().UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(filepath.Join(dir, served.ID+".json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(served.Path)
	if err != nil {
		t.Fatal(err)
	}
	r := d.autoCompact(ctx)
	if r == nil || r.Compacted != len(sessions)-1 || r.Failed != 0 {
		t.Fatalf("auto-compaction = %+v, want every session but the engine's compacted", r)
	}
	if after, _ := os.ReadFile(served.Path); !bytes.Equal(after, before) {
		t.Errorf("the session the engine serves was changed")
	}
	if !strings.Contains(buf.String(), "is served by the context engine") {
		t.Errorf("want a debug line for the session left to the engine:\n%s", buf.String())
	}
}
