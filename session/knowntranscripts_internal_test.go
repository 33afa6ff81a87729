package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestKnownTranscripts: a file IsTranscript accepted is accepted again from
// the remembered stamp while it is appended to, and read again when it is
// replaced by rename or shrinks.
func TestKnownTranscripts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	header := `{"type":"session","version":3,"id":"a"}` + "\n"
	if err := os.WriteFile(p, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := isTranscript(p); err != nil {
		t.Fatalf("a transcript: %v", err)
	}
	knownTranscripts.Lock()
	_, remembered := knownTranscripts.m[p]
	knownTranscripts.Unlock()
	if !remembered {
		t.Skip("this file system gives no inode numbers; nothing is remembered")
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"type":"message","id":"b"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := isTranscript(p); err != nil {
		t.Fatalf("after an append: %v", err)
	}

	// Replaced by rename: a new inode, read again.
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte(`{"a":1}`+"\n"+`{"a":2}`+"\n"+`{"a":3}`+"\n"+`{"a":4}`+"\n"+`{"a":5}`+"\n"+`{"a":6}`+"\n"+`{"a":7}`+"\n"+`{"a":8}`+"\n"+`{"a":9}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if err := isTranscript(p); !errors.Is(err, ErrNotTranscript) {
		t.Fatalf("after a rename: %v, want ErrNotTranscript", err)
	}

	// Accepted again, then truncated to something shorter: read again.
	if err := os.WriteFile(p, []byte(header+header), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := isTranscript(p); err != nil {
		t.Fatalf("a transcript again: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{"a":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := isTranscript(p); !errors.Is(err, ErrNotTranscript) {
		t.Fatalf("after a truncation: %v, want ErrNotTranscript", err)
	}
}
