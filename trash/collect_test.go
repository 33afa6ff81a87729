package trash_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// lines makes a transcript: a header of session id, then one entry per id
// (a text of the id repeated, so files take several disk blocks), each
// with extra appended to its text.
func lines(session string, extra string, ids ...string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`+"\n", session)
	parent := "null"
	for i, id := range ids {
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:%02d:00.000Z","message":{"role":"user","content":[{"type":"text","text":%q}],"timestamp":1767225600000}}`+"\n",
			id, parent, i, strings.Repeat("words of "+id+" ", 300)+extra)
		parent = strconv.Quote(id)
	}
	return b.Bytes()
}

// leftoverFx is an agents dir with every leftover kind: agent "main" in
// the JSONL era, agent "ops" in the SQLite era with an import archive.
type leftoverFx struct {
	root   string
	set    *backend.Set
	bin    *trash.Trash
	want   map[string]string // leftover path → kind
	unique map[string]bool   // leftover path → unique
	never  []string          // files that must never be listed
}

func newLeftoverFx(t *testing.T) *leftoverFx {
	t.Helper()
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "agents")
	main := filepath.Join(root, "main", "sessions")
	ops := filepath.Join(root, "ops")
	archive := filepath.Join(ops, "session-sqlite-import-archive")
	for _, d := range []string{main, archive, filepath.Join(archive, "nested")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	live := lines("live1", "", "a1", "a2", "a3")
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
	fx := &leftoverFx{root: root, want: map[string]string{}, unique: map[string]bool{}}
	type file struct {
		path   string
		data   []byte
		kind   string // "" never listed
		unique bool
		mtime  time.Time
	}
	files := []file{
		{path: filepath.Join(main, "sessions.json"), data: []byte(`{"agent:main:main":{"sessionId":"live1","status":"done","updatedAt":1767225600000}}`)},
		{path: filepath.Join(main, "live1.jsonl"), data: live},
		{path: filepath.Join(main, "live1.jsonl.lock"), data: []byte(`{"pid":1}`)},
		{path: filepath.Join(main, ".live1.jsonl.lock.bs-tmp-1-aa"), data: []byte(`{"pid":1}`)},
		{path: filepath.Join(main, "sessions.json.telegram-sent-messages.json"), data: []byte(`{}`)},
		{path: filepath.Join(main, "live1.trajectory.jsonl"), data: []byte(`{"traceSchema":"x"}` + "\n")},
		{path: filepath.Join(main, "live1.jsonl.bak-123-1767225600000"), data: live[:bytes.Index(live, []byte(`{"type":"message","id":"a3"`))], kind: bs.LeftoverBackup},
		{path: filepath.Join(main, "notes.bak"), data: []byte("not json at all\n"), kind: bs.LeftoverBackup},
		{path: filepath.Join(main, "gone1.jsonl.deleted.2026-01-02T00-00-00.000Z"), data: lines("gone1", "", "d1", "d2", "a1"), kind: bs.LeftoverDeleted, unique: true},
		{path: filepath.Join(main, "live1.jsonl.reset.2026-01-03T00-00-00.000Z"), data: lines("live1", "", "a1", "a2"), kind: bs.LeftoverReset},
		{path: filepath.Join(main, "sessions.json.4242.tmp"), data: []byte(`{"agent:main:main":`), kind: bs.LeftoverTemp},
		{path: filepath.Join(main, ".live1.jsonl.bs-tmp-77-abcdef"), data: live, kind: bs.LeftoverTemp},
		{path: filepath.Join(main, ".live1.jsonl.bs-tmp-78-fresh"), data: live, mtime: time.Now()},
		{path: filepath.Join(main, "live1.jsonl.corrupt-2026-01-04T00-00-00.000Z-deadbeef.jsonl"), data: append([]byte("garbage header\n"), lines("live1", "", "a2")[bytes.IndexByte(lines("live1", "", "a2"), '\n')+1:]...), kind: bs.LeftoverCorrupt},
		{path: filepath.Join(main, "live1.checkpoint.0b4f6c2e-1d2a-4c3b-9e8f-7a6b5c4d3e2f.jsonl"), data: lines("live1", "", "a1", "a2", "a3"), kind: bs.LeftoverCheckpoint},
		{path: filepath.Join(main, "gone2.trajectory.jsonl"), data: []byte(`{"traceSchema":"openclaw-trajectory","id":"zz"}` + "\n"), kind: bs.LeftoverTrajectory},
		{path: filepath.Join(main, "gone2.trajectory-path.json"), data: []byte(`{"traceSchema":"openclaw-trajectory-pointer","schemaVersion":1}`), kind: bs.LeftoverTrajectory},
		{path: filepath.Join(main, "orphan1.jsonl"), data: lines("orphan1", "", "o1"), kind: bs.LeftoverOrphan, unique: true},
		// A new session before its key, and one in use: not orphans yet.
		{path: filepath.Join(main, "fresh1.jsonl"), data: lines("fresh1", "", "f1"), mtime: time.Now()},
		{path: filepath.Join(main, "locked1.jsonl"), data: lines("locked1", "", "k1")},
		{path: filepath.Join(main, "locked1.jsonl.lock"), data: []byte(`{"pid":1}`)},
		// The SQLite era: s1 is live in the store.
		{path: filepath.Join(archive, "agent_ops_main.s1.jsonl.imported-1767225600000"), data: lines("s1", "", "b1", "b2"), kind: bs.LeftoverImportArchive},
		{path: filepath.Join(archive, "agent_ops_x.s2.jsonl.imported-1767225600001"), data: lines("s2", "[[extracted-b1]]", "b1"), kind: bs.LeftoverImportArchive, unique: true},
		{path: filepath.Join(archive, "nested", "agent_ops_main.sessions.json.imported-1767225600002"), data: []byte("{\n  \"agent:ops:main\": {\"sessionId\": \"s1\"}\n}\n"), kind: bs.LeftoverImportArchive},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o640); err != nil {
			t.Fatal(err)
		}
		mt := f.mtime
		if mt.IsZero() {
			mt = old
		}
		if err := os.Chtimes(f.path, mt, mt); err != nil {
			t.Fatal(err)
		}
		if f.kind == "" {
			fx.never = append(fx.never, f.path)
			continue
		}
		fx.want[f.path] = f.kind
		fx.unique[f.path] = f.unique
	}
	rows := func(data []byte) []string { return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") }
	testcorpus.WriteStore(t, root, "ops", testcorpus.StoreSession{ID: "s1", Status: "done", Rows: rows(lines("s1", "", "b1", "b2"))},
		testcorpus.StoreSession{ID: "s2", Status: "done", Rows: rows(lines("s2", "", "b1"))})
	set, err := backend.Open(ctx, root, backend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The value of s2's placeholder is in the side store.
	ref := bs.SessionRef{Backend: bs.BackendJSONL, Agent: "ops", ID: "s2", Path: filepath.Join(ops, "sessions", "s2.jsonl")}
	if err := set.Side.Put(ctx, ref, []bs.SideRecord{{EntryID: "b1", Data: []byte(`{"v":1}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := set.Side.Sync(ctx, ref); err != nil {
		t.Fatal(err)
	}
	fx.never = append(fx.never, filepath.Join(ops, "agent", testcorpus.StoreFile))
	fx.set = set
	fx.bin = trash.New(set.Store, set.AgentsDir, set.StateDir)
	return fx
}

func (fx *leftoverFx) scan(t *testing.T) ([]bs.Leftover, []error) {
	t.Helper()
	sc, ok := fx.set.Store.(bs.LeftoverScanner)
	if !ok {
		t.Fatalf("the store %T is no LeftoverScanner", fx.set.Store)
	}
	found, skipped, err := sc.Leftovers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return found, skipped
}

// du runs du with flag on files and returns the total.
func du(t *testing.T, flag string, files []string) int64 {
	t.Helper()
	out, err := exec.Command("du", append([]string{"-c", flag}, files...)...).Output()
	if err != nil {
		t.Skipf("du: %v", err)
	}
	ls := strings.Split(strings.TrimSpace(string(out)), "\n")
	n, err := strconv.ParseInt(strings.Fields(ls[len(ls)-1])[0], 10, 64)
	if err != nil {
		t.Fatalf("du output %q: %v", out, err)
	}
	return n
}

func TestLeftoversScan(t *testing.T) {
	fx := newLeftoverFx(t)
	found, skipped := fx.scan(t)
	if len(skipped) > 0 {
		t.Fatalf("skipped: %v", skipped)
	}
	got := map[string]bs.Leftover{}
	for _, l := range found {
		got[l.Path] = l
	}
	for _, p := range fx.never {
		if _, ok := got[p]; ok {
			t.Errorf("%s listed as a leftover (%s)", p, got[p].Kind)
		}
	}
	for p, kind := range fx.want {
		l, ok := got[p]
		if !ok {
			t.Errorf("%s (%s) not listed", filepath.Base(p), kind)
			continue
		}
		if l.Kind != kind || l.Unique != fx.unique[p] || l.Why == "" {
			t.Errorf("%s: kind %s unique %v (%s), want %s unique %v", filepath.Base(p), l.Kind, l.Unique, l.Why, kind, fx.unique[p])
		}
	}
	if len(found) != len(fx.want) {
		t.Errorf("%d leftovers, want %d", len(found), len(fx.want))
	}
	for _, c := range []struct{ file, why string }{
		{"gone1.jsonl.deleted.2026-01-02T00-00-00.000Z", "2 entries no live session has"},
		{"live1.jsonl.bak-123-1767225600000", "copy of main/live1: every entry is in the live transcript"},
		{"agent_ops_main.s1.jsonl.imported-1767225600000", "copy of ops/s1: every entry is in the live transcript"},
		{"agent_ops_x.s2.jsonl.imported-1767225600001", "holds 1 placeholder whose values are in the side store"},
	} {
		for _, l := range found {
			if filepath.Base(l.Path) == c.file && l.Why != c.why {
				t.Errorf("%s: why %q, want %q", c.file, l.Why, c.why)
			}
		}
	}
	// Per agent and kind, the bytes are du's.
	groups := map[string][]bs.Leftover{}
	for _, l := range found {
		groups[l.Agent+"/"+l.Kind] = append(groups[l.Agent+"/"+l.Kind], l)
	}
	for g, ls := range groups {
		var b, disk int64
		var paths []string
		for _, l := range ls {
			b += l.Bytes
			disk += l.DiskBytes
			paths = append(paths, l.Path)
		}
		if want := du(t, "-b", paths); b != want {
			t.Errorf("%s: %d bytes, du -b says %d", g, b, want)
		}
		if want := du(t, "-B1", paths); disk != want {
			t.Errorf("%s: %d disk bytes, du -B1 says %d", g, disk, want)
		}
	}
}

// stamped returns every file under root with its bytes, mode and mtime.
func stamped(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = fmt.Sprintf("%s|%v|%d", data, fi.Mode(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCollectRestore(t *testing.T) {
	ctx := context.Background()
	fx := newLeftoverFx(t)
	found, _ := fx.scan(t)
	before := stamped(t, fx.root)
	item, err := fx.bin.Collect(ctx, found, trash.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if item == nil || item.Kind != trash.ItemLeftovers || item.State != trash.StateTrashed {
		t.Fatalf("item %+v", item)
	}
	var wantMoved int
	for _, l := range found {
		_, err := os.Lstat(l.Path)
		switch {
		case l.Unique && err != nil:
			t.Errorf("unique %s was collected without IncludeUnique", l.Path)
		case !l.Unique && err == nil:
			t.Errorf("%s still in place after collect", l.Path)
		}
		if !l.Unique {
			wantMoved++
		}
	}
	if len(item.Leftovers) != wantMoved || item.Files != wantMoved {
		t.Errorf("item holds %d leftovers, %d files, want %d", len(item.Leftovers), item.Files, wantMoved)
	}
	got, err := fx.bin.Get(ctx, item.ID)
	if err != nil || got.Kind != trash.ItemLeftovers {
		t.Fatalf("get: %+v, %v", got, err)
	}
	items, err := fx.bin.List(ctx)
	if err != nil || len(items) != 1 {
		t.Fatalf("list: %d items, %v", len(items), err)
	}
	audit, _ := os.ReadFile(filepath.Join(fx.set.StateDir, "audit.jsonl"))
	if !bytes.Contains(audit, []byte(`"action":"collect"`)) || !bytes.Contains(audit, []byte(item.ID)) {
		t.Errorf("audit log lacks the collect: %s", audit)
	}
	if _, err := fx.bin.Restore(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	after := stamped(t, fx.root)
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s not back as it was", p)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files after restore, %d before", len(after), len(before))
	}
	if _, err := fx.bin.Get(ctx, item.ID); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("the item is still there after restore: %v", err)
	}
	audit, _ = os.ReadFile(filepath.Join(fx.set.StateDir, "audit.jsonl"))
	if !bytes.Contains(audit, []byte(`"action":"trash_restore"`)) {
		t.Errorf("audit log lacks the restore: %s", audit)
	}

	// With IncludeUnique everything goes; a place occupied meanwhile
	// makes Restore refuse, moving nothing; Purge removes the item.
	item, err = fx.bin.Collect(ctx, found, trash.CollectOptions{IncludeUnique: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(item.Leftovers) != len(found) {
		t.Fatalf("%d collected, want %d", len(item.Leftovers), len(found))
	}
	occupied := found[0].Path
	if err := os.WriteFile(occupied, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.bin.Restore(ctx, item.ID); !errors.Is(err, trash.ErrOccupied) || !strings.Contains(err.Error(), occupied) {
		t.Fatalf("restore onto an occupied place: %v", err)
	}
	for _, l := range found[1:] {
		if _, err := os.Lstat(l.Path); err == nil {
			t.Errorf("%s moved back by a refused restore", l.Path)
		}
	}
	if _, err := fx.bin.Purge(ctx, item.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fx.set.StateDir, "trash", item.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("purged item still there: %v", err)
	}
}

func TestCollectChanged(t *testing.T) {
	ctx := context.Background()
	fx := newLeftoverFx(t) // each case changes a file and scans afresh
	for _, c := range []struct {
		name   string
		change func(p string) error
	}{
		{"appended", func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString("more\n")
			f.Close()
			return err
		}},
		{"touched", func(p string) error { now := time.Now(); return os.Chtimes(p, now, now) }},
		{"replaced", func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, _ := os.Stat(p)
			// A new file (a new inode: the old one is still in use while
			// it is written) renamed over the old, same bytes and time.
			if err := os.WriteFile(p+".new", data, 0o640); err != nil {
				return err
			}
			if err := os.Chtimes(p+".new", fi.ModTime(), fi.ModTime()); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}},
		{"vanished", os.Remove},
	} {
		t.Run(c.name, func(t *testing.T) {
			found, _ := fx.scan(t)
			slices.SortFunc(found, func(a, b bs.Leftover) int { return strings.Compare(a.Path, b.Path) })
			victim := found[len(found)-1].Path // the last to move: the others are moved back
			if err := c.change(victim); err != nil {
				t.Fatal(err)
			}
			before := stamped(t, fx.root)
			item, err := fx.bin.Collect(ctx, found, trash.CollectOptions{IncludeUnique: true})
			if !errors.Is(err, bs.ErrChanged) || !strings.Contains(err.Error(), victim) || item != nil {
				t.Fatalf("collect of a changed file: %v, %v", item, err)
			}
			if after := stamped(t, fx.root); len(after) != len(before) {
				t.Errorf("%d files after the failed collect, %d before", len(after), len(before))
			} else {
				for p, s := range before {
					if after[p] != s {
						t.Errorf("%s not as it was after the failed collect", p)
					}
				}
			}
			if items, _ := fx.bin.List(ctx); len(items) != 0 {
				t.Errorf("a failed collect left %d items", len(items))
			}
		})
	}
}

func TestCollectRefusesOutside(t *testing.T) {
	ctx := context.Background()
	fx := newLeftoverFx(t)
	other := filepath.Join(t.TempDir(), "x.tmp")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, l := range []bs.Leftover{
		{Kind: bs.LeftoverTemp, Path: other},
		{Kind: "sessions", Path: filepath.Join(fx.root, "main", "sessions", "live1.jsonl")},
		{Kind: bs.LeftoverTemp, Path: "main/sessions/x.tmp"},
	} {
		if _, err := fx.bin.Collect(ctx, []bs.Leftover{l}, trash.CollectOptions{}); !errors.Is(err, bs.ErrInvalid) {
			t.Errorf("collect of %+v: %v, want ErrInvalid", l, err)
		}
	}
	if item, err := fx.bin.Collect(ctx, nil, trash.CollectOptions{}); item != nil || err != nil {
		t.Errorf("collect of nothing: %v, %v", item, err)
	}
}

func TestCollectExpire(t *testing.T) {
	ctx := context.Background()
	fx := newLeftoverFx(t)
	found, _ := fx.scan(t)
	item, err := fx.bin.Collect(ctx, found, trash.CollectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fx.bin.Clock = fixedClock(item.ExpiresAt.Add(time.Second))
	n, b, err := fx.bin.CleanExpired(ctx)
	if err != nil || n != len(item.Leftovers) || b != item.Bytes {
		t.Fatalf("clean expired: %d files, %d bytes, %v; want %d, %d", n, b, err, len(item.Leftovers), item.Bytes)
	}
	if _, err := fx.bin.Get(ctx, item.ID); !errors.Is(err, bs.ErrNotFound) {
		t.Errorf("expired item still there: %v", err)
	}
}

func TestLeftoversUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every file")
	}
	fx := newLeftoverFx(t)
	p := filepath.Join(fx.root, "main", "sessions", "gone1.jsonl.deleted.2026-01-02T00-00-00.000Z")
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(p, 0o600)
	found, skipped := fx.scan(t)
	if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), p) || !strings.Contains(skipped[0].Error(), "cannot be read") {
		t.Fatalf("skipped %v, want one error naming %s", skipped, p)
	}
	if len(found) != len(fx.want)-1 {
		t.Errorf("%d found, want the %d others", len(found), len(fx.want)-1)
	}
}

// A crash in the middle of a collect leaves a "trashing" item; Restore
// puts back what was moved, and the rest is still in place.
func TestCollectCrash(t *testing.T) {
	ctx := context.Background()
	fx := newLeftoverFx(t)
	found, _ := fx.scan(t)
	before := stamped(t, fx.root)
	trash.SetFailpoint(func(step string) error {
		if step == "leftover:2" {
			return trash.ErrCrash
		}
		return nil
	})
	_, err := fx.bin.Collect(ctx, found, trash.CollectOptions{IncludeUnique: true})
	trash.SetFailpoint(nil)
	if !errors.Is(err, trash.ErrCrash) {
		t.Fatalf("collect: %v, want the crash", err)
	}
	items, err := fx.bin.List(ctx)
	if err != nil || len(items) != 1 || items[0].State != trash.StateTrashing {
		t.Fatalf("after the crash: %+v, %v", items, err)
	}
	fx.bin.Clock = fixedClock(items[0].ExpiresAt.Add(time.Second))
	if n, _, err := fx.bin.CleanExpired(ctx); n != 0 || err != nil {
		t.Errorf("clean expired took a trashing item: %d, %v", n, err)
	}
	fx.bin.Clock = nil
	if _, err := fx.bin.Restore(ctx, items[0].ID); err != nil {
		t.Fatal(err)
	}
	after := stamped(t, fx.root)
	if len(after) != len(before) {
		t.Errorf("%d files after restore, %d before", len(after), len(before))
	}
	for p, s := range before {
		if after[p] != s {
			t.Errorf("%s not back as it was", p)
		}
	}
}

// TestCollectNeverOverwrites: a file the host writes at a leftover's place
// while it is in the trash is never replaced, neither by the rollback of
// a failed collect nor by a restore: the trashed copy stays in the item
// and the error wraps ErrOccupied naming the place.
func TestCollectNeverOverwrites(t *testing.T) {
	ctx := context.Background()
	defer trash.SetFailpoint(nil)
	t.Run("Rollback", func(t *testing.T) {
		fx := newLeftoverFx(t)
		found, _ := fx.scan(t)
		victim := found[0].Path // the first moved
		trash.SetFailpoint(func(step string) error {
			if step != "leftover:1" {
				return nil
			}
			if err := os.WriteFile(victim, []byte("the host's new file"), 0o600); err != nil {
				t.Fatal(err)
			}
			return fmt.Errorf("disk full (test)")
		})
		_, err := fx.bin.Collect(ctx, found, trash.CollectOptions{IncludeUnique: true})
		trash.SetFailpoint(nil)
		if !errors.Is(err, trash.ErrOccupied) || !strings.Contains(err.Error(), victim) {
			t.Fatalf("collect: %v; want ErrOccupied naming %s", err, victim)
		}
		if got, _ := os.ReadFile(victim); string(got) != "the host's new file" {
			t.Fatalf("the rollback replaced the host's file: %.60q", got)
		}
		items, err := fx.bin.List(ctx)
		if err != nil || len(items) != 1 {
			t.Fatalf("want the item kept with the trashed copy: %+v, %v", items, err)
		}
		if _, err := os.Stat(filepath.Join(fx.set.StateDir, "trash", items[0].ID, filepath.FromSlash(items[0].Leftovers[0].Name))); err != nil {
			t.Errorf("the trashed copy is gone: %v", err)
		}
		if _, err := os.Stat(found[1].Path); err != nil {
			t.Errorf("the second file was not moved back: %v", err)
		}
	})
	t.Run("Restore", func(t *testing.T) {
		fx := newLeftoverFx(t)
		found, _ := fx.scan(t)
		item, err := fx.bin.Collect(ctx, found, trash.CollectOptions{IncludeUnique: true})
		if err != nil {
			t.Fatal(err)
		}
		victim := item.Leftovers[1].Path
		trash.SetFailpoint(func(step string) error {
			if step == "restore-leftover:1" {
				if err := os.WriteFile(victim, []byte("the host's new file"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			return nil
		})
		_, err = fx.bin.Restore(ctx, item.ID)
		trash.SetFailpoint(nil)
		if !errors.Is(err, trash.ErrOccupied) || !strings.Contains(err.Error(), victim) {
			t.Fatalf("restore: %v; want ErrOccupied naming %s", err, victim)
		}
		if got, _ := os.ReadFile(victim); string(got) != "the host's new file" {
			t.Fatalf("the restore replaced the host's file: %.60q", got)
		}
		if _, err := os.Stat(filepath.Join(fx.set.StateDir, "trash", item.ID, filepath.FromSlash(item.Leftovers[1].Name))); err != nil {
			t.Errorf("the trashed copy is gone: %v", err)
		}
		if _, err := os.Stat(item.Leftovers[0].Path); err != nil {
			t.Errorf("the first file is not back: %v", err)
		}
	})
}
