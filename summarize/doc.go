// Package summarize writes the summaries that compaction records in a
// transcript, as the summary of a host-native compaction entry: an
// OpenAI-compatible chat-completions client, or a deterministic extractive
// summary that always works offline and marks itself degraded.
//
// It has four parts:
//
//   - [OpenAI], a client of any OpenAI-compatible chat-completions server
//     (OpenAI, OpenRouter, Ollama's /v1, vLLM, llama.cpp's server) that
//     implements compact.Summarizer with retries, back-off and
//     per-attempt timeouts;
//   - the prompt: [Serialize] renders raw transcript lines the way pi does
//     ("[User]: …", "[Assistant]: …", "[Tool result]: …") so the model does
//     not continue the conversation, and [BuildPrompt] wraps it in pi's
//     markdown skeleton (Goal, Constraints & Preferences, Progress, Key
//     Decisions, Next Steps, Critical Context), with an update prompt when
//     the lines carry a previous compaction summary, a focus, and a normal
//     and an aggressive variant;
//   - [ExtractFacts], the structured, model-free extraction of a stretch of
//     conversation (files read and modified, commands, tool operations,
//     errors, findings, decisions, user requests, next steps, entities),
//     which [Deterministic] renders as a bounded extractive summary marked
//     degraded, and which export reuses;
//   - [Escalate], which tries the model with the normal prompt, then the
//     aggressive one, then falls back to [Deterministic], rejecting garbage
//     answers on the way and saying why it degraded.
//
// Lines are read, never re-encoded: the package reads each one with the
// module's line parser (package entry) into a small read-only view. It never prints, exits or panics, and it never
// logs an API key.
package summarize
