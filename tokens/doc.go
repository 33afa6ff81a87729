// Package tokens counts the tokens of transcript content and estimates
// the context size of a session's next turn.
//
// Three tokenizers implement brainsurgeon.Tokenizer: the exact o200k BPE
// ([O200k], offline), chars/4 (brainsurgeon.CharsPer4, OpenClaw's
// estimate) and the calibrated tokenizer of a [Model], the default, which
// scales a base count by what the transcript's own recorded usage says.
//
// # Calibration
//
// Every assistant message records the context its request carried:
// usage.input + usage.cacheRead + usage.cacheWrite. The system prompt and
// the tool definitions are part of that number but not of the transcript.
// [Learn] walks the active path turn by turn, rebuilding the context the
// host sent (a compaction's summary and its kept entries included), and
// fits
//
//	recorded context = overhead + ratio × base(history) + images + 4 × messages
//
// on the turns since the last compaction: the ratio from the first and the
// latest of them (the overhead cancels out of their difference; with too
// few turns, the weighted median of consecutive turns' ratios), the
// overhead from the first. Turns recorded by another model than the
// latest, and a provider's truncation ceiling (the largest context
// recorded three times or more, as Ollama reports), are left out.
//
// [Model.Current] is the next turn of the history as it stands: the latest
// recorded usage plus the calibrated count of what came after it.
// [Model.Predict] is the context of a changed history (after a compaction
// or an extraction): overhead plus the calibrated count of the messages.
//
// # Accuracy
//
// TestAccuracy measures both against the corpus's recorded usage, using
// only what was recorded before each predicted turn:
//
//	go test ./tokens -run TestAccuracy -v -args -accuracy-json=/tmp/acc.json
package tokens
