package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

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

// ErrNotTranscript means a file holds no session header and no entry: no
// line is a transcript line (only blank or malformed ones). It is
// brainsurgeon.ErrNotTranscript (so it wraps brainsurgeon.ErrInvalid),
// under the name the JSONL backend's callers know.
var ErrNotTranscript = bs.ErrNotTranscript

// headMax bounds what IsTranscript reads of a file.
const headMax = 64 << 10

// IsTranscript tells from its content whether the file at path is a
// transcript, the one rule every command, the API and discovery use (with
// ClassifyFile for names). It returns nil for a transcript and an error
// wrapping ErrNotTranscript that says what was expected and what was found
// for any other file; other errors (the file cannot be read) are returned
// as they are.
//
// The rule: the first line that is a whole JSON object decides. It must
// have a "type" member whose value is a string, as every session header
// ({"type":"session",…}) and every entry of every format has (pi and
// OpenClaw v1–v3, and the flat shape {"__id":…,"type":"tool_result",…}).
// Blank and malformed lines before it are skipped: malformed lines inside
// a transcript are kept and reported, never a reason to refuse it. A file
// that is empty, or in which no line is a JSON object, is not a
// transcript. Only the first 64 KiB are read: when they hold no whole
// object (a very long first entry), the object's beginning decides, and a
// file that cannot be told within them is taken for a transcript.
func IsTranscript(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkHead(f, fi.Size(), path)
}

// checkHead applies IsTranscript's rule to the file r of size bytes. It
// reads 4 KiB first (a session header is much shorter), and up to headMax
// only when they do not tell: discovery runs it on every transcript.
func checkHead(r io.ReaderAt, size int64, name string) error {
	if size > headFirst {
		err := checkPrefix(r, size, headFirst, name)
		if !errors.Is(err, errUndecided) {
			return err
		}
	}
	err := checkPrefix(r, size, headMax, name)
	if errors.Is(err, errUndecided) {
		return nil // cannot be told from its head: taken for a transcript
	}
	return err
}

// headFirst is what checkHead reads first.
const headFirst = 4 << 10

// errUndecided is checkPrefix's answer when the bytes it read do not tell.
var errUndecided = errors.New("undecided")

// checkPrefix applies IsTranscript's rule to the first max bytes of r (of
// size bytes); it returns errUndecided when they do not tell.
func checkPrefix(r io.ReaderAt, size, max int64, name string) error {
	buf := make([]byte, min(size, max))
	n, err := r.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", name, err)
	}
	buf = buf[:n]
	whole := int64(n) >= size
	notTranscript := func(what string) error {
		return &notTranscriptError{msg: fmt.Sprintf("%s is not a transcript: expected JSON lines whose first JSON object is a session header ({\"type\":\"session\",…}) or an entry with a \"type\" member; %s",
			name, what)}
	}
	malformed, blank := 0, 0
	for line := 1; len(buf) > 0; line++ {
		l, rest, complete := bytes.Cut(buf, []byte{'\n'})
		buf = rest
		complete = complete || whole
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			blank++
			continue
		}
		if !complete {
			// The first object runs past what was read: its beginning
			// decides when it says, else the file is taken for one.
			if l[0] != '{' {
				return errUndecided
			}
			t, ok := prefixType(l)
			switch {
			case ok && t:
				return nil
			case ok:
				return notTranscript(fmt.Sprintf("found at line %d a JSON object without a string \"type\" member", line))
			}
			return errUndecided
		}
		if l[0] != '{' {
			malformed++
			continue
		}
		var env struct {
			Type json.RawMessage `json:"type"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			malformed++
			continue
		}
		if len(env.Type) > 0 && env.Type[0] == '"' {
			return nil
		}
		what := "has no \"type\" member"
		if len(env.Type) > 0 {
			what = "has a \"type\" that is not a string"
		}
		return notTranscript(fmt.Sprintf("found at line %d the JSON object %s, which %s", line, quoteShort(l), what))
	}
	if !whole {
		return errUndecided // blank or malformed lines only, in the part read
	}
	switch {
	case malformed > 0:
		what := fmt.Sprintf("%d lines that are not JSON objects", malformed)
		if malformed == 1 {
			what = "1 line that is not a JSON object"
		}
		return notTranscript("found no JSON object, " + what)
	case blank > 0:
		return notTranscript(fmt.Sprintf("found only blank lines (%d)", blank))
	}
	return notTranscript("found an empty file")
}

// notTranscriptError is IsTranscript's error: its message says what was
// expected and found, and it wraps ErrNotTranscript.
type notTranscriptError struct{ msg string }

func (e *notTranscriptError) Error() string { return e.msg }
func (e *notTranscriptError) Unwrap() error { return ErrNotTranscript }

// prefixType reads the beginning of a JSON object and reports, when it
// gets that far, whether its "type" member is a string (ok false when the
// beginning does not tell).
func prefixType(l []byte) (isString, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(l))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false, false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return false, false
		}
		if k == "type" {
			return len(v) > 0 && v[0] == '"', true
		}
	}
	return false, true // a whole object without "type"
}

// quoteShort returns l for a message, cut to 60 bytes.
func quoteShort(l []byte) string {
	if len(l) > 60 {
		return string(l[:60]) + "…"
	}
	return string(l)
}
