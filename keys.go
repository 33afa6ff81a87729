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
// compaction fields, provider metadata, and every
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
