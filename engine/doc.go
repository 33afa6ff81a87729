// Package engine decides, every turn, what the model of a session is sent: it
// is the Go half of BrainSurgeon's OpenClaw context engine. The host hands the
// plugin the session's messages before each turn; the plugin sends their
// skeleton (role, timestamp, tool-call ids, size) to the daemon, and the
// daemon answers with a view: which old large values to show as placeholders
// (layer 1, a lossless collapse by the extraction policy), and which older
// span to show as a summary (layers 2 and 3). The host's stored messages are
// never changed: the values stay in its rows and lines, and the summaries live
// in BrainSurgeon's own state.
//
// # The join
//
// The host's messages carry no entry ids. Each one is matched to the context
// message of the session's active path with the same role and timestamp (and,
// for tool results, tool-call id), in order. A message that matches nothing is
// passed through unchanged, and so is everything when the messages cannot be
// matched at all; the view says why.
//
// Within a turn the host calls again before each model request, handing
// the messages of the view it was served followed by the turn's new
// messages (some not stored yet): the view's summary message, first,
// then stands for the messages it covers.
//
// # Layers
//
//   - collapse (layer 1): a value of a tool result (a text or image block
//     of its content) that the extraction policy would move out (trigger
//     types, minimum length, keep_recent, `_extractable`, the protection of
//     a restored value) is shown as the exact placeholder an extraction
//     would leave, so that a value collapsed in the view and extracted in
//     the file is one value with one placeholder. Assistant and user
//     messages are never collapsed in the view: the host rewrites an
//     assistant's thinking and tool-call arguments before the model sees
//     them, and a placeholder put back in their place would reach the
//     provider (as a thinking signature, for one). Once collapsed
//     it stays collapsed until the agent restores it, so the request prefix
//     stays stable for the provider's prompt cache; new collapses are applied
//     in batches. A value the agent restored, by any path, is shown in full
//     for the restore protection window, put back from the side store
//     (Engine.Side) while the host's row still holds its placeholder.
//
// # Restores
//
// The engine's state is the installation's restore log (bs.RestoreLog):
// RecordRestore and Value record a restore, Restores reports them, and the
// extraction pass, compaction and retention read them, so a restored value
// is protected alike everywhere.
//   - summarize (layer 2): above the summarize threshold, the older span is
//     summarized (never separating a tool call from its result, pinned entries
//     carried verbatim) and the view is that summary plus the kept tail.
//   - full (layer 3): above the full threshold, only the last turn is kept.
//
// Summaries condense level by level as they accumulate, and each names the
// messages it covers, so that the recall tools drill down to the originals.
//
// # State
//
// Each session's decisions (collapsed values, restored values, summaries, the
// turns served) are kept in one JSON file under the state directory, written
// atomically, and a journal beside it (<sessionId>.journal): a view appends
// one line with what it changed, and the file is written whole again when
// the summaries change or the journal grows long. Losing them loses no data,
// only the decisions.
//
// # Following a session
//
// A call costs what was appended since the last one, not the session. The
// process keeps, for the sessions it served last (at most 32), the context
// messages of the active path with what the collapse decided of each, the
// join of the host's last list of each kind of call, and the state; a call
// reads what the store appended (bs.ReadAppended) and extends them. A change
// it cannot follow (the store cannot say, a line that is not a message
// extending the active leaf, an id seen before, a host list that no longer
// shares its prefix, a state file written by someone else) reads the whole
// session or the state file again: the result is the same view, byte for
// byte.
package engine
