// Package tokens counts the tokens of transcript content and estimates
// the context size of a session's next turn.
//
// Three tokenizers implement [Tokenizer]: the exact o200k BPE
// ([O200k], offline), chars/4 ([CharsPer4], OpenClaw's
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
// The ratio is the slope between the first and the latest turn of the
// latest context (since a compaction) whose history grew by at least 2,000
// base tokens: the overhead cancels out of the difference, and the slope
// averages over the history's mix of prose, code and tool output, which is
// what a compaction removes. With no such stretch it is the weighted
// median of consecutive turns' ratios. The overhead is the median of what
// the latest five turns recorded beyond their scaled history. Thinking
// text counts or not, whichever predicts each turn from the one before
// better: Anthropic models get earlier thinking back, OpenAI-compatible
// providers do not; images count or not the same way (a model without
// vision gets none). Turns recorded by another model than the latest, and
// a provider's truncation ceiling (a context recorded three times or more,
// as Ollama reports when it cuts the prompt to its window), are left out; failed turns and OpenClaw's
// transcript-only assistants (delivery mirrors) are not part of any context.
//
// [Model.Current] is the next turn of the history as it stands: the latest
// recorded usage plus the calibrated count of what came after it.
// [Model.Predict] is the context of a changed history (after a compaction
// or an extraction): overhead plus the calibrated count of the messages.
//
// A caller that knows each request's content exactly (the context engine,
// which built it) needs no rebuilding: [FitSamples] fits a [Calibration]
// to pairs of base count and recorded size, by least squares, with the
// same guarantees (a ratio within [0.25, 4], no negative overhead). Both
// fits read recorded usage through [RecordedUsage], the one reader of
// the usage rules.
//
// # Accuracy
//
// TestAccuracy measures both against the corpus's recorded usage, using
// only what was recorded before each predicted turn:
//
//	go test ./tokens -run TestAccuracy -v -args -accuracy-json=/tmp/acc.json
package tokens
