package trash_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/retention"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

func value(id string) string {
	return strings.Repeat(fmt.Sprintf("output of %s, line with some words; ", id), 40)
}

func transcript(session, parentSession string, ids ...string) []byte {
	var b bytes.Buffer
	ps := ""
	if parentSession != "" {
		ps = fmt.Sprintf(`,"parentSession":%q`, parentSession)
	}
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"%s}`+"\n", session, ps)
	parent := "null"
	for i, id := range ids {
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:%02d:00.000Z","message":{"role":"toolResult","toolCallId":"c-%s","toolName":"exec","content":[{"type":"text","text":%q}],"isError":false,"timestamp":1767225600000}}`+"\n",
			id, parent, i, id, value(id))
		parent = fmt.Sprintf("%q", id)
	}
	return b.Bytes()
}

// fx is an agents dir: p1 with a child c1 (header parentSession, no
// sessions.json key, no extracted dir), a child c2 (sessions.json
// spawnedBy), a grandchild g1 (header naming c2), and an unrelated u1.
type fx struct {
	root, sessions string
	set            *backend.Set
	bin            *trash.Trash
	before         map[string][]byte // every file under agents/, by path
}

func newFixture(t *testing.T, status string) *fx {
	t.Helper()
	return newFixtureSide(t, status, nil)
}

// newFixtureSide is newFixture with the side store side returns for the
// opened set (nil: the set's own, the local pack store); the trash gets
// it as its Sides when it is remote, as the daemon's.
func newFixtureSide(t *testing.T, status string, side func(set *backend.Set) bs.SideStore) *fx {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fx{root: root, sessions: dir}
	old := time.Now().Add(-time.Hour)
	files := map[string][]byte{
		"p1.jsonl": transcript("p1", "", "r1", "r2", "r3"),
		"c1.jsonl": transcript("c1", filepath.Join(dir, "p1.jsonl"), "k1"),
		"c2.jsonl": transcript("c2", "", "s1", "s2"),
		"g1.jsonl": transcript("g1", "c2.jsonl", "h1"),
		"u1.jsonl": transcript("u1", "", "v1", "v2"),
	}
	store := fmt.Sprintf(`{
  "agent:main:main": {"sessionId": "p1", "sessionFile": %q, "updatedAt": 1767225600000, "status": %q},
  "agent:main:other": {"sessionId": "u1", "updatedAt": 1767225600000, "status": "done", "label": "keep me"},
  "agent:main:subagent:x": {"sessionId": "c2", "spawnedBy": "agent:main:main", "updatedAt": 1767225600000, "status": "done"}
}
`, filepath.Join(dir, "p1.jsonl"), status)
	files["sessions.json"] = []byte(store)
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if side != nil {
		set.Side = side(set)
	}
	f.set = set
	// Extract into p1, c2, u1 (a real pass writes their packs).
	c := config.Default()
	c.Enabled, c.KeepRecent, c.TriggerTypes, c.MinValueLength, c.MinSavingTokens, c.IdleSeconds = true, 0, []string{"tool_result"}, 500, 0, 0
	if status == "running" {
		c.IdleSeconds = 0
	}
	if rep, err := prune.New(set.Store, set.Side, set.StateDir, c, nil).Run(ctx, nil); err != nil || rep.Failed > 0 {
		t.Fatalf("pass: %+v, %v", rep, err)
	}
	// c1 has no extracted dir; the pass made one only if it extracted.
	os.RemoveAll(filepath.Join(dir, "extracted", "c1"))
	f.bin = trash.New(set.Store, set.AgentsDir, set.StateDir)
	f.bin.Sides = trash.RemoteSides(set.Side)
	f.before = snapshot(t, root)
	return f
}

// snapshot reads every regular file under root.
func snapshot(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = data
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAsBefore checks that the agents dir is as it was, sessions.json
// compared as JSON with each entry's bytes unchanged.
func (f *fx) sameAsBefore(t *testing.T, when string) {
	t.Helper()
	now := snapshot(t, f.root)
	for p, want := range f.before {
		got, ok := now[p]
		switch {
		case !ok:
			t.Errorf("%s: %s is missing", when, p)
		case filepath.Base(p) == "sessions.json":
			var a, b map[string]json.RawMessage
			if json.Unmarshal(got, &a) != nil || json.Unmarshal(want, &b) != nil || len(a) != len(b) {
				t.Errorf("%s: sessions.json %s, want %s", when, got, want)
				continue
			}
			for k := range b {
				if !bytes.Equal(bytes.TrimSpace(a[k]), bytes.TrimSpace(b[k])) {
					t.Errorf("%s: sessions.json key %s = %s, want %s", when, k, a[k], b[k])
				}
			}
		case !bytes.Equal(got, want):
			t.Errorf("%s: %s changed", when, p)
		}
	}
	for p := range now {
		if _, ok := f.before[p]; !ok {
			t.Errorf("%s: unexpected file %s", when, p)
		}
	}
}

func auditLines(t *testing.T, set *backend.Set) []audit.Event {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(set.StateDir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Event
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var ev audit.Event
		if err := json.Unmarshal(l, &ev); err != nil {
			t.Fatalf("audit line %s: %v", l, err)
		}
		out = append(out, ev)
	}
	return out
}

func TestDeleteAndRestore(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "done")
	item, err := f.bin.Delete(ctx, "main", "p1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range item.Sessions {
		ids = append(ids, s.SessionID)
	}
	if strings.Join(ids, ",") != "p1,c1,c2,g1" {
		t.Errorf("sessions %v, want p1 with its children c1, c2 and grandchild g1", ids)
	}
	if item.State != trash.StateTrashed || item.ExpiresAt.Sub(item.TrashedAt) != trash.DefaultKeep || item.Files == 0 || item.Bytes == 0 {
		t.Errorf("item %+v", item)
	}
	p1 := item.Sessions[0]
	if p1.OriginalPath != filepath.Join(f.sessions, "p1.jsonl") || p1.ExtractedFiles == 0 || p1.ExtractedBytes == 0 ||
		len(p1.Entries["agent:main:main"]) == 0 || p1.TranscriptBytes != int64(len(f.before[p1.OriginalPath])) {
		t.Errorf("meta of p1: %+v", p1)
	}
	for _, n := range []string{"p1.jsonl", "c1.jsonl", "c2.jsonl", "g1.jsonl", "extracted/p1", "extracted/c2"} {
		if _, err := os.Stat(filepath.Join(f.sessions, n)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still in place after delete: %v", n, err)
		}
	}
	sj, _ := os.ReadFile(filepath.Join(f.sessions, "sessions.json"))
	var left map[string]json.RawMessage
	if err := json.Unmarshal(sj, &left); err != nil || len(left) != 1 || left["agent:main:other"] == nil {
		t.Errorf("sessions.json after delete: %s (%v)", sj, err)
	}
	if refs, _, _ := f.set.Store.Sessions(ctx); len(refs) != 1 || refs[0].ID != "u1" {
		t.Errorf("sessions after delete: %+v", refs)
	}
	items, err := f.bin.List(ctx)
	if err != nil || len(items) != 1 || items[0].ID != item.ID {
		t.Fatalf("list: %+v, %v", items, err)
	}
	var del, delx int
	for _, ev := range auditLines(t, f.set) {
		switch ev.Action {
		case "delete":
			del++
			if ev.MovedToTrash == nil || !*ev.MovedToTrash || ev.Agent != "main" || ev.SessionID == "" || ev.TrashID != item.ID {
				t.Errorf("audit %+v", ev)
			}
		case "delete_extracted":
			delx++
			if ev.FilesRemoved == nil || ev.BytesRemoved == nil || (ev.SessionID == "p1" && *ev.FilesRemoved == 0) {
				t.Errorf("audit %+v", ev)
			}
		}
	}
	if del != 4 || delx != 4 {
		t.Errorf("audit: %d delete and %d delete_extracted lines, want 4 each", del, delx)
	}

	if _, err := f.bin.Restore(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	f.sameAsBefore(t, "after restore")
	if items, _ := f.bin.List(ctx); len(items) != 0 {
		t.Errorf("trash after restore: %+v", items)
	}
	// The extracted values came back with their session.
	ref, err := f.set.Store.Resolve(ctx, "main/p1")
	if err != nil {
		t.Fatal(err)
	}
	res, err := restore.New(f.set.Store, f.set.Side, f.set.StateDir).Restore(ctx, ref, "r1", nil, restore.RestoreOptions{})
	if err != nil || !res.Restored {
		t.Fatalf("restore r1 after trash restore: %+v, %v", res, err)
	}
	for _, v := range res.Content {
		if v != value("r1") {
			t.Errorf("r1 came back as %q", v[:min(len(v), 40)])
		}
	}
	if evs := auditLines(t, f.set); evs[len(evs)-1].Action != "trash_restore" {
		t.Errorf("last audit line %+v, want trash_restore", evs[len(evs)-1])
	}
}

func TestRestoreOccupied(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		occupy func(f *fx)
	}{
		{"Transcript", func(f *fx) { os.WriteFile(filepath.Join(f.sessions, "c2.jsonl"), []byte("{}\n"), 0o600) }},
		{"ExtractedDir", func(f *fx) {
			os.MkdirAll(filepath.Join(f.sessions, "extracted", "p1"), 0o700)
			os.WriteFile(filepath.Join(f.sessions, "extracted", "p1", "x.json"), []byte("{}"), 0o600)
		}},
		{"SessionsJSONKey", func(f *fx) {
			os.WriteFile(filepath.Join(f.sessions, "sessions.json"), []byte(`{"agent:main:main":{"sessionId":"new"}}`), 0o600)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, "done")
			item, err := f.bin.Delete(ctx, "main", "p1")
			if err != nil {
				t.Fatal(err)
			}
			tt.occupy(f)
			before := snapshot(t, f.root)
			_, err = f.bin.Restore(ctx, item.ID)
			if !errors.Is(err, trash.ErrOccupied) {
				t.Fatalf("restore: %v, want ErrOccupied", err)
			}
			if got := snapshot(t, f.root); len(got) != len(before) {
				t.Errorf("a refused restore moved files: %d files, want %d", len(got), len(before))
			}
			if _, err := f.bin.Get(ctx, item.ID); err != nil {
				t.Errorf("the item is gone after a refused restore: %v", err)
			}
		})
	}
}

func TestDeleteRefused(t *testing.T) {
	ctx := context.Background()
	t.Run("Busy", func(t *testing.T) {
		f := newFixture(t, "running")
		_, err := f.bin.Delete(ctx, "main", "p1")
		if !errors.Is(err, bs.ErrBusy) {
			t.Fatalf("err %v, want ErrBusy", err)
		}
		f.sameAsBefore(t, "after a refused delete")
	})
	t.Run("SQLite", func(t *testing.T) {
		f := newFixture(t, "done")
		_, err := f.bin.DeleteRef(ctx, bs.SessionRef{Backend: bs.BackendSQLite, Agent: "main", ID: "p1"})
		if !errors.Is(err, trash.ErrRefused) || !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "never deletes rows") {
			t.Fatalf("err %v, want ErrRefused and ErrUnsupported with the reason", err)
		}
	})
	t.Run("BadIDs", func(t *testing.T) {
		f := newFixture(t, "done")
		for _, id := range []string{"../x", "", ".hidden", "a/b", "a\x00b"} {
			if _, err := f.bin.Restore(ctx, id); !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("restore %q: %v, want ErrInvalid", id, err)
			}
			if _, err := f.bin.Purge(ctx, id); !errors.Is(err, bs.ErrInvalid) {
				t.Errorf("purge %q: %v, want ErrInvalid", id, err)
			}
		}
		if _, err := f.bin.Restore(ctx, "main_nope_20260101T000000Z-abcdef"); !errors.Is(err, bs.ErrNotFound) {
			t.Errorf("restore unknown: %v, want ErrNotFound", err)
		}
		for _, tt := range []struct {
			agent, id string
			want      error
		}{
			{"main", "p", bs.ErrNotFound}, // a prefix never matches
			{"main", "agent:main:main", bs.ErrNotFound},
			{"other", "p1", bs.ErrNotFound},
			{"main", "../p1", bs.ErrInvalid},
			{"..", "p1", bs.ErrInvalid},
			{"main", "p1\x00", bs.ErrInvalid},
			{"main", "", bs.ErrInvalid},
		} {
			if _, err := f.bin.Delete(ctx, tt.agent, tt.id); !errors.Is(err, tt.want) {
				t.Errorf("delete %q/%q: %v, want %v", tt.agent, tt.id, err, tt.want)
			}
		}
		f.sameAsBefore(t, "after refused deletes")
	})
	t.Run("TamperedMeta", func(t *testing.T) {
		f := newFixture(t, "done")
		item, err := f.bin.Delete(ctx, "main", "c1")
		if err != nil {
			t.Fatal(err)
		}
		meta := filepath.Join(f.set.StateDir, "trash", item.ID, "meta.json")
		data, _ := os.ReadFile(meta)
		outside := filepath.Join(filepath.Dir(f.root), "elsewhere.jsonl")
		data = bytes.Replace(data, []byte(item.Sessions[0].OriginalPath), []byte(outside), 1)
		os.WriteFile(meta, data, 0o600)
		if _, err := f.bin.Restore(ctx, item.ID); !errors.Is(err, bs.ErrInvalid) {
			t.Fatalf("restore of a meta.json naming %s: %v, want ErrInvalid", outside, err)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("restore wrote outside the agents dir")
		}
	})
}

func TestPurgeAndExpire(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, "done")
	item, err := f.bin.Delete(ctx, "main", "c2") // c2 and its child g1
	if err != nil {
		t.Fatal(err)
	}
	if len(item.Sessions) != 2 {
		t.Errorf("sessions %+v, want c2 and g1", item.Sessions)
	}
	if _, err := f.bin.Purge(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.bin.Get(ctx, item.ID); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("purged item: %v, want ErrNotFound", err)
	}
	evs := auditLines(t, f.set)
	var purged bool
	for _, ev := range evs {
		if ev.Action == "trash_purge" && ev.MovedToTrash != nil && !*ev.MovedToTrash {
			purged = true
		}
	}
	if !purged {
		t.Errorf("no trash_purge audit line: %+v", evs)
	}

	// Expired trash goes with retention, fresh trash stays.
	fresh, err := f.bin.Delete(ctx, "main", "p1")
	if err != nil {
		t.Fatal(err)
	}
	f.bin.Clock = fixedClock(time.Now().Add(-20 * 24 * time.Hour))
	if _, err := f.bin.Delete(ctx, "main", "u1"); err != nil {
		t.Fatal(err)
	}
	f.bin.Clock = nil
	cfg := config.Default()
	st, err := retention.Run(ctx, retention.Options{Store: f.set.Store, Side: f.set.Side, StateDir: f.set.StateDir, Config: cfg, Trash: f.bin})
	if err != nil {
		t.Fatal(err)
	}
	if st.TrashCleaned == 0 || st.Cleaned < st.TrashCleaned || st.Bytes == 0 {
		t.Errorf("retention stats %+v, want expired trash cleaned", st)
	}
	items, _ := f.bin.List(ctx)
	if len(items) != 1 || items[0].ID != fresh.ID {
		t.Errorf("trash after expiry: %+v, want only the fresh item %s", items, fresh.ID)
	}
	var expired bool
	for _, ev := range auditLines(t, f.set) {
		expired = expired || (ev.Action == "trash_expire" && ev.SessionID == "u1")
	}
	if !expired {
		t.Errorf("no trash_expire audit line for u1")
	}
}

func TestDeleteFailsMidway(t *testing.T) {
	ctx := context.Background()
	for _, step := range []string{"meta", "side:p1", "transcript:c1", "transcript:g1", "sessions_json"} {
		t.Run("RolledBack/"+step, func(t *testing.T) {
			f := newFixture(t, "done")
			trash.SetFailpoint(func(s string) error {
				if s == step {
					return errors.New("disk full")
				}
				return nil
			})
			defer trash.SetFailpoint(nil)
			if _, err := f.bin.Delete(ctx, "main", "p1"); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Fatalf("err %v, want the failure", err)
			}
			f.sameAsBefore(t, "after a failed delete")
			if items, _ := f.bin.List(ctx); len(items) != 0 {
				t.Errorf("trash after a failed delete: %+v", items)
			}
		})
		t.Run("Crash/"+step, func(t *testing.T) {
			f := newFixture(t, "done")
			trash.SetFailpoint(func(s string) error {
				if s == step {
					return trash.ErrCrash
				}
				return nil
			})
			_, err := f.bin.Delete(ctx, "main", "p1")
			trash.SetFailpoint(nil)
			if !errors.Is(err, trash.ErrCrash) {
				t.Fatalf("err %v, want the crash", err)
			}
			items, err := f.bin.List(ctx)
			if err != nil || len(items) != 1 || items[0].State != trash.StateTrashing {
				t.Fatalf("after the crash the trash holds %+v (%v), want one item left trashing", items, err)
			}
			if _, err := f.bin.Restore(ctx, items[0].ID); err != nil {
				t.Fatalf("restore after the crash: %v", err)
			}
			f.sameAsBefore(t, "after a crash and a restore")
		})
	}
}

// sqliteAgents copies a store of the shared corpus into a fresh agents
// dir (the corpus is read, never written).
func sqliteAgents(t *testing.T) string {
	t.Helper()
	return testcorpus.Store(t)
}

func TestDeleteSQLiteStore(t *testing.T) {
	ctx := context.Background()
	root := sqliteAgents(t)
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	refs, _, err := set.Store.Sessions(ctx)
	if err != nil || len(refs) == 0 {
		t.Fatalf("sessions: %v, %v", refs, err)
	}
	before := snapshot(t, root)
	ref := refs[0]
	if ref.Backend != bs.BackendSQLite {
		t.Fatalf("first session %+v is not in the SQLite store", ref)
	}
	_, err = trash.New(set.Store, set.AgentsDir, set.StateDir).Delete(ctx, ref.Agent, ref.ID)
	if !errors.Is(err, trash.ErrRefused) || !errors.Is(err, bs.ErrUnsupported) || !strings.Contains(err.Error(), "never deletes rows") {
		t.Fatalf("err %v, want ErrRefused and ErrUnsupported with the reason", err)
	}
	after := snapshot(t, root)
	for p, b := range before {
		if !bytes.Equal(after[p], b) {
			t.Errorf("%s changed", p)
		}
	}
}
