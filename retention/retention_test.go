package retention_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// value returns the distinct text of a tool result.
func value(id string) string {
	return strings.Repeat(fmt.Sprintf("output of %s, line with some words; ", id), 40)
}

// transcript renders an OpenClaw v3 transcript with one tool result per id.
func transcript(session string, ids ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`+"\n", session)
	parent := "null"
	for i, id := range ids {
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:%02d:00.000Z","message":{"role":"toolResult","toolCallId":"c-%s","toolName":"exec","content":[{"type":"text","text":%q}],"isError":false,"timestamp":1767225600000}}`+"\n",
			id, parent, i, id, value(id))
		parent = fmt.Sprintf("%q", id)
	}
	return b.Bytes()
}

func passConfig() config.Config {
	c := config.Default()
	c.Enabled, c.KeepRecent, c.TriggerTypes, c.MinValueLength = true, 0, []string{"tool_result"}, 500
	c.MinSavingTokens, c.IdleSeconds, c.AgeThresholdHours = 0, 0, 0
	return c
}

// fx is an agents dir with two sessions and side data of every kind:
//
//	s1: pack A (pass 1: ghost, r1…r6), pack B (restore of r2: its journal),
//	    pack C (pass 2: r7), legacy1.json (first BrainSurgeon, referenced by
//	    entry L1), legacy2.json (unreferenced), o1.json (ours, unreferenced)
//	s2: one pack (q1, q2, q3), and a queued restore write-back of q1
type fx struct {
	root, s1, s2 string
	set          *backend.Set
	mid          time.Time // after pass 1, before anything else
	end          time.Time // after everything
}

func write(t *testing.T, path string, data []byte, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T) *fx {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fx{root: root, s1: filepath.Join(dir, "s1.jsonl"), s2: filepath.Join(dir, "s2.jsonl")}
	old := time.Now().Add(-time.Hour)
	s1 := transcript("s1", "r1", "r2", "r3", "r4", "r5", "r6")
	// An entry of the first BrainSurgeon's flat shape, extracted by it.
	s1 = append(s1, `{"__id":"L1","type":"tool_result","timestamp":"2026-01-01T00:09:00.000Z","output":"[[extracted-L1]]"}`+"\n"...)
	// And one with its older bare placeholder.
	s1 = append(s1, `{"__id":"L3","type":"tool_result","timestamp":"2026-01-01T00:09:30.000Z","output":"[[extracted]]"}`+"\n"...)
	write(t, f.s1, s1, old)
	write(t, f.s2, transcript("s2", "q1", "q2", "q3"), old)
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.set = set
	ref1, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	// A record no placeholder points to, in the same pack as pass 1's.
	if err := set.Side.Put(ctx, ref1, []bs.SideRecord{{EntryID: "ghost", Data: []byte(`{"format":"` + extract.Format + `","entry_id":"ghost","values":[]}` + "\n")}}); err != nil {
		t.Fatal(err)
	}
	if rep, err := prune.New(set.Store, set.Side, set.StateDir, passConfig(), nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
		t.Fatalf("pass 1: %+v, %v", rep, err)
	}
	time.Sleep(5 * time.Millisecond)
	f.mid = time.Now()
	time.Sleep(5 * time.Millisecond)

	// Restore r2 now (the session is idle): its record gets a journal.
	r := restore.New(set.Store, set.Side, set.StateDir)
	if res, err := r.Restore(ctx, ref1, "r2", nil, restore.RestoreOptions{}); err != nil || !res.Applied {
		t.Fatalf("restore r2: %+v, %v", res, err)
	}
	// Pass 2 over a grown transcript: r7 in a new pack.
	grown := append(readFile(t, f.s1), transcript("x", "r7")[len(`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`)+1:]...)
	grown = bytes.Replace(grown, []byte(`"id":"r7","parentId":null`), []byte(`"id":"r7","parentId":"r6"`), 1)
	write(t, f.s1, grown, old)
	if rep, err := prune.New(set.Store, set.Side, set.StateDir, passConfig(), nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
		t.Fatalf("pass 2: %+v, %v", rep, err)
	}
	// Per-entry files, old: the first BrainSurgeon's and ours.
	side1 := filepath.Join(dir, "extracted", "s1")
	write(t, filepath.Join(side1, "L1.json"), []byte(`{"output":"legacy value","__meta":{"extracted_at":"2025-01-01T00:00:00Z","trigger_type":"tool_result"}}`), old)
	write(t, filepath.Join(side1, "L3.json"), []byte(`{"output":"older legacy value","__meta":{"extracted_at":"2025-01-01T00:00:00Z","trigger_type":"tool_result"}}`), old)
	write(t, filepath.Join(side1, "legacy2.json"), []byte(`{"output":"nobody's","__meta":{"extracted_at":"2025-01-01T00:00:00Z","trigger_type":"tool_result"}}`), old)
	write(t, filepath.Join(side1, "o1.json"), []byte(`{"format":"`+extract.Format+`","entry_id":"o1","values":[]}`+"\n"), old)

	// A restore of q1 while s2 is busy: queued.
	busySet, err := backend.Open(ctx, root, backend.Options{Idle: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.Chtimes(f.s2, now, now); err != nil {
		t.Fatal(err)
	}
	ref2, err := busySet.Store.Resolve(ctx, "main/s2")
	if err != nil {
		t.Fatal(err)
	}
	res, err := restore.New(busySet.Store, busySet.Side, busySet.StateDir).Restore(ctx, ref2, "q1", nil, restore.RestoreOptions{})
	if err != nil || !res.Queued {
		t.Fatalf("restore q1 while busy: %+v, %v", res, err)
	}
	time.Sleep(5 * time.Millisecond)
	f.end = time.Now()
	return f
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// has reports which entries the side store still returns for a session.
func (f *fx) has(t *testing.T, session string, ids ...string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	ref, err := f.set.Store.Resolve(ctx, "main/"+session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, id := range ids {
		_, err := f.set.Side.Get(ctx, ref, id)
		switch {
		case err == nil:
			out[id] = true
		case !errors.Is(err, bs.ErrNotFound):
			t.Errorf("%s/%s: %v", session, id, err)
		}
	}
	return out
}

var allIDs1 = []string{"ghost", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "L1", "L3", "legacy2", "o1"}

func set(ids ...string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func TestRun(t *testing.T) {
	for _, tt := range []struct {
		name      string
		scope     string
		mixed     bool // cutoff between pass 1 and the rest, else everything expired
		want1     map[string]bool
		want2     map[string]bool
		repacked  int
		restoreR1 bool // r1's value comes back after retention
	}{
		{name: "AllEverythingExpired", scope: config.ScopeAll,
			want1: set("r2"), want2: set("q1"), repacked: 1},
		{name: "OrphansEverythingExpired", scope: config.ScopeOrphans,
			want1:    set("r1", "r2", "r3", "r4", "r5", "r6", "r7", "L1", "L3"),
			want2:    set("q1", "q2", "q3"),
			repacked: 1, restoreR1: true},
		{name: "AllMixedAges", scope: config.ScopeAll, mixed: true,
			want1: set("r2", "r7"), want2: set("q1"), repacked: 1},
		{name: "OrphansMixedAges", scope: config.ScopeOrphans, mixed: true,
			want1:    set("r1", "r2", "r3", "r4", "r5", "r6", "r7", "L1", "L3"),
			want2:    set("q1", "q2", "q3"),
			repacked: 1, restoreR1: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t)
			cfg := config.Default()
			cfg.Retention, cfg.RetentionScope = "1h", tt.scope
			clock := fixedClock(f.end.Add(2 * time.Hour))
			if tt.mixed {
				clock = fixedClock(f.mid.Add(time.Hour))
			}
			var logs bytes.Buffer
			st, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: f.set.Side, StateDir: f.set.StateDir,
				Config: cfg, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if st.Errors != 0 || st.Repacked != tt.repacked || st.Cleaned == 0 || st.Bytes <= 0 {
				t.Errorf("stats %+v, want 0 errors, %d repacked, something cleaned", st, tt.repacked)
			}
			want := fmt.Sprintf("[RETENTION] Deleted %d extracted files (%s)", st.Cleaned, retention.HumanBytes(st.Bytes))
			if !strings.Contains(logs.String(), want) {
				t.Errorf("log %q lacks %q", logs.String(), want)
			}
			if got := f.has(t, "s1", allIDs1...); !mapsEqual(got, tt.want1) {
				t.Errorf("s1 keeps %v, want %v", keys(got), keys(tt.want1))
			}
			if got := f.has(t, "s2", "q1", "q2", "q3"); !mapsEqual(got, tt.want2) {
				t.Errorf("s2 keeps %v, want %v", keys(got), keys(tt.want2))
			}

			// A second run finds nothing more to do.
			st2, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: f.set.Side, StateDir: f.set.StateDir, Config: cfg, Clock: clock})
			if err != nil || st2.Cleaned != 0 || st2.Repacked != 0 {
				t.Errorf("second run: %+v, %v; want nothing done", st2, err)
			}

			// The queued write-back of q1 still finds its value.
			r := restore.New(f.set.Store, f.set.Side, f.set.StateDir)
			if n, _, err := r.ApplyPending(ctx); err != nil || n != 1 {
				t.Fatalf("apply pending: %d, %v", n, err)
			}
			if s2 := readFile(t, f.s2); !bytes.Contains(s2, []byte(value("q1")[:100])) {
				t.Errorf("q1 not written back after retention")
			}

			// A still-referenced value restores exactly; an expired one
			// answers MissingText.
			ref1, _ := f.set.Store.Resolve(ctx, "main/s1")
			res, err := r.Restore(ctx, ref1, "r1", nil, restore.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, v := range res.Content {
				got = v
			}
			if tt.restoreR1 {
				if got != value("r1") || !res.Applied {
					t.Errorf("restore r1 after retention: %+v", res)
				}
				rep, err := restore.Verify(ctx, f.set.Store, f.set.Side, ref1)
				if err != nil || !rep.OK() {
					t.Errorf("verify after retention: %+v, %v", rep, err)
				}
			} else if got != restore.MissingText {
				t.Errorf("restore r1 after retention: %q, want MissingText", got)
			}

			// The journals survived: a pristine undo removes every
			// "_restored" BrainSurgeon added.
			if _, err := r.RestoreAll(ctx, ref1, true); err != nil {
				t.Fatal(err)
			}
			if s1 := readFile(t, f.s1); bytes.Contains(s1, []byte(`"_restored"`)) {
				t.Errorf("a _restored member is left after the pristine undo: journals were lost")
			}
		})
	}
}

func mapsEqual(a, b map[string]bool) bool { return slices.Equal(keys(a), keys(b)) }

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// failingSide is the real side store with one fault injected: DropUnits
// fails for session s1, as a deletion refused by the file system would.
type failingSide struct {
	*sidedir.Store
}

func (s failingSide) DropUnits(ctx context.Context, ref bs.SessionRef, units, keep []string) (bs.SideDropResult, error) {
	if ref.ID == "s1" {
		return bs.SideDropResult{}, fmt.Errorf("remove %s: permission denied", units[0])
	}
	return s.Store.DropUnits(ctx, ref, units, keep)
}

func TestRunFailedDeletionContinues(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	cfg := config.Default()
	cfg.Retention = "1h"
	var logs bytes.Buffer
	st, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: failingSide{f.set.Side.(*sidedir.Store)},
		StateDir: f.set.StateDir, Config: cfg, Clock: fixedClock(f.end.Add(2 * time.Hour)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("err %v, want the failed deletion", err)
	}
	if st.Errors == 0 || st.Cleaned == 0 {
		t.Errorf("stats %+v: want errors counted and s2 cleaned anyway", st)
	}
	if got := f.has(t, "s2", "q1", "q2", "q3"); !mapsEqual(got, set("q1")) {
		t.Errorf("s2 keeps %v, want only q1", keys(got))
	}
	if got := f.has(t, "s1", "r1"); !got["r1"] {
		t.Errorf("s1 lost r1 although its deletion failed")
	}
	if !strings.Contains(logs.String(), "deletion failed") {
		t.Errorf("the failure is not logged: %s", logs.String())
	}
}

func TestRunOptions(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, tt := range []struct {
		name string
		o    retention.Options
		want error
	}{
		{"NoStore", retention.Options{Side: f.set.Side, Config: config.Default()}, bs.ErrInvalid},
		{"BadScope", retention.Options{Store: f.set.Store, Side: f.set.Side, Config: func() config.Config {
			c := config.Default()
			c.RetentionScope = "none"
			return c
		}()}, bs.ErrInvalid},
		{"BadRetention", retention.Options{Store: f.set.Store, Side: f.set.Side, Config: func() config.Config {
			c := config.Default()
			c.Retention = "5x"
			return c
		}()}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retention.Run(ctx, tt.o)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("err %v, want %v", err, tt.want)
			}
		})
	}
	if got := f.has(t, "s1", allIDs1...); len(got) != len(allIDs1) {
		t.Errorf("bad options deleted something: %v", keys(got))
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {512, "512 B"}, {2048, "2.0 KB"}, {1258291, "1.2 MB"}, {3 << 30, "3.0 GB"}} {
		if got := retention.HumanBytes(tt.n); got != tt.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestRunSQLite: retention works through the root interfaces on the
// SQLite store too: "orphans" keeps every value a placeholder points to,
// "all" expires them.
func TestRunSQLite(t *testing.T) {
	ctx := context.Background()
	root := testcorpus.Store(t)
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := passConfig()
	c.TriggerTypes = []string{"tool_result", "thinking"}
	rep, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var refs []bs.SessionRef
	for _, s := range rep.Sessions {
		if s.Status == "extracted" {
			ref, err := set.Store.Resolve(ctx, s.Session)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		t.Fatalf("the pass extracted nothing from the SQLite store: %+v", rep)
	}
	run := func(scope string) retention.Stats {
		cfg := config.Default()
		cfg.Retention, cfg.RetentionScope = "1h", scope
		st, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir, Config: cfg,
			Clock: fixedClock(time.Now().Add(2 * time.Hour))})
		if err != nil || st.Errors != 0 {
			t.Fatalf("retention %s: %+v, %v", scope, st, err)
		}
		return st
	}
	if st := run(config.ScopeOrphans); st.Cleaned != 0 {
		t.Errorf("orphans scope deleted %d files although every value is referenced", st.Cleaned)
	}
	for _, ref := range refs {
		v, err := restore.Verify(ctx, set.Store, set.Side, ref)
		if err != nil || !v.OK() || v.Verified == 0 {
			t.Errorf("verify %s after orphans retention: %+v, %v", ref, v, err)
		}
	}
	if st := run(config.ScopeAll); st.Cleaned == 0 || st.Bytes == 0 {
		t.Errorf("all scope: %+v, want the expired packs deleted", st)
	}
	for _, ref := range refs {
		if infos, err := set.Side.List(ctx, ref); err != nil || len(infos) != 0 {
			t.Errorf("%s keeps %d side records after all-scope retention (%v)", ref, len(infos), err)
		}
	}
}

// TestRunToolCallKeys: records keyed by tool-call ids, stored before any
// transcript entry exists, are side data like any other: retention lists
// their pack and deletes it once expired.
func TestRunToolCallKeys(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "s1.jsonl"), transcript("s1", "r1"), time.Now().Add(-time.Hour))
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := set.Store.Resolve(ctx, "main/s1")
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"toolu_01A09q90qw90lq917835lq9", "call_abc|fc_123"}
	for _, k := range ids {
		if err := set.Side.Put(ctx, ref, []bs.SideRecord{{EntryID: k, Data: []byte(`{"tool_call_id":"` + k + `"}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	run := func(now time.Time) retention.Stats {
		t.Helper()
		cfg := config.Default()
		cfg.Retention, cfg.RetentionScope = "1h", config.ScopeAll
		st, err := retention.Run(ctx, retention.Options{Store: set.Store, Side: set.Side, StateDir: set.StateDir, Config: cfg, Clock: fixedClock(now)})
		if err != nil || st.Errors != 0 {
			t.Fatalf("retention: %+v, %v", st, err)
		}
		return st
	}
	if st := run(time.Now()); st.Sessions != 1 || st.Cleaned != 0 {
		t.Errorf("fresh records: %+v, want the session's side data listed and nothing deleted", st)
	}
	for _, k := range ids {
		if _, err := set.Side.Get(ctx, ref, k); err != nil {
			t.Errorf("%s after retention of nothing: %v", k, err)
		}
	}
	if st := run(time.Now().Add(2 * time.Hour)); st.Sessions != 1 || st.Cleaned != 1 {
		t.Errorf("expired records: %+v, want their pack deleted", st)
	}
	for _, k := range ids {
		if _, err := set.Side.Get(ctx, ref, k); !errors.Is(err, bs.ErrNotFound) {
			t.Errorf("%s after retention: %v, want ErrNotFound", k, err)
		}
	}
}
