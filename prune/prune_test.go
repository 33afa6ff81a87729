package prune_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// turns returns a header and n turns of a JSONL session: a user message,
// a tool result of 3,000 bytes (ids t<k>r) and an answer.
func turns(id string, n int) string {
	lines := []string{`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work"}`}
	parent := "null"
	for k := range n {
		p := fmt.Sprintf("t%d", k)
		out := strings.Repeat(fmt.Sprintf("output of turn %d. ", k), 200)[:3000]
		lines = append(lines,
			`{"type":"message","id":"`+p+`u","parentId":`+parent+`,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"go on"}]}}`,
			`{"type":"message","id":"`+p+`r","parentId":"`+p+`u","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"toolResult","toolCallId":"`+p+`c","toolName":"exec","content":[{"type":"text","text":"`+out+`"}],"isError":false}}`,
			`{"type":"message","id":"`+p+`a","parentId":"`+p+`r","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}`)
		parent = `"` + p + `a"`
	}
	return strings.Join(lines, "\n") + "\n"
}

// liveLock makes the transcript busy: a host-style lock held by a live
// process. release ends it.
func liveLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command("sleep", "120")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
			_ = os.Remove(path + ".lock")
		})
	}
	t.Cleanup(release)
	payload := fmt.Sprintf("{\n  \"pid\": %d,\n  \"createdAt\": %q\n}", cmd.Process.Pid, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
	if err := os.WriteFile(path+".lock", []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	return release
}

// TestWriteBacksPerSession queues two restore write-backs for one session
// and one for another while they are busy: the next pass applies all
// three, and each session's report counts its own.
func TestWriteBacksPerSession(t *testing.T) {
	ctx := context.Background()
	agents := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(agents, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	ids := []string{"wb-0001", "wb-0002"}
	for _, id := range ids {
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), []byte(turns(id, 4)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Enabled, cfg.IdleSeconds, cfg.MinValueLength, cfg.KeepRecent = true, 0, 500, 1
	cfg.MinSavingTokens, cfg.AgeThresholdHours = 0, 0
	set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	pass := prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
	rep, err := pass.Run(ctx, nil)
	if err != nil || len(rep.Sessions) != 2 || rep.Sessions[0].Status != prune.StatusExtracted || rep.Sessions[1].Status != prune.StatusExtracted {
		t.Fatalf("first pass: %v %+v", err, rep)
	}
	r := pass.Restorer()
	queue := func(id string, entries ...string) {
		ref, err := set.Store.Resolve(ctx, "main/"+id)
		if err != nil {
			t.Fatal(err)
		}
		release := liveLock(t, ref.Path)
		defer release()
		for _, e := range entries {
			res, err := r.Restore(ctx, ref, e, nil, restore.RestoreOptions{})
			if err != nil || !res.Queued {
				t.Fatalf("restore %s of %s: %v %+v", e, id, err, res)
			}
		}
	}
	queue(ids[0], "t0r", "t1r")
	queue(ids[1], "t0r")
	dry := prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
	dry.DryRun = true
	if rep, err := dry.Run(ctx, nil); err != nil {
		t.Fatal(err)
	} else if rep.PendingWriteBacks != 3 || rep.WriteBacks != 0 {
		t.Fatalf("dry run: pending_write_backs %d, write_backs %d; want 3 pending, none applied", rep.PendingWriteBacks, rep.WriteBacks)
	}
	rep, err = pass.Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.WriteBacks != 3 || rep.WriteBackError != "" {
		t.Fatalf("write_backs %d (%s), want 3", rep.WriteBacks, rep.WriteBackError)
	}
	want := map[string]int{"main/" + ids[0]: 2, "main/" + ids[1]: 1}
	sum := 0
	for _, s := range rep.Sessions {
		sum += s.WriteBacks
		if s.WriteBacks != want[s.Session] {
			t.Errorf("session %s: write_backs %d, want %d", s.Session, s.WriteBacks, want[s.Session])
		}
		if s.Status != prune.StatusWrittenBack {
			t.Errorf("session %s: %s %s, want %s", s.Session, s.Status, s.Note, prune.StatusWrittenBack)
		}
	}
	if sum != rep.WriteBacks {
		t.Errorf("the sessions' write_backs add up to %d, the report says %d", sum, rep.WriteBacks)
	}
}

// TestDryRunAgrees runs the same pass as a dry run and for real, under
// each gate of the real pass: the dry run reports what the real run then
// does, with the same statuses and counts, busy sessions with their real
// size and when they will be idle, and a reason when nothing is written.
func TestDryRunAgrees(t *testing.T) {
	cases := []struct {
		name    string
		enabled bool
		force   bool
		now     bool
		idle    int
		locked  bool
		// want is the status of every session in both runs (the real
		// run's), "" for ErrDisabled.
		want, wantReal string
		idleAt         bool
	}{
		{name: "disabled", enabled: false},
		{name: "quiet period", enabled: true, idle: 300, want: prune.StatusBusy, wantReal: prune.StatusBusy, idleAt: true},
		{name: "forced, disabled, quiet period", force: true, now: true, idle: 300, want: prune.StatusWouldExtract, wantReal: prune.StatusExtracted},
		{name: "no quiet period", enabled: true, want: prune.StatusWouldExtract, wantReal: prune.StatusExtracted},
		{name: "live lock, now", enabled: true, now: true, locked: true, want: prune.StatusBusy, wantReal: prune.StatusBusy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			agents := filepath.Join(t.TempDir(), "agents")
			dir := filepath.Join(agents, "main", "sessions")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			var paths []string
			for _, id := range []string{"dry-0001", "dry-0002"} {
				p := filepath.Join(dir, id+".jsonl")
				if err := os.WriteFile(p, []byte(turns(id, 4)), 0o600); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			if tc.locked {
				for _, p := range paths {
					liveLock(t, p)
				}
			}
			cfg := config.Default()
			cfg.Enabled, cfg.IdleSeconds, cfg.MinValueLength, cfg.KeepRecent = tc.enabled, tc.idle, 500, 1
			cfg.MinSavingTokens, cfg.AgeThresholdHours = 0, 0
			set, err := backend.Open(ctx, agents, backend.FromConfig(cfg, nil))
			if err != nil {
				t.Fatal(err)
			}
			run := func(dry bool) *prune.Report {
				p := prune.New(set.Store, set.Side, set.StateDir, cfg, nil)
				p.Force, p.Now, p.DryRun = tc.force, tc.now, dry
				rep, err := p.Run(ctx, nil)
				if tc.want == "" {
					if !errors.Is(err, prune.ErrDisabled) {
						t.Fatalf("dry run %v: %v, want ErrDisabled", dry, err)
					}
					return nil
				}
				if err != nil {
					t.Fatalf("dry run %v: %v", dry, err)
				}
				return rep
			}
			dry := run(true)
			real := run(false)
			if tc.want == "" {
				return
			}
			if len(dry.Sessions) != 2 || len(real.Sessions) != 2 {
				t.Fatalf("sessions: dry run %d, real run %d, want 2", len(dry.Sessions), len(real.Sessions))
			}
			for i := range dry.Sessions {
				d, r := dry.Sessions[i], real.Sessions[i]
				if d.Status != tc.want || r.Status != tc.wantReal {
					t.Errorf("%s: dry run %s, real run %s (%s); want %s, %s", d.Session, d.Status, r.Status, r.Note, tc.want, tc.wantReal)
				}
				if d.Result.Entries != r.Result.Entries || d.Result.Values != r.Result.Values || d.Result.BytesSaved != r.Result.BytesSaved {
					t.Errorf("%s: dry run %d entries %d values %d bytes, real run %d %d %d", d.Session,
						d.Result.Entries, d.Result.Values, d.Result.BytesSaved, r.Result.Entries, r.Result.Values, r.Result.BytesSaved)
				}
				if d.Result.BytesBefore == 0 || d.Result.BytesBefore != r.Result.BytesBefore {
					t.Errorf("%s: bytes before: dry run %d, real run %d; want the transcript's size", d.Session, d.Result.BytesBefore, r.Result.BytesBefore)
				}
				if (d.IdleAt != nil) != tc.idleAt || (r.IdleAt != nil) != tc.idleAt {
					t.Errorf("%s: idle_at %v / %v, want one: %v", d.Session, d.IdleAt, r.IdleAt, tc.idleAt)
				}
				if d.Reason == "" || (r.Status != prune.StatusExtracted && r.Reason == "") {
					t.Errorf("%s: reasons %q / %q: a session with nothing written says why", d.Session, d.Reason, r.Reason)
				}
				ref, err := set.Store.Resolve(ctx, r.Session)
				if err != nil {
					t.Fatal(err)
				}
				if got := real.Session(ref); got == nil || got.Session != r.Session {
					t.Errorf("Report.Session(%s) = %v", r.Session, got)
				}
			}
			if dry.Reason == "" || (real.Written == 0 && real.Reason == "") || (real.Written > 0 && real.Reason != "") {
				t.Errorf("report reasons: dry run %q, real run %q (written %d)", dry.Reason, real.Reason, real.Written)
			}
		})
	}
}
