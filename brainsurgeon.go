package brainsurgeon

import (
	"context"
	"iter"
	"time"
)

// LineKind tells what a raw transcript line holds.
type LineKind uint8

// The kinds of transcript lines.
const (
	// KindEntry is a line holding one JSON object that is a transcript entry.
	KindEntry LineKind = iota
	// KindHeader is the session header line (type "session").
	KindHeader
	// KindBlank is an empty line or one holding only white space.
	KindBlank
	// KindMalformed is a line that is not exactly one JSON object: invalid
	// JSON, a JSON value that is not an object, or two values glued together.
	KindMalformed
)

// String returns the lower-case name of the kind.
func (k LineKind) String() string {
	switch k {
	case KindEntry:
		return "entry"
	case KindHeader:
		return "header"
	case KindBlank:
		return "blank"
	case KindMalformed:
		return "malformed"
	}
	return "unknown"
}

// TriggerType names a class of extractable values (DESIGN decision 4).
type TriggerType string

// The trigger types.
const (
	TriggerThinking   TriggerType = "thinking"
	TriggerToolResult TriggerType = "tool_result"
	TriggerToolCall   TriggerType = "tool_call"
	TriggerImage      TriggerType = "image"
	TriggerAssistant  TriggerType = "assistant"
	TriggerUser       TriggerType = "user"
	TriggerSystem     TriggerType = "system"
)

// TriggerTypes lists every trigger type in a stable order.
var TriggerTypes = []TriggerType{
	TriggerThinking, TriggerToolResult, TriggerToolCall, TriggerImage,
	TriggerAssistant, TriggerUser, TriggerSystem,
}

// Value is one JSON value inside a raw line: its JSON Pointer (RFC 6901)
// and the byte span [Start, End) of its raw encoding in the line, quotes and
// escapes included for strings.
type Value struct {
	// Pointer is the JSON Pointer of the value, for example
	// "/message/content/2/text".
	Pointer string
	// Start is the offset of the value's first byte in the raw line.
	Start int
	// End is the offset just past the value's last byte in the raw line.
	End int
}

// Len returns the length of the value's raw encoding in bytes.
func (v Value) Len() int { return v.End - v.Start }

// Candidate is a value that extraction may move out of an entry.
type Candidate struct {
	Value
	// Trigger is the trigger type the value belongs to.
	Trigger TriggerType
	// Block is true when the value is a whole content block (an image)
	// rather than a string.
	Block bool
}

// Block is one content block of a message.
type Block struct {
	// Index is the block's position in the content array.
	Index int
	// Type is the block's "type" member ("text", "thinking", "toolCall",
	// "image", …).
	Type string
	// Start and End delimit the block's raw JSON object in the line.
	Start, End int
}

// Entry is one line of a transcript with its lazily built parsed view.
//
// Raw holds the line exactly as stored, without the terminating "\n" (a
// "\r" before it is kept). The parsed fields are filled by the reader that
// produced the entry; entries of kind KindBlank or KindMalformed carry only
// Raw, Line, Offset and Err.
type Entry struct {
	// Line is the 1-based line number in a JSONL file, or the row sequence
	// number in a database store.
	Line int
	// Offset is the byte offset of the line's first byte in the file.
	Offset int64
	// Raw is the stored line. The caller must not modify it.
	Raw []byte
	// Kind tells what the line holds.
	Kind LineKind
	// Err says why a line is KindMalformed; nil otherwise.
	Err error

	// Type is the entry's "type" member ("message", "compaction", …).
	Type string
	// ID is the entry's identity: "__id" if present, else "id".
	ID string
	// ParentID is the "parentId" member; empty for a root or a v1 entry.
	ParentID string
	// Timestamp is the entry's time, taken from the first source present in
	// seed 000's order; the zero time when none is present.
	Timestamp time.Time
	// Role is "message.role" (or a top-level "role" in the flat format).
	Role string
	// CustomType is the "customType" member of custom entries.
	CustomType string
	// Blocks are the content blocks of "message.content" (or of a
	// custom_message's "content"), in order.
	Blocks []Block
	// Strings lists every string value of the line (not member names) in
	// document order.
	Strings []Value
	// Extractable is the raw "_extractable" member ("true", "false", a
	// number), or nil when absent.
	Extractable []byte
	// Restored is the "_restored" time, or the zero time.
	Restored time.Time
}

// SessionRef identifies one session of a store.
type SessionRef struct {
	// Agent is the agent id ("main"). It is empty for a pi session.
	Agent string
	// ID is the session id: the transcript's file stem for OpenClaw, the
	// uuid after the last "_" of the file stem for pi.
	ID string
	// Key is the OpenClaw session key from sessions.json ("agent:main:main"),
	// or empty for an orphan transcript.
	Key string
	// Label is a human label from sessions.json, if any.
	Label string
	// Status is the run status recorded in sessions.json ("running", "done",
	// …), or empty.
	Status string
	// Path is the transcript's absolute path.
	Path string
}

// String returns "agent/id", or the id alone when there is no agent.
func (r SessionRef) String() string {
	if r.Agent == "" {
		return r.ID
	}
	return r.Agent + "/" + r.ID
}

// Version is a fingerprint of a stored transcript. A writer compares it
// under the host's lock with the transcript's current state and refuses to
// write when they differ.
type Version struct {
	Dev, Inode uint64
	Size       int64
	// ModTime is the modification time in nanoseconds since the Unix epoch.
	ModTime int64
}

// Splice replaces the bytes [Start, End) of a raw line with With.
type Splice struct {
	Start, End int
	With       []byte
}

// Edit changes one line of a transcript by splicing bytes.
type Edit struct {
	// Line is the 1-based line number (or row sequence number) to edit.
	Line int
	// ID, when not empty, is the entry id the line must carry.
	ID string
	// Splices are applied to the line's raw bytes. They must be sorted by
	// Start and must not overlap.
	Splices []Splice
}

// Transcript is a session read from a store. Entries streams the lines in
// order; the entry passed to the loop body is only valid until the next
// iteration.
type Transcript interface {
	// Ref returns the session the transcript belongs to.
	Ref() SessionRef
	// Version returns the fingerprint of the state that was read.
	Version() Version
	// Entries streams every line in order.
	Entries(ctx context.Context) iter.Seq2[*Entry, error]
}

// Lister lists the sessions of a store.
type Lister interface {
	// Sessions returns every live session the store knows. Archived copies
	// and sidecar files are never returned.
	Sessions(ctx context.Context) ([]SessionRef, error)
	// Resolve finds one session by "agent/sessionId", a path or a session
	// key (or a unique suffix of one). It returns an error wrapping
	// ErrNotFound or ErrAmbiguous.
	Resolve(ctx context.Context, name string) (SessionRef, error)
}

// Opener reads transcripts.
type Opener interface {
	// Open reads the session's transcript.
	Open(ctx context.Context, ref SessionRef) (Transcript, error)
}

// Editor writes transcripts safely. Both methods return an error wrapping
// ErrBusy when the session is in use, and one wrapping ErrChanged when the
// transcript no longer matches base.
type Editor interface {
	// Rewrite applies edits to the transcript read at base.
	Rewrite(ctx context.Context, ref SessionRef, base Version, edits []Edit) error
	// Append adds entries (raw JSON objects without a newline) at the end.
	Append(ctx context.Context, ref SessionRef, entries [][]byte) error
}

// Store is a transcript backend: JSONL files or a database.
type Store interface {
	Lister
	Opener
	Editor
}

// Clock tells the time. A nil Clock means the system clock.
type Clock interface {
	Now() time.Time
}

// SystemClock is the Clock that reads time.Now.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Now returns c.Now(), or time.Now() when c is nil.
func Now(c Clock) time.Time {
	if c == nil {
		return time.Now()
	}
	return c.Now()
}
