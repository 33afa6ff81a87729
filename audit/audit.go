package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// FileName is the name of the audit log in BrainSurgeon's state dir.
const FileName = "audit.jsonl"

// Path returns the audit log of the state dir stateDir:
// "<stateDir>/audit.jsonl".
func Path(stateDir string) string {
	return filepath.Join(stateDir, FileName)
}

// Event is one line of the audit log. The first six members are in
// every line; the others only where they apply (the trash's "delete" and
// "delete_extracted" lines and its other steps).
type Event struct {
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Session string    `json:"session"`
	Entry   string    `json:"entry"`
	Path    string    `json:"path"`
	Error   string    `json:"error"`
	// Agent and SessionID name the session on their own.
	Agent     string `json:"agent,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// MovedToTrash says whether a deletion went to the trash (true) or
	// removed the files for good (false); TrashID names the trash item.
	MovedToTrash *bool  `json:"moved_to_trash,omitempty"`
	TrashID      string `json:"trash_id,omitempty"`
	// FilesRemoved and BytesRemoved count the files (and their bytes) a
	// step moved or removed.
	FilesRemoved *int   `json:"files_removed,omitempty"`
	BytesRemoved *int64 `json:"bytes_removed,omitempty"`
	// Actor is who asked, when known (an API key's label, "cli",
	// "retention").
	Actor string `json:"actor,omitempty"`
}

// Append appends ev as one JSON line to the audit log at path, creating it
// (0600, its directory 0700) when needed. The line is written with a
// single write on an O_APPEND descriptor, so concurrent writers do not
// interleave. An empty path is an error wrapping brainsurgeon.ErrInvalid.
func Append(path string, ev Event) error {
	if path == "" {
		return fmt.Errorf("audit: no audit log path: %w", bs.ErrInvalid)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	line = append(line, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}
