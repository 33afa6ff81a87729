package brainsurgeon

import "strings"

// structuralKeys are the members of an entry that are never extracted,
// never replaced and never counted as content: identity, tree links, type
// tags, session header fields, compaction links and provider metadata.
var structuralKeys = map[string]bool{
	"id": true, "__id": true, "parentId": true, "type": true, "timestamp": true, "time": true,
	"role": true, "customType": true, "toolCallId": true, "toolName": true, "name": true,
	"model": true, "provider": true, "api": true, "stopReason": true, "summary": true,
	"firstKeptEntryId": true, "firstKeptEntryIndex": true, "fromId": true, "targetId": true,
	"version": true, "cwd": true, "appendMode": true, "tokensBefore": true, "usage": true,
}

// messageEnvelopeKeys are the members of a message object that are never
// extracted: everything but its content.
var messageEnvelopeKeys = map[string]bool{
	"role": true, "toolCallId": true, "toolName": true, "usage": true, "api": true,
	"provider": true, "model": true, "stopReason": true, "responseId": true,
	"timestamp": true, "errorMessage": true, "customType": true, "isError": true,
}

// IsStructuralKey reports whether a top-level member of an entry is never
// touched by extraction: identity, tree links, type tags, header and
// compaction fields, provider metadata (DESIGN decision 4), and every
// member whose name starts with "_" (BrainSurgeon's bookkeeping). This is
// the one list every package uses.
func IsStructuralKey(name string) bool {
	return strings.HasPrefix(name, "_") || structuralKeys[name]
}

// IsMessageEnvelopeKey reports whether a member of an entry's "message"
// object is never touched by extraction (role, toolCallId, toolName, usage,
// provider metadata…).
func IsMessageEnvelopeKey(name string) bool {
	return strings.HasPrefix(name, "_") || messageEnvelopeKeys[name]
}

// EditLimiter is implemented by stores that may change only some kinds of
// values (OpenClaw's SQLite store: tool results, thinking and images,
// because the host's search index reads the rest). Extraction skips the
// other trigger types on such a store.
type EditLimiter interface {
	// Editable reports whether values of trigger type t may be replaced
	// in the session ref.
	Editable(ref SessionRef, t TriggerType) bool
}

// ValueEditLimiter is implemented by stores that accept the edit of a
// value or refuse it by where the value is in its entry, not by trigger
// type alone: OpenClaw's SQLite store accepts edits only inside tool
// results, thinking blocks, images and tool-call arguments, so it refuses
// the values of a flat entry ({"__id":…,"type":"tool_result","output":…})
// whatever their trigger type. Extraction asks it about every value it
// would replace and leaves the values it refuses in place; the rest of
// the session is extracted as usual. A store that implements it answers
// for trigger types (EditLimiter) with the same rules.
type ValueEditLimiter interface {
	// EditableValues reports, for each candidate cands[i] of entry e in
	// the session ref, whether the store accepts replacing the candidate's
	// bytes in e.Raw by with[i] (a JSON string holding a placeholder, or
	// for a block a text block holding one) in a Rewrite. The result has
	// len(cands) elements and is the caller's. cands are sorted by
	// position and do not overlap; with has len(cands) elements. It is
	// safe for concurrent use.
	EditableValues(ref SessionRef, e *Entry, cands []Candidate, with [][]byte) []bool
}
