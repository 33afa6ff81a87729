package brainsurgeon

import "context"

// LoadedContext is the model context of a session as the host builds it
// from a compaction boundary (pi's buildSessionContext), read without
// indexing the whole transcript.
type LoadedContext struct {
	// Leaf is the id of the active leaf.
	Leaf string
	// Compaction is the latest compaction entry on the active path, or nil
	// when there is none. Its summary is the first context message.
	Compaction *Entry
	// Entries are the entries that become the other context messages, in
	// order: the path's message, custom_message and branch_summary entries
	// from the compaction's firstKeptEntryId up to the compaction, then
	// those after it. Each carries its Raw bytes (the caller's to keep),
	// Offset and parsed view; Line is 0 when the transcript was read from
	// the end (line numbers are unknown there).
	Entries []*Entry
	// FullRead is true when the transcript had to be read from the start
	// (a v1 transcript, a leaf control line, a parent that could not be
	// found before its child, a duplicate id); FullReadReason says why.
	FullRead       bool
	FullReadReason string
}

// ContextLoader is implemented by stores that can build a session's model
// context quickly from the end of the transcript: find the active leaf,
// follow parent ids back to the latest compaction on the active path and
// its first kept entry, and read nothing before that. The result equals
// what Open followed by Transcript.Context gives. A store falls back to a
// full read when the shortcut cannot be trusted.
type ContextLoader interface {
	// LoadContext returns the session's model context.
	LoadContext(ctx context.Context, ref SessionRef) (LoadedContext, error)
}
