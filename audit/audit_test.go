package audit_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
)

var now = time.Date(2026, 2, 20, 17, 30, 0, 0, time.UTC)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit.jsonl")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := audit.Append(path, audit.Event{Time: now, Action: "restore_corrupt", Entry: fmt.Sprint(i), Error: strings.Repeat("x", 500)}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(string(read(t, path))), "\n")
	if len(lines) != 20 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var ev audit.Event
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", fi.Mode(), err)
	}
	if err := audit.Append("", audit.Event{}); !errors.Is(err, bs.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

// TestLineFormat pins the bytes of a line: the members, their order and
// the omitempty rules are the on-disk format that readers of the log rely on.
func TestLineFormat(t *testing.T) {
	yes, files, size := true, 3, int64(4096)
	for _, tt := range []struct {
		name string
		ev   audit.Event
		want string
	}{
		{"Minimal", audit.Event{},
			`{"time":"0001-01-01T00:00:00Z","action":"","session":"","entry":"","path":"","error":""}`},
		{"Restore", audit.Event{Time: now, Action: "restore_corrupt", Session: "main/s1", Entry: "r1", Path: "side record r1", Error: "bad"},
			`{"time":"2026-02-20T17:30:00Z","action":"restore_corrupt","session":"main/s1","entry":"r1","path":"side record r1","error":"bad"}`},
		{"Trash", audit.Event{Time: now, Action: "delete_extracted", Path: "/a/x", Agent: "main", SessionID: "s1", MovedToTrash: &yes,
			TrashID: "t1", FilesRemoved: &files, BytesRemoved: &size, Actor: "cli"},
			`{"time":"2026-02-20T17:30:00Z","action":"delete_extracted","session":"","entry":"","path":"/a/x","error":"",` +
				`"agent":"main","session_id":"s1","moved_to_trash":true,"trash_id":"t1","files_removed":3,"bytes_removed":4096,"actor":"cli"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := audit.Append(path, tt.ev); err != nil {
				t.Fatal(err)
			}
			if got := string(read(t, path)); got != tt.want+"\n" {
				t.Fatalf("line\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPath(t *testing.T) {
	if got, want := audit.Path(filepath.Join("a", ".brainsurgeon")), filepath.Join("a", ".brainsurgeon", "audit.jsonl"); got != want {
		t.Fatalf("Path = %q, want %q", got, want)
	}
}
