package sidemigrate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/s3test"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
	"github.com/brainsurgeon/brainsurgeon/sidemigrate"
)

// transcript renders an OpenClaw v3 transcript with one large tool
// result per id.
func transcript(session string, ids ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`+"\n", session)
	parent := "null"
	for i, id := range ids {
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:%02d:00.000Z","message":{"role":"toolResult","toolCallId":"c-%s","toolName":"exec","content":[{"type":"text","text":%q}],"isError":false,"timestamp":1767225600000}}`+"\n",
			id, parent, i, id, strings.Repeat(fmt.Sprintf("output of %s in %s, some words; ", id, session), 60))
		parent = fmt.Sprintf("%q", id)
	}
	return b.Bytes()
}

// install is an agents dir with OpenClaw's SQLite store for agent main
// and JSONL transcripts of agent "files" (up to jsonl corpus files of up
// to maxSize bytes, and a generated one), every file old enough to be
// written.
func install(t *testing.T, jsonl int, maxSize int64) (agents string, paths []string) {
	t.Helper()
	agents = testcorpus.Store(t)
	dir := filepath.Join(agents, "files", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range testcorpus.Transcripts(t) {
		if fi, err := os.Stat(f); err != nil || fi.Size() > maxSize || n >= jsonl {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("c%02d.jsonl", n))
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
		n++
	}
	p := filepath.Join(dir, "g1.jsonl")
	if err := os.WriteFile(p, transcript("g1", "a1", "a2", "a3", "a4"), 0o600); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, p)
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		os.Chtimes(p, old, old)
	}
	return agents, paths
}

// openSet opens agents as the commands do: with the config's side store.
func openSet(t *testing.T, agents string) *backend.Set {
	t.Helper()
	c, err := config.Load(context.Background(), agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := backend.Open(context.Background(), agents, backend.FromConfig(c, nil))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// rows reads every line of every session.
func rows(t *testing.T, set *backend.Set) map[string][][]byte {
	t.Helper()
	ctx := context.Background()
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][][]byte{}
	for _, ref := range refs {
		tr, err := set.Store.Open(ctx, ref, nil)
		if err != nil {
			t.Fatal(err)
		}
		for e, err := range tr.Entries(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			out[ref.Identity()] = append(out[ref.Identity()], bytes.Clone(e.Raw))
		}
	}
	return out
}

func pass(t *testing.T, set *backend.Set, c config.Config) *prune.Report {
	t.Helper()
	rep, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(context.Background(), nil)
	if err != nil || rep.Failed > 0 {
		t.Fatalf("pass: %v %+v", err, rep)
	}
	return rep
}

// TestMigrateRoundTrip moves the values of an installation (a copy of a
// real SQLite store and of every JSONL corpus transcript up to 1 MB,
// per-entry files of an earlier version) from the local
// pack store to S3 and back: verify is clean at every step, every value
// reads back byte for byte, and a pristine restore at the end gives every
// transcript back as it was.
func TestMigrateRoundTrip(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	agents, _ := install(t, 1000, 1<<20)
	cfg := sidetest.PassConfig(t, agents, "local", 300)
	set := openSet(t, agents)
	orig := rows(t, set)
	pass(t, set, cfg)
	placeholders := verifyAll(t, set)
	if placeholders == 0 {
		t.Fatal("nothing extracted")
	}
	// Per-entry files of an earlier version in g1's side dir: one newer
	// than the packs (it wins and must be folded), one older (it loses).
	g1, err := set.Store.Resolve(ctx, "files/g1")
	if err != nil {
		t.Fatal(err)
	}
	sideDir := filepath.Join(agents, "files", "sessions", "extracted", "g1")
	legacy := []byte(`{"output":"a legacy value","__meta":{"extracted_at":"2025-01-01T00:00:00Z","trigger_type":"tool_result"}}`)
	lost := []byte(`{"output":"an older legacy value","__meta":{}}`)
	for name, data := range map[string][]byte{"legacy1.json": legacy, "a2.json": lost} {
		p := filepath.Join(sideDir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-48 * time.Hour)
	os.Chtimes(filepath.Join(sideDir, "a2.json"), past, past)
	a2, err := set.Side.Get(ctx, g1, "a2")
	if err != nil {
		t.Fatal(err)
	}

	target := srv.URL("fleet")
	rep, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: set, To: target})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Phase != "switched" || rep.PacksCopied == 0 || rep.ConvertedFiles != 1 || rep.Generation != 1 || rep.Verified < rep.PacksCopied {
		t.Fatalf("to S3: %+v", rep)
	}
	t.Logf("local → S3: %+v", rep)
	if c, _ := config.Load(ctx, agents, nil); c.SideStore != target {
		t.Fatalf("config side_store %q, want %q", c.SideStore, target)
	}
	// The old set may no longer change the local store.
	if err := set.Side.Put(ctx, g1, []bs.SideRecord{{EntryID: "late", Data: []byte("{}\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := set.Side.Sync(ctx, g1); !errors.Is(err, bs.ErrChanged) {
		t.Fatalf("a write through the old store after the switch: %v, want ErrChanged", err)
	}
	remote := openSet(t, agents)
	if got := verifyAll(t, remote); got != placeholders {
		t.Fatalf("%d placeholders verify on S3, %d locally", got, placeholders)
	}
	for id, want := range map[string][]byte{"legacy1": legacy, "a2": a2.Data} {
		got, err := remote.Side.Get(ctx, g1, id)
		if err != nil || !bytes.Equal(got.Data, want) {
			t.Errorf("%s on S3: %.60q, %v; want %.60q", id, got.Data, err, want)
		}
	}
	if again, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: remote, To: target}); err != nil || again.Phase != "already" {
		t.Fatalf("again: %+v %v", again, err)
	}

	// A pack the local store holds and S3 lacks (written behind the
	// store's back): the way back refuses it unless --replace.
	stray := sidedir.New(remote.Store.(sidedir.Locator))
	if err := stray.Put(ctx, g1, []bs.SideRecord{{EntryID: "stray", Data: []byte("{}\n")}}); err != nil {
		t.Fatal(err)
	}
	if err := stray.Sync(ctx, g1); err != nil {
		t.Fatal(err)
	}
	if _, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: remote, To: "local"}); !errors.Is(err, bs.ErrInvalid) || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("back over a stray pack: %v", err)
	}
	rep, err = sidemigrate.Run(ctx, sidemigrate.Options{Set: remote, To: "local", Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Phase != "switched" || rep.Replaced != 1 || rep.PacksCopied != 1 || rep.Generation != 2 {
		t.Fatalf("back to local: %+v (the folded pack is the one pack local lacks)", rep)
	}
	t.Logf("S3 → local: %+v", rep)
	back := openSet(t, agents)
	if got := verifyAll(t, back); got != placeholders {
		t.Fatalf("%d placeholders verify back home, %d before", got, placeholders)
	}
	if _, err := back.Side.Get(ctx, g1, "stray"); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("the stray record after --replace: %v", err)
	}
	refs, _, _ := back.Store.Sessions(ctx)
	r := restore.New(back.Store, back.Side, back.StateDir)
	for _, ref := range refs {
		if _, err := r.RestoreAll(ctx, ref, true); err != nil {
			t.Fatal(err)
		}
	}
	now := rows(t, back)
	for id, lines := range orig {
		if len(now[id]) != len(lines) {
			t.Fatalf("%s: %d lines, was %d", id, len(now[id]), len(lines))
		}
		for i := range lines {
			if !bytes.Equal(now[id][i], lines[i]) {
				t.Fatalf("%s line %d differs after the round trip and a pristine restore", id, i+1)
			}
		}
	}
}

// TestMigrateResumes: a migration killed at any point (here: its context
// cancelled after k locations, ten times at different points) resumes
// when run again, copies nothing twice that it verified, and ends with
// every value in the target; until the switch, the local store is the
// one in use and verifies clean.
func TestMigrateResumes(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	agents, _ := install(t, 8, 300<<10)
	cfg := sidetest.PassConfig(t, agents, "local", 300)
	set := openSet(t, agents)
	pass(t, set, cfg)
	placeholders := verifyAll(t, set)
	target := srv.URL("resume")
	runs, copied := 0, 0
	for k := 1; ; k++ {
		runs++
		ctx, cancel := context.WithCancel(context.Background())
		stop := k % 4 // locations before the kill
		rep, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: openSet(t, agents), To: target, Progress: func(p sidemigrate.Progress) {
			if stop > 0 && p.Done >= stop {
				cancel()
			}
		}})
		cancel()
		if rep != nil {
			copied += rep.PacksCopied
		}
		if err == nil {
			if rep.Phase != "switched" {
				t.Fatalf("finished with %+v", rep)
			}
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: %v", runs, err)
		}
		if got := verifyAll(t, openSet(t, agents)); got != placeholders {
			t.Fatalf("after run %d, %d placeholders verify locally, %d before", runs, got, placeholders)
		}
		if runs > 12 {
			t.Fatal("no end")
		}
	}
	packs := len(srv.Keys(t, "resume/"))
	if copied != packs {
		t.Errorf("%d packs sent over %d runs for %d packs in the target: each must be sent once", copied, runs, packs)
	}
	if got := verifyAll(t, openSet(t, agents)); got != placeholders {
		t.Fatalf("%d placeholders verify on S3, %d before", got, placeholders)
	}
	t.Logf("%d runs, %d packs", runs, packs)
}

// TestMigrateWhilePassesRun: a pass that writes into the local store
// during the copy rounds has its values carried over by the last round;
// a pass through a set opened before the switch cannot write after it
// (its transcript is untouched); every placeholder verifies on S3.
func TestMigrateWhilePassesRun(t *testing.T) {
	srv := s3test.Start(t)
	srv.Env(t)
	ctx := context.Background()
	agents, _ := install(t, 4, 300<<10)
	cfg := sidetest.PassConfig(t, agents, "local", 300)
	old := openSet(t, agents)
	pass(t, old, cfg)
	dir := filepath.Join(agents, "files", "sessions")
	wrote := false
	rep, err := sidemigrate.Run(ctx, sidemigrate.Options{Set: openSet(t, agents), To: srv.URL("live"), Progress: func(p sidemigrate.Progress) {
		if wrote || p.Round != 1 {
			return
		}
		wrote = true
		// A new session appears and a pass of another process extracts it.
		p2 := filepath.Join(dir, "late.jsonl")
		if err := os.WriteFile(p2, transcript("late", "b1", "b2", "b3"), 0o600); err != nil {
			t.Error(err)
		}
		past := time.Now().Add(-time.Hour)
		os.Chtimes(p2, past, past)
		other := openSet(t, agents)
		if rep := pass(t, other, cfg); rep.Written == 0 {
			t.Errorf("the pass during the migration extracted nothing: %+v", rep)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rounds < 2 {
		t.Errorf("%d rounds, want the last one under the lock too", rep.Rounds)
	}
	// After the switch: another new session, and a pass through the old set.
	p3 := filepath.Join(dir, "after.jsonl")
	data := transcript("after", "c1", "c2", "c3")
	if err := os.WriteFile(p3, data, 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	os.Chtimes(p3, past, past)
	rep2, err := prune.New(old.Store, old.Side, old.StateDir, cfg, nil).Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep2.Sessions {
		if s.Session == "files/after" && (s.Status != prune.StatusBusy || !strings.Contains(s.Note, "side migrate")) {
			t.Errorf("a pass through the old store after the switch: %s %q, want busy naming side migrate", s.Status, s.Note)
		}
		if s.Status == prune.StatusExtracted {
			t.Errorf("a pass through the old store after the switch extracted %s", s.Session)
		}
	}
	if now, _ := os.ReadFile(p3); !bytes.Equal(now, data) {
		t.Fatal("the refused pass changed the transcript")
	}
	remote := openSet(t, agents)
	pass(t, remote, cfg)
	if n := verifyAll(t, remote); n == 0 {
		t.Fatal("no placeholders")
	}
	late, err := remote.Store.Resolve(ctx, "files/late")
	if err != nil {
		t.Fatal(err)
	}
	if infos, err := remote.Side.List(ctx, late); err != nil || len(infos) == 0 {
		t.Fatalf("the values written during the migration are not on S3: %v %v", infos, err)
	}
}

// verifyAll is sidetest.VerifyAll of set's sessions and side store.
func verifyAll(t *testing.T, set *backend.Set) int {
	t.Helper()
	return sidetest.VerifyAll(t, set.Store, set.Side)
}
