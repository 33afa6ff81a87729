package brainsurgeon

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"strconv"
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

// TriggerType names a class of extractable values: the kinds of content
// extraction may move out of a transcript.
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

// TriggerTypes returns every trigger type in a stable order. The slice is
// new on every call; the caller may keep and change it.
func TriggerTypes() []TriggerType {
	return []TriggerType{
		TriggerThinking, TriggerToolResult, TriggerToolCall, TriggerImage,
		TriggerAssistant, TriggerUser, TriggerSystem,
	}
}

// ParseTriggerType returns the trigger type named s, or an error wrapping
// ErrInvalid that lists the known names.
func ParseTriggerType(s string) (TriggerType, error) {
	for _, t := range TriggerTypes() {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown trigger type %q (expected one of thinking, tool_result, tool_call, image, assistant, user, system): %w", s, ErrInvalid)
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
	// Timestamp is the entry's time, taken from the first source present
	// in this order: "timestamp", "__ts", "message.created_at", "time"; the
	// zero time when none is present.
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
	// AppendMode is the top-level "appendMode" member ("side" for entries
	// that do not move the active leaf), or "".
	AppendMode string
	// Prepared is what Visitor.Prepare returned for the line, or nil.
	Prepared any
}

// Backend names of the two stores this module ships.
const (
	// BackendJSONL is the JSONL transcript files of pi and OpenClaw up to
	// 2026.7 (package session).
	BackendJSONL = "jsonl"
	// BackendSQLite is OpenClaw's per-agent SQLite store, 2026.8 and later
	// (package session/sqlite).
	BackendSQLite = "sqlite"
)

// SessionRef identifies one session of a store. A session's identity is
// its backend, agent and session id (see [SessionRef.Identity]); the other
// fields describe it.
type SessionRef struct {
	// Backend names the store that holds the session: BackendJSONL,
	// BackendSQLite, or another store's name. Empty means BackendJSONL.
	Backend string `json:"backend"`
	// Agent is the agent id ("main"). It is empty for a pi session.
	Agent string `json:"agent"`
	// ID is the session id: the transcript's file stem for OpenClaw, the
	// uuid after the last "_" of the file stem for pi, the session_id for
	// the SQLite store.
	ID string `json:"session_id"`
	// Key is the OpenClaw session key ("agent:main:main"), or empty for an
	// orphan transcript.
	Key string `json:"session_key"`
	// Label is a human label from the host's session registry, if any.
	Label string `json:"label"`
	// Status is the run status the host recorded ("running", "done", …),
	// or empty.
	Status string `json:"status"`
	// Path is where the transcript is stored, for people and for the
	// backend that made the ref: the JSONL file, or the SQLite database.
	// Code outside a backend must not derive anything from it.
	Path string `json:"path"`
}

// String returns "agent/id", or the id alone when there is no agent.
func (r SessionRef) String() string {
	if r.Agent == "" {
		return r.ID
	}
	return r.Agent + "/" + r.ID
}

// Identity returns the session's identity, "backend:agent/id", which does
// not depend on where the transcript is stored.
func (r SessionRef) Identity() string {
	b := r.Backend
	if b == "" {
		b = BackendJSONL
	}
	return b + ":" + r.Agent + "/" + r.ID
}

// Same reports whether r and o name the same session.
func (r SessionRef) Same(o SessionRef) bool { return r.Identity() == o.Identity() }

// Version is an opaque fingerprint of a stored transcript: a backend makes
// one when it reads a transcript and compares it, under the host's lock or
// inside its write transaction, with the transcript's current state before
// it writes. Two versions are compared with Equal; what they hold is the
// backend's business (a file's device, inode, size and modification time;
// a database's rewrite generation, last row and update time).
//
// The zero Version means "unknown" and equals only itself.
type Version struct {
	backend string
	token   string
	size    int64
}

// NewVersion returns a version of a backend's transcript. token must
// change whenever the transcript may have changed; size is the
// transcript's size in bytes, for reports.
func NewVersion(backend, token string, size int64) Version {
	return Version{backend: backend, token: token, size: size}
}

// Equal reports whether v and o are the same version of a transcript.
func (v Version) Equal(o Version) bool { return v == o }

// IsZero reports whether v is the zero Version.
func (v Version) IsZero() bool { return v == Version{} }

// Token returns the backend's encoding of the version.
func (v Version) Token() string { return v.token }

// Size returns the transcript's size in bytes when it was read.
func (v Version) Size() int64 { return v.size }

// String returns "backend:token".
func (v Version) String() string {
	if v.IsZero() {
		return "unknown version"
	}
	return v.backend + ":" + v.token
}

// Splice replaces the bytes [Start, End) of a raw line with With.
type Splice struct {
	Start, End int
	With       []byte
}

// Edit changes one line of a transcript by splicing bytes.
type Edit struct {
	// Line is the 1-based line number (the row's position in a database
	// store) to edit.
	Line int
	// ID, when not empty, is the entry id the line must carry.
	ID string
	// Sum, when not nil, is LineSum of the line's raw bytes as they were
	// read. A backend that can check it per line (a database store does)
	// refuses the whole write with ErrChanged when the line differs.
	Sum []byte
	// Splices are applied to the line's raw bytes. They must be sorted by
	// Start and must not overlap.
	Splices []Splice
	// Insert holds new lines (raw JSON objects without a newline) that
	// the store writes right after the line (after its splices), in
	// order. It is how a structural repair adds an entry inside the
	// transcript; the entries' own "parentId" members and the re-parented
	// child (a splice of its line) keep the tree whole. A store that
	// cannot add lines in place (a database store) refuses the whole
	// rewrite with an error wrapping ErrUnsupported.
	Insert [][]byte
	// Remove drops the line. BrainSurgeon removes only lines it inserted
	// itself, to undo a repair, after checking their bytes. An edit with
	// Remove carries no Splices and no Insert (ErrInvalid otherwise). A
	// store that cannot remove lines refuses with ErrUnsupported.
	Remove bool
}

// Structural reports whether the edit adds or removes lines.
func (e Edit) Structural() bool { return len(e.Insert) > 0 || e.Remove }

// lineSeed makes LineSum's hashes; sums are compared within one process.
var lineSeed = maphash.MakeSeed()

// LineSum returns a fast 64-bit hash of a raw line, for Edit.Sum: a store
// compares it with the line it is about to change. It guards against
// accidental change, not against an adversary, and is only meaningful
// within one process.
func LineSum(raw []byte) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), maphash.Bytes(lineSeed, raw))
}

// Header is the parsed session header (the first entry of type "session").
type Header struct {
	// Line is the header's line number, or 0 when there is none.
	Line int
	// Version is the format version: 1 when the header has none.
	Version int
	// ID is the session id; Cwd the working directory; ParentSession the
	// path of the session this one was forked from.
	ID, Cwd, ParentSession string
	// Timestamp is the header's time.
	Timestamp time.Time
}

// Node is the index record of one transcript line: what the tree, the
// context and the extraction policy need, without the line's bytes.
type Node struct {
	// Line is the 1-based line number. Offset and Len locate the line's raw
	// bytes (without the "\n") in a JSONL file; a database store sets
	// Offset to the row's sequence number.
	Line   int
	Offset int64
	Len    int
	// Type, ID, ParentID, Role and Timestamp are copied from the parsed
	// entry.
	Type      string
	ID        string
	ParentID  string
	Role      string
	Timestamp time.Time
	// BlockTypes are the types of the message's content blocks, in order.
	// Nodes may share the slice: it must not be modified.
	BlockTypes []string
	// Extra holds what only a few lines have (an error, a custom type,
	// compaction and leaf fields); nil for most lines. Read it through the
	// methods below, which are safe when it is nil.
	Extra *NodeExtra
	// Kind tells what the line holds.
	Kind LineKind
	// Side is true for entries appended with appendMode "side", which do
	// not move the active leaf.
	Side bool
}

// NodeExtra is the part of a Node that only a few lines have. An index
// holds one Node per line (100,000 in a 100 MB transcript), so these
// fields are kept out of line.
type NodeExtra struct {
	// Err tells why a malformed line is malformed.
	Err error
	// CustomType is the "customType" member of custom entries.
	CustomType string
	// FirstKept is a compaction's firstKeptEntryId; FirstKeptIndex a v1
	// compaction's firstKeptEntryIndex (-1 when absent).
	FirstKept      string
	FirstKeptIndex int
	// Target is a leaf control line's targetId.
	Target string
	// Silent is true for an entry whose type makes messages but that the
	// host sends no message for (see IsMessageLine): a branch_summary
	// without a summary.
	Silent bool
}

// Err returns why a malformed line is malformed, or nil.
func (n *Node) Err() error {
	if n.Extra == nil {
		return nil
	}
	return n.Extra.Err
}

// CustomType returns the "customType" member of a custom entry, or "".
func (n *Node) CustomType() string {
	if n.Extra == nil {
		return ""
	}
	return n.Extra.CustomType
}

// FirstKept returns a compaction's firstKeptEntryId, or "".
func (n *Node) FirstKept() string {
	if n.Extra == nil {
		return ""
	}
	return n.Extra.FirstKept
}

// FirstKeptIndex returns a v1 compaction's firstKeptEntryIndex, or -1.
func (n *Node) FirstKeptIndex() int {
	if n.Extra == nil {
		return -1
	}
	return n.Extra.FirstKeptIndex
}

// Target returns a leaf control line's targetId, or "".
func (n *Node) Target() string {
	if n.Extra == nil {
		return ""
	}
	return n.Extra.Target
}

// IsMessageType reports whether entries of type typ become messages of
// the model's context when they lie on the active path, as the host's
// buildSessionContext decides: message, custom_message and branch_summary
// entries do; every other type (compaction, model_change, custom, …) does
// not. IsMessageLine adds the one exception a line can make. These are the
// one rule for what counts as a message: the context, the message
// positions, keep_recent and the recent-token window all use them.
func IsMessageType(typ string) bool {
	switch typ {
	case "message", "custom_message", "branch_summary":
		return true
	}
	return false
}

// IsMessageLine reports whether the entry line raw, of type typ, becomes a
// message of the model's context when it lies on the active path: its type
// must make messages (IsMessageType), and a branch_summary must carry a
// summary (the host skips one whose "summary" is missing, null, "", false
// or 0, as JavaScript's truthiness has it).
func IsMessageLine(typ string, raw []byte) bool {
	if !IsMessageType(typ) {
		return false
	}
	if typ != "branch_summary" {
		return true
	}
	var x struct {
		Summary json.RawMessage `json:"summary"`
	}
	if json.Unmarshal(raw, &x) != nil {
		return false
	}
	switch v := string(bytes.TrimSpace(x.Summary)); v {
	case "", "null", "false", `""`:
		return false
	default:
		f, err := strconv.ParseFloat(v, 64)
		return err != nil || f != 0
	}
}

// IsMessage reports whether the node's entry reaches the model as a message
// (IsMessageLine, as the indexer recorded it).
func (n *Node) IsMessage() bool {
	return n.Kind == KindEntry && IsMessageType(n.Type) && (n.Extra == nil || !n.Extra.Silent)
}

// Context describes what the host builds from the active path for the
// model, computed as pi's buildSessionContext does.
type Context struct {
	// Compaction is the index (into Nodes) of the latest compaction on the
	// active path, or -1.
	Compaction int
	// FirstKept is the index of the compaction's first kept entry, or -1.
	FirstKept int
	// Messages are the indexes of the entries that become context messages,
	// in order. The compaction summary, when there is one, comes first and
	// is not listed here.
	Messages []int
}

// Count returns the number of context messages, the compaction summary
// included.
func (c Context) Count() int {
	if c.Compaction >= 0 {
		return len(c.Messages) + 1
	}
	return len(c.Messages)
}

// Transcript is a session read and indexed by a store. It holds the index
// of every line (Nodes), not the lines' bytes: Entries and Entry read them
// again from the store. A Transcript is immutable and safe for concurrent
// use.
type Transcript interface {
	// Ref returns the session the transcript belongs to.
	Ref() SessionRef
	// Version returns the fingerprint of the state that was read.
	Version() Version
	// Header returns the session header.
	Header() Header
	// Nodes returns the index of every line, in order (Nodes()[i].Line is
	// i+1). The caller must not modify it.
	Nodes() []Node
	// Node returns the index of the last entry line carrying id.
	Node(id string) (*Node, bool)
	// ActivePath returns the indexes (into Nodes) of the entries from the
	// root to the active leaf.
	ActivePath() []int
	// Context returns the model context the host builds from the active
	// path.
	Context() Context
	// MessagePositions maps the line number of every message on the active
	// path to its position counted from the end (0 is the newest).
	MessagePositions() map[int]int
	// Malformed returns the malformed lines.
	Malformed() []*LineError
	// Location returns where the transcript was read from, for people and
	// for the host formats that name it (a pi header's parentSession): the
	// JSONL file, or the database that holds the session.
	Location() string
	// Entries streams every line in order, raw bytes and parsed view. The
	// entry is valid only until the next iteration. It yields an error
	// wrapping ErrChanged when the store no longer holds the version that
	// was indexed.
	Entries(ctx context.Context) iter.Seq2[*Entry, error]
	// Entry reads one line (1-based) with its parsed view. The entry is the
	// caller's to keep.
	Entry(ctx context.Context, line int) (*Entry, error)
	// Lines streams the raw bytes of the given lines (1-based, ascending)
	// in one read. The entries carry Line, Offset and Raw only; Raw is the
	// caller's to keep. It yields an error wrapping ErrChanged when the
	// store no longer holds the version that was indexed.
	Lines(ctx context.Context, lines []int) iter.Seq2[*Entry, error]
}

// Visitor sees every line of a transcript while a store reads it, so that
// a caller can decide in the same read that builds the index.
type Visitor struct {
	// Want, when not nil, tells from a line's raw bytes whether Visit needs
	// its full parsed view (Strings and Blocks). Lines it rejects are
	// passed with the envelope only (type, ids, time, role), which costs
	// much less. Nil means every line is parsed fully. A store calls Want
	// once per line, just before Visit for that line.
	Want func(raw []byte) bool
	// Visit is called with every line in order. The entry and its Raw are
	// valid only during the call. An error stops the read and is returned
	// by Open.
	Visit func(e *Entry) error
	// Concurrent, when true, lets a store parse lines on several
	// goroutines ahead of Visit: Want must then be safe for concurrent use
	// and depend on raw alone, and Visit gets a full view exactly for the
	// lines Want accepted. Visit is still called in order, on one
	// goroutine at a time.
	Concurrent bool
	// Prepare, when not nil with Concurrent, is called on the parsing
	// goroutine for every line Want accepted (every line when Want is
	// nil), right after it is parsed;
	// what it returns is in the entry's Prepared when Visit sees it. It
	// must be safe for concurrent use and depend on the entry alone. A
	// store that reads in order leaves Prepared nil: Visit must then do
	// the work itself.
	Prepare func(e *Entry) any
}

// Store is a transcript backend: JSONL files or a database. Every method
// is required; a store that cannot do an operation answers with an error
// wrapping ErrUnsupported that says why. The writing methods return an
// error wrapping ErrBusy when the session is in use and one wrapping
// ErrChanged when the transcript no longer matches the version read.
type Store interface {
	// Name returns the backend name that the store puts in the refs it
	// makes (BackendJSONL, BackendSQLite, …).
	Name() string
	// Sessions returns every live session the store knows. Archived
	// copies and sidecar files are never returned. A store that cannot
	// read a part of what it holds (OpenClaw's SQLite store: an agent's
	// database that is locked, corrupt or of another schema version)
	// leaves that part's sessions out and returns one error for it in
	// skipped, saying why (a lock held by another connection wraps
	// ErrBusy); it does not log them: reporting them is the caller's
	// (see ListSessions). err is for a failure of the whole listing.
	Sessions(ctx context.Context) (refs []SessionRef, skipped []error, err error)
	// Resolve finds one session by "agent/sessionId", a path, a session id
	// (or a unique prefix) or a session key (or a unique suffix of one). It
	// returns an error wrapping ErrNotFound or ErrAmbiguous that lists the
	// candidates.
	Resolve(ctx context.Context, name string) (SessionRef, error)
	// Open reads and indexes the session's transcript. When v is not nil,
	// its Visit sees every line during that same read.
	Open(ctx context.Context, ref SessionRef, v *Visitor) (Transcript, error)
	// CheckIdle tells cheaply whether the host is using the session:
	// callers ask before they read, so that a busy session costs nothing,
	// and the store checks again before it writes. It returns nil when
	// the session may be written now, else an error wrapping ErrBusy that
	// says why.
	CheckIdle(ctx context.Context, ref SessionRef) error
	// Rewrite applies edits to the transcript read at base, atomically:
	// all of them or none. When gate is not nil, it lets the caller make
	// other data durable while the store writes the new content, and
	// still keep the order "that data first, then the new transcript":
	// gate is called once, after the new content is durable and just
	// before it replaces the old, and only a nil result lets the rewrite
	// finish. An error from gate leaves the old content in place and is
	// returned wrapped. When the rewrite fails before it gets there, gate
	// is not called. A store that cannot overlap the two calls gate first
	// and writes only after it succeeded.
	Rewrite(ctx context.Context, ref SessionRef, base Version, edits []Edit, gate func() error) error
	// AppendAt adds entries (raw JSON objects without a newline) at the
	// end of the transcript if it is still the version base: the version
	// is compared under the same locks as the append, so no write of the
	// host can come in between. Otherwise it writes nothing and returns
	// an error wrapping ErrChanged.
	AppendAt(ctx context.Context, ref SessionRef, base Version, entries [][]byte) error
	// Create writes lines (raw JSON objects without a newline) as a new
	// session of agent (a branch or an imported copy of another one) and
	// returns its ref. lines[0] must be a session header (type "session")
	// whose "id" is the new session's id. Create never replaces an
	// existing session: an id already in use is an error wrapping
	// ErrInvalid. The session is complete and durable when Create
	// returns, or absent. A store that takes no new sessions from outside
	// its host (OpenClaw's SQLite store) refuses with an error wrapping
	// ErrUnsupported that says why.
	Create(ctx context.Context, agent string, lines [][]byte) (SessionRef, error)
	// Stat tells cheaply, with a stat or one small query and without
	// reading the transcript, the session's current state, so that a
	// caller can skip unchanged sessions. It returns an error wrapping
	// ErrNotFound when the transcript is gone.
	Stat(ctx context.Context, ref SessionRef) (SessionStat, error)
	// Editable reports whether values of trigger type t may be replaced
	// in the session ref. A store that may change only some kinds of
	// values (OpenClaw's SQLite store: tool results, thinking and images,
	// because the host's search index reads the rest) says no for the
	// others, and extraction skips them.
	Editable(ref SessionRef, t TriggerType) bool
	// EditableValues reports, for each candidate cands[i] of entry e in
	// the session ref, whether the store accepts replacing the candidate's
	// bytes in e.Raw by with[i] (a JSON string holding a placeholder, or
	// for a block a text block holding one) in a Rewrite. A store may
	// refuse a value by where it is in its entry, not by trigger type
	// alone (OpenClaw's SQLite store accepts edits only inside tool
	// results, thinking blocks, images and tool-call arguments), and it
	// answers with the same rules as Editable. Extraction leaves the
	// refused values in place. The result has len(cands) elements and is
	// the caller's. cands are sorted by position and do not overlap; with
	// has len(cands) elements. It is safe for concurrent use.
	EditableValues(ref SessionRef, e *Entry, cands []Candidate, with [][]byte) []bool
	// Location returns where the session is stored, for people and for the
	// host formats that name it: the JSONL file, or the database that
	// holds the session, for a ref the store made (a store over several
	// backends answers "" for a backend it has no store for).
	// Code outside a backend shows it and never derives anything from it.
	Location(ref SessionRef) string
}

// ListSessions lists st's sessions for a caller that does not report the
// parts a store skipped itself: each skipped part is logged on log as a
// warning, and when no session could be listed and some part was skipped,
// the error joins the skipped parts.
func ListSessions(ctx context.Context, st Store, log Logger) ([]SessionRef, error) {
	refs, skipped, err := st.Sessions(ctx)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 && len(skipped) > 0 {
		return nil, errors.Join(skipped...)
	}
	for _, e := range skipped {
		LoggerOrDiscard(log).Warn("sessions not listed", "error", e)
	}
	return refs, nil
}

// SideInfo describes one stored side record.
type SideInfo struct {
	// EntryID is the entry the record belongs to.
	EntryID string
	// Size is the record's stored size in bytes.
	Size int64
	// ModTime is when the record was written.
	ModTime time.Time
	// Location names where the record is stored (a file name), for reports.
	Location string
}

// SideRecord is the stored side data of one key of a session: an encoded
// record whose format belongs to the package that writes it.
type SideRecord struct {
	// EntryID is the record's key (CheckSideKey): the id of the entry whose
	// values it holds, or another id its writer keys it by, such as the id
	// of a tool call whose result is stored before any entry holds it.
	EntryID string
	// Data is the encoded record.
	Data []byte
}

// SideStore keeps the values moved out of transcripts, keyed by session
// and key (SideRecord.EntryID: an entry id, or a tool-call id). Put records are durable once Sync returns; a store writes
// them before the transcript changes, so a crash leaves at most an orphan
// record, never a placeholder without its value.
type SideStore interface {
	// Put stores records of one session, replacing earlier records of the
	// same keys. It must not keep the records' Data once it returns
	// (callers reuse the buffers).
	Put(ctx context.Context, ref SessionRef, recs []SideRecord) error
	// Get returns the record of one key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, ref SessionRef, key string) (SideRecord, error)
	// List returns the records of one session.
	List(ctx context.Context, ref SessionRef) ([]SideInfo, error)
	// Delete removes the record of one key; a missing one is no error.
	Delete(ctx context.Context, ref SessionRef, key string) error
	// Sync makes every record Put for the session durable.
	Sync(ctx context.Context, ref SessionRef) error
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

// TimestampLayout is the layout of the host's timestamps, as JavaScript's
// Date.prototype.toISOString writes them: UTC with milliseconds,
// "2026-03-04T15:35:52.631Z".
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// FormatTimestamp formats t in UTC by TimestampLayout, as the host writes
// an entry's timestamp (finer digits are dropped, not rounded).
func FormatTimestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }
