// Package compact keeps a session's context under its model's window in
// layers, and reports what a context holds. Every compaction is host-native:
// an OpenClaw "compaction" entry whose firstKeptEntryId the host's own
// loader applies.
//
// The layers, chosen by thresholds on the context's share of the window
// (see [Settings] and [Choose]):
//
//   - prune (L1): the extraction engine (package extract) moves old tool
//     output and thinking out of the transcript, protecting the most recent
//     tokens;
//   - summarize (L2): a host-native compaction entry replaces the older
//     history with a summary and keeps the most recent tokens;
//   - full (L3): the same entry keeps only the last turn.
//
// A compaction is recorded in the transcript in pi's own format (a
// "compaction" entry with summary, firstKeptEntryId and tokensBefore; our
// fields live under details.brainsurgeon), appended through the store's safe
// append protocol, so the host applies the boundary itself when it next
// builds the context. Entries marked `_extractable: false` are pinned: they
// are never extracted and, when they fall into a summarized span, their raw
// lines are carried verbatim into the summary.
//
// Token counts come from [TokenOptions]: a tokens.Tokenizer for single lines
// (tokens.CharsPer4 by default) and, optionally, an [Estimator] built per
// transcript (a usage-calibrated tokens.Model fits) that predicts the size
// of a whole context, overhead included. The summary comes from a
// [Summarizer]; one that falls back to a deterministic summary says so
// (degraded), and the entry and the Result carry the warning.
//
// The host builds the context from the compaction boundary; the JSONL
// store's session.LoadContext builds the same context by reading the
// transcript from its end.
//
// The context reports: [Status] (the context's size against the window),
// [Inspect] (where its tokens are, and what each layer would save),
// [History] (the compactions on the active path) and [InspectTranscript]
// (what a transcript holds: lines, entry types, roles, blocks, compactions,
// malformed lines, extractable bytes by trigger type; what `brainsurgeon
// inspect` prints).
//
// [Status], [Inspect], [History] and [InspectTranscript] only read, and
// work on every backend; [Compact] writes and is refused by a store that
// cannot append (OpenClaw's SQLite store, where BrainSurgeon never inserts
// rows).
package compact
