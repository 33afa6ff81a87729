// Package restore brings extracted values back, byte for byte: restore on
// demand with re-restore guidance, redaction of the restore call,
// "_extractable" from the agent, the model context report of get_context,
// and a full undo.
//
// # Restore
//
// [Restorer.Restore] finds the entry by id ("__id", else "id"; the last
// line carrying it), reads its side record and returns the original
// values at once in [Result.Content]: the text of a string, the JSON of a
// block (an image). Only values whose current bytes in the line are still
// their recorded placeholder are restored; the bytes put back are checked
// against their sha256 first.
//
// Keys select values. A key is a run of JSON Pointer segments ("/"
// separated, RFC 6901 escapes, one leading "/" ignored) and matches a
// stored value when its segments occur consecutively in the value's
// path: the full pointer "/message/content/2/text", the same without "/",
// a top-level member ("message", or "output" in the flat format), any
// member on the path ("content", "details", "arguments"), the last
// segment ("text", "thinking", "command") and a block path ("content/2")
// all match. A key of digits only names a content block index ("2"
// matches /message/content/2/…). A key may also list several keys
// separated by commas ("content,output", as the skill writes them). No
// keys selects every value. When no key matches a stored value the
// restore fails with an error naming the keys that exist; keys that match
// nothing beside keys that do are reported in the Warning.
//
// Missing and corrupt side files are not errors: restore degrades
// gracefully. A missing file gives [MissingText] for each placeholder and a
// Warning; a corrupt file or a value whose hash does not match gives
// [CorruptText], a Warning and an "restore_corrupt" line in the audit log
// (<state dir>/audit.jsonl, see [audit.Append]); the placeholder stays, and other
// values and entries are restored as usual. Restored is false when no value
// could be returned. An entry that was never extracted, or whose values are
// all back already, is an error wrapping ErrNotFound ("entry X: nothing to
// restore").
//
// # Write-back and the queue
//
// The content is returned at once; the write-back (original bytes in
// place of the placeholders, "_restored" set to the time in ISO UTC with
// milliseconds, the restore call redacted) is applied now when the session
// is idle (session.Writer's idle gate, host lock, re-check, atomic
// rename), else queued. A queued write-back is one JSON file per request in
// the queue dir (default <agentsDir>/../.brainsurgeon/pending, written to
// a temp file, fsynced, renamed, directory fsynced; 0700/0600), named
// "<UTC time>-<random>.json" so names sort oldest first:
//
//	{"format":"brainsurgeon.pending/1","kind":"restore",
//	 "transcript":"/abs/agents/main/sessions/S.jsonl","agent":"main",
//	 "session_id":"S","entry_id":"ab12cd34","keys":["text"],
//	 "tool_call_id":"call_1","requested_at":"2026-02-20T17:30:00Z"}
//
// kind "set_extractable" carries "value" instead of keys; kind
// "restore_source" ([Restorer.WriteBackSources]) names the toolResult entry
// holding a "[[extracted-tc-<toolCallId>]]" placeholder and, as its one key,
// the source key whose stored content goes back in its place.
// [Restorer.ApplyPending] applies the requests of each idle session in one
// rewrite, deciding again from the current file, and removes them.
//
// # Redaction
//
// Unless KeepPurgeControlCalls, a restore write-back redacts the call that
// asked for it: the call with RestoreOptions.ToolCallID, else the latest
// call not yet redacted that names the entry — a toolCall named
// "purge_control" with arguments {action: "restore", entry|entry_id: X},
// one named "restore" with entry_id|entry X, or an exec/bash/shell call
// whose command runs "purge_control … restore … X" (any path or script
// extension; flags anywhere). The call's arguments object becomes
// {"redacted":"purge_control restore X"} and the block gets
// "_redacted":true; the toolResult answering it (same toolCallId) gets
// "[redacted: purge_control restore X]" in place of its text and
// "_redacted":true at the top level. Ids and toolCallId are untouched, so
// the call/result pairing stays valid. What a redaction replaced is kept
// in the side record of the entry it belongs to (Record.Redactions,
// Trigger "redaction", Placeholder the stub); a normal restore never puts
// it back.
//
// # The journal and the full undo
//
// Every bookkeeping member BrainSurgeon adds or changes ("_restored",
// "_redacted", "_extractable" from SetExtractable) is journaled in the
// entry's side record (Record.Journal): one item per member pointer
// holding its state before the first change only — {"path":"/_restored",
// "absent":true} or {"path":"/_extractable","raw":"5"}. [Restorer.RestoreAll]
// with pristine puts back extracted values and redacted values (repeating
// while one uncovers another), then replays the journal backwards,
// removing members that were absent and resetting the others, so the
// transcript comes back byte-identical to what it was before BrainSurgeon
// touched it. It then clears the journals and drops the session's queued
// write-backs.
//
// A structural repair ([Restorer.ApplyRepair]) is journaled the same way:
// an entry it re-parents gets {"path":"/parentId"} with the previous
// value, an entry it inserts {"path":"","absent":true} with the whole
// inserted line (base64). The pristine restore puts "parentId" back like
// any other member and removes an inserted line only while its bytes are
// still the journaled ones and no entry that stays names it as its
// parent; a line that changed since is kept and reported
// (ProblemInsertedChanged), and so is a line that an entry the host
// appended since (or any entry whose parentId is not put back) has as its
// parent (ProblemInsertedHasChildren): the result is then not pristine. A
// restore without pristine leaves repairs alone.
package restore
