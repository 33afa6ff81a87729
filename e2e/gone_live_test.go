//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/openclaw"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// deleteKey and deleteSessionID are the second session of TestGoneAfterHostResetLive, one the host may delete
// (it refuses to delete the main session).
const (
	deleteKey       = "agent:main:e2e-delete"
	deleteSessionID = "6c1f0a52-58f4-4c2e-9d3b-0e8f2f7d9a11"
)

type clockAt time.Time

func (c clockAt) Now() time.Time { return time.Time(c) }

// TestGoneAfterHostResetLive has a real OpenClaw 2026.7.35 gateway reset one pruned session (sessions.reset)
// and delete another (sessions.delete), as /new and the Control UI do. The host archives their transcripts as
// "<id>.jsonl.reset.<ts>" and "<id>.jsonl.deleted.<ts>" and never looks at extracted/. Retention (the
// values of deleted sessions go first) then takes both sessions for gone: within the retention
// window nothing of theirs goes; once it has passed, their side data goes even in scope "orphans" (nothing
// refers to it any more), their side directories are removed, and the host's archives are byte for byte what
// the host wrote. The session the reset started, and any live session, is not gone.
func TestGoneAfterHostResetLive(t *testing.T) {
	oracle.Require(t)
	h := openclaw.NewHost(t, openclaw.V7, func(st *openclaw.State) error {
		if _, err := st.Seed("main", sessionKey, seedSessionID, corpusFile(t, seedFile)); err != nil {
			return err
		}
		_, err := st.Seed("main", deleteKey, deleteSessionID, corpusFile(t, seedFile))
		return err
	})
	agents := h.State.AgentsDir()
	dir := h.State.SessionsDir("main")
	writeConfig(t, agents, map[string]any{"enabled": true, "age_threshold_hours": 0, "idle_seconds": 0,
		"min_value_length": 200, "min_saving_tokens": 0})
	if rep, r := prune(t, agents, seedSessionID); rep.Status != "extracted" { // the pass prunes both
		t.Fatalf("prune: status %q: %s", rep.Status, r)
	}
	side := func(id string) bool {
		_, err := os.Stat(filepath.Join(dir, "extracted", id))
		return err == nil
	}
	if !side(seedSessionID) || !side(deleteSessionID) {
		t.Fatal("the passes left no side directories")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r, err := h.Gateway.CLI(ctx, "gateway", "call", "sessions.reset", "--params", `{"key":"`+sessionKey+`","reason":"new"}`, "--json"); err != nil {
		t.Fatalf("sessions.reset: %v\n%s", err, r)
	}
	if r, err := h.Gateway.CLI(ctx, "gateway", "call", "sessions.delete", "--params", `{"key":"`+deleteKey+`","deleteTranscript":true}`, "--json"); err != nil {
		t.Fatalf("sessions.delete: %v\n%s", err, r)
	}
	// What the host did: both transcripts archived under their ids.
	archives := map[string]string{} // archive path → sha256
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		switch k := session.ClassifyFile(e.Name()); {
		case k == session.FileKindTranscript && (strings.HasPrefix(e.Name(), seedSessionID) || strings.HasPrefix(e.Name(), deleteSessionID)):
			t.Fatalf("the host left the transcript %s in place after reset/delete: %v", e.Name(), names)
		case k == session.FileKindResetArchive || k == session.FileKindDeletedArchive:
			p := filepath.Join(dir, e.Name())
			archives[p] = fileSHA(t, p)
		}
	}
	if len(archives) != 2 {
		t.Fatalf("want a reset and a deleted archive in %s, found %v", dir, names)
	}
	t.Logf("host archives: %v", names)

	set, err := backend.Open(ctx, agents, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(at time.Time) retention.Stats {
		t.Helper()
		cfg := config.Default()
		cfg.Retention, cfg.RetentionScope = "1h", config.ScopeOrphans
		st, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir,
			Config: cfg, Clock: clockAt(at)})
		if err != nil || st.Errors != 0 {
			t.Fatalf("retention: %+v, %v", st, err)
		}
		return st
	}
	if st := run(time.Now()); st.Gone != 2 || st.Cleaned != 0 {
		t.Fatalf("retention within the window: %+v, want 2 gone sessions and nothing cleaned", st)
	}
	if !side(seedSessionID) || !side(deleteSessionID) {
		t.Fatal("side data of the gone sessions went before it expired")
	}
	if st := run(time.Now().Add(48 * time.Hour)); st.Gone != 2 || st.Cleaned < 2 {
		t.Fatalf("retention after expiry: %+v, want the packs of the 2 gone sessions cleaned", st)
	}
	if side(seedSessionID) || side(deleteSessionID) {
		t.Fatal("side directories of the gone sessions are still there after they expired")
	}
	for p, sum := range archives {
		if got := fileSHA(t, p); got != sum {
			t.Errorf("retention changed the host's archive %s", p)
		}
	}
	if st := run(time.Now().Add(48 * time.Hour)); st.Gone != 0 || st.Cleaned != 0 {
		t.Errorf("a second retention run: %+v, want nothing left to do", st)
	}
}
