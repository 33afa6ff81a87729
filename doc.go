// Package brainsurgeon keeps long-running AI agent transcripts lean without
// ever losing a byte.
//
// The root package holds the vocabulary shared by every sub-package: the
// domain types ([Entry], [SessionRef], [Edit], [Version]), the small
// interfaces a backend or a host program implements ([Store], [Transcript],
// [Logger], [Clock]) and the sentinel errors ([ErrNotFound], [ErrBusy],
// [ErrChanged]) plus the structured [LineError]. It imports only the
// standard library.
//
// A [Store] has no optional methods: a backend that cannot do something
// (OpenClaw's SQLite store appends no entries and creates no sessions)
// answers with an error wrapping [ErrUnsupported] that says why. The one
// optional interface, [BatchStater], is reached only through [StatMany].
//
// # Packages
//
//   - session: JSONL transcripts of pi and OpenClaw (≤ 2026.7): reading lines
//     as raw bytes, the lazily parsed view of an entry, the tree and active
//     path, classification of extractable values, discovery of agents and
//     sessions, the host-compatible lock, the idle gate and safe rewrite and
//     append.
//   - session/sqlite: OpenClaw's per-agent SQLite store (2026.8 and later).
//   - sidedir: the side store of extracted values (packs in each session's
//     side directory).
//   - entry: one raw line's parsed view and its extractable values.
//   - extract: the extraction policy (Decide), placeholders, the side
//     record format and the extraction pass (Extractor); prune runs it over
//     sessions.
//   - restore: restore with protection and redaction, the queue of
//     write-backs for busy sessions, _extractable, full (pristine) undo,
//     verification of placeholders.
//   - tokens: token counting, calibrated by a transcript's recorded usage.
//   - summarize: summaries for compaction (a chat-completions client, a
//     deterministic offline summarizer, escalation between them).
//   - compact: layered compaction (prune, summarize, full) written as the
//     host's own compaction entries; status, inspect and history.
//   - recall, portable: search, describe and expand what was compacted or
//     extracted; export, import and branch sessions.
//   - retention, trash: side data deleted by age; sessions deleted into a
//     trash and restored from it.
//   - backend, daemon, api: one store over both backends, the scheduling
//     service, the REST API and web UI.
//
// docs/ARCHITECTURE.md describes the layers, the seam between policy and
// storage, and the rules every write obeys.
//   - config: the runtime config (.brainsurgeon/config.json).
//   - duration: "30m", "6h", "1d12h", "52w" ⇄ time.Duration.
//
// # Bytes are sacred
//
// A transcript is read as raw lines. A line that is not edited is written
// back byte-identical. A line that is edited is changed by splicing the
// bytes of the values being replaced ([Splice]), so key order, spacing,
// number spelling and escapes stay as they were. Malformed lines are kept
// and reported, never dropped.
//
// # Never disturb the host
//
// Writes go through a [Store], which only writes to an idle session, under
// the host's own lock protocol, after checking that the transcript is still
// the [Version] that was read, and atomically (temp file, fsync, rename,
// directory fsync).
package brainsurgeon
