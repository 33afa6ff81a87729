// Package extract moves large, old values out of a transcript into the side
// store and leaves a restorable placeholder in their place: the policy that
// decides what goes, the placeholders, the format of the side records, and
// the extraction pass itself ([Extractor]).
//
// # Candidates
//
// The candidates of an entry are the values package entry's Classify finds,
// by trigger type: thinking blocks (text and signature), tool results
// (content text, details strings, bash output), long string leaves of
// tool-call arguments, whole image blocks, and the text of assistant, user
// and system or custom messages, in the real pi/OpenClaw shape and in the
// flat shape whose entries carry "__id". Only string values and whole image
// blocks are ever replaced, so every JSON type stays valid for the host;
// ids, roles, toolCallId, toolName, usage, envelope members and compaction
// summaries are never candidates.
//
// [Decide] applies the [Policy] to one entry and says why, in a sentence
// such as "Entry 45: thinking, 48h old → EXTRACT": an entry without an id
// is never extracted; "_extractable": false keeps it, true forces it (type
// and length ignored, the keep window still applies), a number sets its own
// keep window; then the trigger types, the age threshold, the protection of
// a recently restored entry, the keep window (the newest KeepRecent
// messages of the active path) and MinValueLength. A store may accept fewer
// trigger types or values than the policy asks for (OpenClaw's SQLite store
// edits only thinking, tool results and images): those values stay in
// place.
//
// # Placeholders
//
// A replaced string value becomes exactly "[[extracted-<entryId>]]"
// ([Placeholder]), or, with a preview, its first N code points followed by
// "… " and the placeholder ([PlaceholderText]); an image block becomes a
// text block holding the placeholder ([ImageBlock]). A value already
// holding its entry's placeholder is never extracted again, so the
// placeholder bytes are stable. The transcript is changed by splicing the
// bytes of the replaced values ([brainsurgeon.Edit]): every other byte of
// the line, and every other line, stays as it was.
//
// # Side records
//
// Each extracted entry has one side record ([Record]) in the session's
// side store: per value its JSON Pointer, trigger type, original JSON
// bytes, their sha256 and size, and the placeholder that replaced it, plus
// members other packages own (restore's undo journal and redactions),
// kept verbatim. Restoring a value gives back its original bytes exactly;
// a hash mismatch is an error wrapping [brainsurgeon.ErrCorrupt].
//
// # The order of writes
//
// A pass ([Extractor.Run]) leaves a busy session alone (the store's
// CheckIdle), reads the transcript once and decides; while it reads, the
// side records of the values it will move out are encoded and, once the
// plan is worth at least MinSavingTokens, Put. When the read ends it knows
// the whole edit; a pass that would save less than MinSavingTokens leaves
// the transcript as it is. Then the side store's Sync makes
// the records durable, and only after that does the transcript change, in
// one rewrite at the version that was read, whose gate waits for the
// records (the JSONL store writes the new transcript while the records
// sync, and replaces the old one only once they are durable). So a crash or a failed rewrite leaves
// at most orphan records, never a placeholder without its value; a later
// pass reuses such records (Policy.ReuseStoredWithin) instead of storing
// the values again. See docs/ARCHITECTURE.md, "Side store durability".
package extract
