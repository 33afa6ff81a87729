package brainsurgeon

import (
	"context"
	"time"
)

// The kinds of host leftovers: files a host wrote next to its sessions
// that no live session reads.
const (
	// LeftoverDeleted is a transcript archived by a session deletion
	// ("<id>.jsonl.deleted.<time>").
	LeftoverDeleted = "deleted"
	// LeftoverReset is a transcript archived by /new or /reset
	// ("<id>.jsonl.reset.<time>").
	LeftoverReset = "reset"
	// LeftoverBackup is a backup the host wrote before an in-place repair
	// ("<id>.jsonl.bak-<pid>-<ms>", "*.bak").
	LeftoverBackup = "bak"
	// LeftoverTemp is a temp file of an interrupted write ("*.tmp", and
	// BrainSurgeon's own temp files older than a day).
	LeftoverTemp = "tmp"
	// LeftoverCorrupt is a copy of a file the host could not read
	// ("<id>.corrupt-<time>-<hex>.jsonl").
	LeftoverCorrupt = "corrupt"
	// LeftoverCheckpoint is a pre-compaction checkpoint copy
	// ("<id>.checkpoint.<uuid>.jsonl").
	LeftoverCheckpoint = "checkpoint"
	// LeftoverTrajectory is a runtime trace of a session that is gone
	// ("<id>.trajectory.jsonl", "<id>.trajectory-path.json").
	LeftoverTrajectory = "trajectory"
	// LeftoverOrphan is a transcript no session registry lists.
	LeftoverOrphan = "orphan_transcript"
	// LeftoverImportArchive is a JSONL original that OpenClaw's SQLite
	// importer archived ("session-sqlite-import-archive/").
	LeftoverImportArchive = "import_archive"
)

// Leftover is one file a host left next to its sessions.
type Leftover struct {
	// Agent is the agent whose directory holds the file.
	Agent string `json:"agent"`
	// Kind is one of the Leftover… kinds.
	Kind string `json:"kind"`
	// Path is the file, for people and for the store that found it (and
	// the trash, which moves it through that store).
	Path string `json:"path"`
	// SessionID is the session the file belonged to, when its name says.
	SessionID string `json:"session_id,omitempty"`
	// Bytes is the file's size (as du -b counts it); DiskBytes the space
	// it takes on disk (as du -B1 counts it).
	Bytes     int64 `json:"bytes"`
	DiskBytes int64 `json:"disk_bytes"`
	// ModTime is the file's modification time.
	ModTime time.Time `json:"mod_time"`
	// Inode is the file's inode number when the scan found it (0 when the
	// platform has none): a collect moves the file only while it is
	// still the same file.
	Inode uint64 `json:"inode,omitempty"`
	// Unique is true when the file still holds history that exists
	// nowhere else (entries no live transcript has, or placeholders whose
	// values are in the side store), or when the host still refers to it
	// (a compaction checkpoint its session registry names); Why says
	// which, or what it copies. A collect skips a unique file unless told
	// to include it.
	Unique bool   `json:"unique"`
	Why    string `json:"why"`
}

// LeftoverScanner is implemented by stores that keep a host's files on
// disk and know which of them are leftovers.
type LeftoverScanner interface {
	// Leftovers lists the host's leftovers of every agent. Files it could
	// not read or classify are in skipped, each error naming the file;
	// err is for a failure of the whole scan.
	Leftovers(ctx context.Context) (found []Leftover, skipped []error, err error)
}
