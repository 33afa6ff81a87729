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

// leftoverTranscript is a small transcript of session id with one entry.
func leftoverTranscript(id string) string {
	return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}` + "\n" +
		`{"type":"message","id":"e` + id + `","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}` + "\n"
}

// A sessions.json that does not read lists no orphan (which transcripts
// are live is unknown) and says so; one that names no transcript makes
// every transcript an orphan that holds history no live session has, so
// that a collect keeps it. No transcript is ever a copy of itself.
func TestLeftoversSessionsJSONNamesNone(t *testing.T) {
	for _, c := range []struct {
		name, store string
		orphans     bool
	}{
		{"Truncated", `{`, false},
		{"NotAnObject", `[]`, false},
		{"Empty", `{}`, true},
		{"OtherKeyOnly", `{"agent:main:x":{"sessionId":"gone"}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			sd := filepath.Join(root, "main", "sessions")
			writeOld(t, filepath.Join(sd, "s1.jsonl"), leftoverTranscript("s1"))
			writeOld(t, filepath.Join(sd, "s2.jsonl"), leftoverTranscript("s2"))
			writeOld(t, filepath.Join(sd, "s1.jsonl.deleted.2026-01-01T00-00-00.000Z"), leftoverTranscript("s1"))
			writeOld(t, filepath.Join(sd, "sessions.json"), c.store)
			found, skipped, err := NewStore(root).Leftovers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			orphans := 0
			for _, l := range found {
				switch l.Kind {
				case bs.LeftoverOrphan:
					orphans++
					if !l.Unique || !strings.Contains(l.Why, "no live session has") {
						t.Errorf("orphan %s: unique %v, why %q; want unique: it is the only copy of its entries", l.Path, l.Unique, l.Why)
					}
				case bs.LeftoverDeleted:
					// A copy of s1 when s1 is live (the store does not
					// read), unique when it is not.
					if l.Unique == !c.orphans {
						t.Errorf("deleted %s: unique %v (%q)", l.Path, l.Unique, l.Why)
					}
				}
			}
			if c.orphans && orphans != 2 {
				t.Errorf("found %d orphans, want 2: %+v", orphans, found)
			}
			if !c.orphans {
				if orphans != 0 {
					t.Errorf("found %d orphans although sessions.json does not read: %+v", orphans, found)
				}
				if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "orphan transcripts not listed") {
					t.Errorf("skipped = %v; want one error saying no orphan is listed", skipped)
				}
			}
		})
	}
}

// A leftover is never judged against a live transcript that is itself.
func TestLeftoverNotCopyOfItself(t *testing.T) {
	root := t.TempDir()
	sd := filepath.Join(root, "main", "sessions")
	writeOld(t, filepath.Join(sd, "s1.jsonl"), leftoverTranscript("s1"))
	writeOld(t, filepath.Join(sd, "sessions.json"), `{"agent:main:main":{"sessionId":"s1"}}`)
	bak := filepath.Join(sd, "s1.jsonl.bak-1-2")
	if err := os.Link(filepath.Join(sd, "s1.jsonl"), bak); err != nil {
		t.Skip("no hard links here:", err)
	}
	found, _, err := NewStore(root).Leftovers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || !found[0].Unique {
		t.Fatalf("found %+v; want the hard link listed as unique (it is the live transcript's own inode)", found)
	}
}

// A checkpoint the host's registry still names is kept by a collect.
func TestLeftoversReferencedCheckpoint(t *testing.T) {
	root := t.TempDir()
	sd := filepath.Join(root, "main", "sessions")
	writeOld(t, filepath.Join(sd, "s1.jsonl"), leftoverTranscript("s1"))
	ref := "s1.checkpoint.11111111-2222-4333-8444-555555555555.jsonl"
	free := "s1.checkpoint.99999999-2222-4333-8444-555555555555.jsonl"
	writeOld(t, filepath.Join(sd, ref), leftoverTranscript("s1"))
	writeOld(t, filepath.Join(sd, free), leftoverTranscript("s1"))
	// The registry holds another machine's paths: the base name matches.
	writeOld(t, filepath.Join(sd, "sessions.json"), `{"agent:main:main":{"sessionId":"s1","compactionCheckpoints":[`+
		`{"checkpointId":"c1","preCompaction":{"sessionId":"s1","sessionFile":"/home/other/.openclaw/agents/main/sessions/`+ref+`","leafId":"x"},`+
		`"postCompaction":{"sessionId":"s1","sessionFile":"/home/other/.openclaw/agents/main/sessions/s1.jsonl"}},`+
		`{"checkpointId":"c2","preCompaction":{"sessionFile":42}}, 7]},`+
		`"agent:main:odd":{"sessionId":"s9","compactionCheckpoints":"not a list"}}`)
	found, skipped, err := NewStore(root).Leftovers(context.Background())
	if err != nil || len(skipped) > 0 {
		t.Fatal(err, skipped)
	}
	got := map[string]bs.Leftover{}
	for _, l := range found {
		got[filepath.Base(l.Path)] = l
	}
	if l := got[ref]; !l.Unique || l.Why != "referenced by sessions.json (compactionCheckpoints of agent:main:main)" {
		t.Errorf("referenced checkpoint: unique %v, why %q", l.Unique, l.Why)
	}
	if l := got[free]; l.Unique || !strings.HasPrefix(l.Why, "copy of main/s1") {
		t.Errorf("unreferenced checkpoint: unique %v, why %q; want a copy", l.Unique, l.Why)
	}
}
