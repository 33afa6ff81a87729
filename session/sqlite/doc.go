// Package sqlite is the BrainSurgeon backend for OpenClaw's per-agent
// SQLite store (OpenClaw 2026.8 and later, agent schema 23): a
// brainsurgeon.Store over agents/<agent>/agent/openclaw-agent.sqlite. It is
// the only package of the module that imports SQLite (modernc.org/sqlite,
// pure Go, with a bundled SQLite new enough for the store's CHECK
// constraints).
//
// # The store
//
// Each former JSONL line is one row of transcript_events(session_id, seq,
// event_json | event_zstd, …), in seq order, the session header at seq 0;
// some rows are stored as one zstd frame. A session's line i (1-based) is
// its i-th row; bs.Node.Offset and bs.Entry.Offset hold the row's seq. The
// tree, active path and context come from session.Index, exactly as for a
// JSONL transcript.
//
// # Reading
//
// Reading never creates a file next to the store and never changes a byte
// of it: a store nobody has open is read with SQLite's immutable=1 and
// checked afterwards, a store the host has open is read as an ordinary WAL
// reader through the host's own sidecar files (details at openRead). Reads
// are short transactions. A Transcript's version encodes OpenClaw's
// fences: the rewrite generation, the last seq, the row count and
// session_windows.transcript_updated_at; every host write moves one of
// them. ReadAppended, which must not cost the session's length, checks
// them without counting the rows (see there): OpenClaw deletes rows only
// with a new generation or all at once.
//
// # Writing
//
// Rewrite follows the rules for an outside writer (docs/ARCHITECTURE.md,
// "Host safety"): only an idle session (CheckIdle), one BEGIN IMMEDIATE
// transaction per session that re-checks the idle rules and the fences, a
// compare-and-swap UPDATE per row writing plain event_json, and the fences
// advanced as OpenClaw's own row rewrite does. Only edits that keep
// OpenClaw's derived projections valid are accepted (toolResult content and
// details, thinking, images, toolCall arguments, "_" bookkeeping);
// [Store.Editable] tells an extractor which trigger types qualify, and
// [Store.EditableValues], which asks the same guard, which values. Rows are
// never inserted or deleted: AppendAt and Create return an error wrapping
// ErrUnsupported.
//
// Only schema version 23 is supported; any other store is refused with an
// error wrapping brainsurgeon.ErrUnsupported that names both versions.
package sqlite
