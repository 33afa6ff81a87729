// Package session reads and writes the JSONL transcripts of pi and OpenClaw
// (≤ 2026.7) without altering a byte it was not asked to change, and
// without disturbing the host while it uses a session.
//
// # Reading
//
// [Reader] streams a transcript line by line and keeps each line's raw
// bytes; [Reader.Entry] builds the parsed view of a line lazily with
// package entry's Parse (type, id, parentId, timestamp, role, content
// blocks, and every string value with its JSON Pointer and byte span). Malformed lines, blank lines, CRLF, two JSON
// values glued on one line, lone UTF-16 surrogate escapes and invalid UTF-8
// are kept byte for byte and reported with their line numbers.
//
// [Open] indexes a transcript into a [Transcript]: the header and format
// version (v1 without ids, v2, v3), the tree of parentId links, the active
// leaf (the last entry line, or the target of the last valid OpenClaw
// "leaf" control line; side appends do not move it), the active path, the
// model context as pi builds it (the latest compaction on the path and its
// firstKeptEntryId) and message positions for keep_recent. A Transcript
// holds only an index; [Transcript.Entries] streams the lines again.
//
// Package entry's Classify lists the values of an entry that extraction may
// move out, by trigger type, in both the real nested format and the flat
// format whose entries carry "__id".
//
// # Discovery
//
// [Discover] and [DiscoverWith] find the sessions of an OpenClaw agents dir
// (from sessions.json and orphan transcripts) or of a pi sessions dir, and
// [ResolveRef] names one by agent/sessionId, path, session id or session key
// among the refs of any backend ([Discovery.Resolve] and [Store.Resolve]
// call it).
// Sidecar and archive files are never taken for live sessions
// ([ClassifyFile], by name), and neither is a file whose content is not a
// transcript ([IsTranscript], the one rule that [Open], discovery and
// resolving by path apply: such a file is refused by name).
//
// # Writing
//
// [Writer] rewrites (applying [brainsurgeon.Edit]s, which splice bytes) and
// appends under the host-safety protocol (docs/ARCHITECTURE.md, "Host
// safety"): an idle gate, the OpenClaw-compatible lock file, a re-check of
// the file's identity under the lock, a temp file in the same directory,
// fsync, rename and directory fsync.
//
// [Store.Create] writes a new transcript, a branch or
// an imported session, as <agent>/sessions/<id>.jsonl: temp file, fsync,
// hard link to its name (so an existing transcript is never replaced),
// directory fsync.
package session
