package session

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestLeftoverKind(t *testing.T) {
	for _, c := range []struct{ name, kind, sid string }{
		{"abc.jsonl", "", ""},
		{"abc.jsonl.lock", "", ""},
		{".abc.jsonl.lock.bs-tmp-1-aa", "", ""},
		{"sessions.json", "", ""},
		{"sessions.json.telegram-sent-messages.json", "", ""},
		{"sessions.json.77.tmp", bs.LeftoverTemp, ""},
		{"abc.jsonl.tmp", bs.LeftoverTemp, "abc"},
		{".abc.jsonl.bs-tmp-12-ff", bs.LeftoverTemp, "abc"},
		{".sessions.json.tmp-123", bs.LeftoverTemp, ""},
		{"abc.jsonl.deleted.2026-01-01T00-00-00.000Z", bs.LeftoverDeleted, "abc"},
		{"abc.jsonl.reset.2026-01-01T00-00-00.000Z", bs.LeftoverReset, "abc"},
		{"abc.jsonl.bak-1-2", bs.LeftoverBackup, "abc"},
		{"notes.bak", bs.LeftoverBackup, ""},
		{"abc.corrupt-2026-01-01-deadbeef.jsonl", bs.LeftoverCorrupt, "abc"},
		{"abc.jsonl.corrupt-2026-01-01-deadbeef.jsonl", bs.LeftoverCorrupt, "abc"},
		{"abc.checkpoint.0b4f6c2e.jsonl", bs.LeftoverCheckpoint, "abc"},
		{"abc.trajectory.jsonl", bs.LeftoverTrajectory, "abc"},
		{"abc.trajectory-path.json", bs.LeftoverTrajectory, "abc"},
		{"readme.txt", "", ""},
		{".hidden", "", ""},
	} {
		kind, sid := leftoverKind(c.name)
		if kind != c.kind || sid != c.sid {
			t.Errorf("leftoverKind(%q) = %q, %q; want %q, %q", c.name, kind, sid, c.kind, c.sid)
		}
	}
}

func writeOld(t *testing.T, p string, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

const piHeader = `{"type":"session","version":3,"id":"u1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}` + "\n"

// A pi sessions dir has no registry: its transcripts are all live, and
// only temp and backup files are leftovers.
func TestLeftoversPi(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "--home-u-p--")
	live := piHeader + `{"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n"
	writeOld(t, filepath.Join(proj, "2026-01-01T00-00-00-000Z_u1.jsonl"), live)
	writeOld(t, filepath.Join(proj, "2026-01-01T00-00-00-000Z_u1.jsonl.bak"), live)
	writeOld(t, filepath.Join(proj, "x.tmp"), "partial")
	writeOld(t, filepath.Join(proj, "2026-01-01T00-00-00-000Z_u1.jsonl.lock"), "{}")
	found, skipped, err := NewStore(root).Leftovers(context.Background())
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	if len(found) != 2 {
		t.Fatalf("found %+v, want the .bak and the .tmp", found)
	}
	for _, l := range found {
		if l.Agent != "--home-u-p--" || l.Unique {
			t.Errorf("%+v", l)
		}
		if l.Kind == bs.LeftoverBackup && !strings.HasPrefix(l.Why, "copy of ") {
			t.Errorf("the .bak: why %q, want a copy", l.Why)
		}
	}
}

// A file that cannot be read is skipped with an error naming it; the scan
// goes on.
func TestLeftoversUnreadableInternal(t *testing.T) {
	root := filepath.Join(t.TempDir(), "agents")
	dir := filepath.Join(root, "main", "sessions")
	writeOld(t, filepath.Join(dir, "a.jsonl.deleted.1"), piHeader)
	writeOld(t, filepath.Join(dir, "b.jsonl.deleted.1"), piHeader)
	bad := filepath.Join(dir, "a.jsonl.deleted.1")
	openLeftover = func(p string) (*os.File, error) {
		if p == bad {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.Open(p)
	}
	defer func() { openLeftover = os.Open }()
	found, skipped, err := NewStore(root).Leftovers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || filepath.Base(found[0].Path) != "b.jsonl.deleted.1" {
		t.Errorf("found %+v, want b only", found)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], fs.ErrPermission) || !strings.Contains(skipped[0].Error(), bad) ||
		!strings.Contains(skipped[0].Error(), "cannot be read") {
		t.Errorf("skipped %v, want one error naming %s", skipped, bad)
	}
}

// An archive whose modification time lies in the future (a clock set back)
// is still a leftover: only temp files and orphans wait for an age.
func TestLeftoversFutureModTime(t *testing.T) {
	root := filepath.Join(t.TempDir(), "agents")
	p := filepath.Join(root, "main", "sessions", "a.jsonl.deleted.2026-01-01T00-00-00.000Z")
	writeOld(t, p, piHeader)
	future := time.Now().Add(72 * time.Hour)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	found, skipped, err := NewStore(root).Leftovers(context.Background())
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	if len(found) != 1 || found[0].Kind != bs.LeftoverDeleted {
		t.Fatalf("found %+v, want the .deleted archive", found)
	}
}
