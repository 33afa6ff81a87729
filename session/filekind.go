package session

import "strings"

// FileKind tells what a file found in a sessions directory is.
type FileKind int

// The kinds of files in a sessions directory. Only FileKindTranscript is a
// live session; every other kind is a sidecar, an archive or unrelated. The
// zero FileKind is FileKindOther.
const (
	// FileKindOther is anything else: dot files, temporary files, unknown
	// names, directory names such as "extracted".
	FileKindOther FileKind = iota
	// FileKindTranscript is a live transcript: "<stem>.jsonl" whose stem
	// holds no dot ("<sessionId>.jsonl", "<sessionId>-topic-<threadId>.jsonl",
	// pi's "<timestamp>_<uuid>.jsonl").
	FileKindTranscript
	// FileKindLock is a session write lock, "<file>.jsonl.lock".
	FileKindLock
	// FileKindResetArchive is a transcript archived by /new or /reset,
	// "<file>.jsonl.reset.<ts>".
	FileKindResetArchive
	// FileKindDeletedArchive is a transcript archived by sessions.delete or
	// maintenance, "<file>.jsonl.deleted.<ts>".
	FileKindDeletedArchive
	// FileKindBackup is a copy made before a repair,
	// "<file>.jsonl.bak-<pid>-<ms>" (or any "….jsonl.bak…" or "….bak").
	FileKindBackup
	// FileKindCheckpoint is a pre-compaction copy,
	// "<sessionId>.checkpoint.<uuid>.jsonl".
	FileKindCheckpoint
	// FileKindCorrupt is a copy of a file whose header was unreadable,
	// "<file>.corrupt-<ts>-<8hex>.jsonl".
	FileKindCorrupt
	// FileKindTrajectory is a runtime trace, "<id>.trajectory.jsonl" or
	// "<id>.trajectory-path.json".
	FileKindTrajectory
	// FileKindStore is the session store "sessions.json" and the files
	// named after it ("sessions.json.telegram-sent-messages.json", …).
	FileKindStore
)

// String returns the lower-case name of the kind ("transcript", "lock",
// "reset-archive", …).
func (k FileKind) String() string {
	switch k {
	case FileKindOther:
		return "other"
	case FileKindTranscript:
		return "transcript"
	case FileKindLock:
		return "lock"
	case FileKindResetArchive:
		return "reset-archive"
	case FileKindDeletedArchive:
		return "deleted-archive"
	case FileKindBackup:
		return "backup"
	case FileKindCheckpoint:
		return "checkpoint"
	case FileKindCorrupt:
		return "corrupt"
	case FileKindTrajectory:
		return "trajectory"
	case FileKindStore:
		return "store"
	}
	return "unknown"
}

// ClassifyFile tells what a file in a sessions directory is from its name
// alone. A name holding a path is reduced to its last element ("/" and "\"
// both separate). The rules are conservative: a name is a transcript only
// when it is "<stem>.jsonl" and the stem is not empty and holds no dot, so a
// sidecar of a kind not known today is never taken for a live session.
// Dot files and temporary files (ending in ".tmp" or "~", holding ".tmp-" or
// ".tmp.", or ".swp") are FileKindOther.
func ClassifyFile(name string) FileKind {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case name == "" || name[0] == '.':
		return FileKindOther
	case strings.HasPrefix(name, "sessions.json"):
		return FileKindStore
	case isTempName(name):
		return FileKindOther
	case strings.HasSuffix(name, ".lock"):
		return FileKindLock
	case strings.Contains(name, ".jsonl.reset."):
		return FileKindResetArchive
	case strings.Contains(name, ".jsonl.deleted."):
		return FileKindDeletedArchive
	case strings.Contains(name, ".jsonl.bak"), strings.HasSuffix(name, ".bak"):
		return FileKindBackup
	case strings.Contains(name, ".corrupt-"):
		return FileKindCorrupt
	case strings.Contains(name, ".checkpoint."):
		return FileKindCheckpoint
	case strings.HasSuffix(name, ".trajectory.jsonl"), strings.HasSuffix(name, ".trajectory-path.json"):
		return FileKindTrajectory
	}
	if stem, ok := strings.CutSuffix(name, ".jsonl"); ok && stem != "" && !strings.Contains(stem, ".") {
		return FileKindTranscript
	}
	return FileKindOther
}

func isTempName(name string) bool {
	return strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") || strings.Contains(name, ".tmp-") ||
		strings.Contains(name, ".tmp.")
}
