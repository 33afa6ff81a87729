// Package doctor diagnoses what makes a session unusable (tool calls and
// results that lost their partner, placeholders whose value is gone,
// write-backs still queued, malformed lines) and repairs the tool pairs on
// disk the way the host repairs them in memory, reversibly.
//
// # What the hosts send
//
// The rules below come from the hosts' own sources:
//
//   - pi-ai's transformMessages (@mariozechner/pi-ai,
//     dist/providers/transform-messages.js) runs on every request of pi and
//     OpenClaw. It drops every assistant message whose stopReason is
//     "error" or "aborted", with its tool calls. For the tool calls of an
//     assistant message it keeps, it inserts a synthetic result for every
//     call that no toolResult answers before the next assistant or user
//     message (or the end): {"role":"toolResult","toolCallId":<id>,
//     "toolName":<the call's name>,"content":[{"type":"text","text":"No
//     result provided"}],"isError":true,"timestamp":<ms>}. It never drops a
//     tool result: a result whose call is not in the assistant message
//     before it reaches the provider, which rejects the request.
//   - OpenClaw repairs pairs in memory (openclaw, dist/tool-result-pairing-*.mjs:
//     classifyToolUseResultPairing, makeMissingToolResult; and
//     dist/session-transcript-repair-*.mjs: repairToolUseResultPairing),
//     when its transcript policy turns the repair on. A tool call is a
//     content block of type "toolCall", "toolUse" or "functionCall" with a
//     non-empty string id; a result names its call in the first non-empty
//     of toolCallId, toolUseId, tool_call_id, tool_use_id, callId, call_id.
//     Results of a call are moved right after its assistant message;
//     results with no call in the frame are dropped; for the model,
//     assistant messages with stopReason "error"/"aborted" are dropped
//     with their results; a missing result is synthesized by
//     makeMissingToolResult: {"role":"toolResult","toolCallId":<id>,
//     "toolName":<the call's name, or "unknown">,"content":[{"type":"text",
//     "text":"[openclaw] missing tool result in session history; inserted
//     synthetic error result for transcript repair."}],"details":
//     {"openclawSyntheticMissingToolResult":true,"reason":
//     "missing_tool_result"},"isError":true,"timestamp":<ms>}. (OpenClaw
//     2026.7 writes the same without "reason"; both versions recognise a
//     synthetic result by the details flag or the text.)
//
// # The rules of the diagnosis
//
// The doctor judges the messages the host builds from the active path
// (bs.Transcript.Context), in order, by the strictest of these readers, so
// that a repaired session is sent without unpaired blocks even where the
// host's own repair is off:
//
//   - An assistant message with tool calls opens a frame: the run of
//     toolResult messages that directly follows it (any other message ends
//     the run). A result in the run whose id is one of the message's calls,
//     the first time that id is answered, is paired.
//   - A result of a call the run does not answer that comes later, after
//     user messages or assistant messages without tool calls but before
//     the next assistant message with tool calls, is displaced
//     (displaced_tool_result): OpenClaw's repair moves it back after its
//     call in memory, pi-ai sends it where it is and the provider rejects
//     it. Its call is not missing.
//   - Every other toolResult on the context is an orphan
//     (orphan_tool_result): one after a user or other message whose call
//     is not waiting for it, a second result for the same call, one
//     naming no call or a call the message did not make (other_branch
//     when that call is only in an assistant message off the active
//     path), and every result of an assistant message with stopReason
//     "error" or "aborted", which the host drops.
//   - Every call of an assistant message the host keeps (stopReason not
//     "error"/"aborted") that the run does not answer is a missing result
//     (missing_tool_result). When the calls are those of the last message
//     on the context and the host is using the session (CheckIdle), they
//     are not reported: the turn may still be running (Report.Busy; a
//     caller shows such a session as busy, not judged, never as ok). A ctx
//     made by bs.ExplicitWrite, as Fix and brainsurgeon doctor --fix use,
//     skips the store's quiet period: only a run in flight or a held lock
//     make the session busy then.
//
// Any of them makes the session broken; placeholders without a value
// (only when the transcript holds placeholders: restore.Verify reads and
// hashes every value, or with Doctor.Values = ValuesListed the side
// store's listing only tells that each record exists), queued write-backs
// of the session, and malformed lines make it warn.
//
// # The repair
//
// Fix writes one structural repair through restore.Restorer.ApplyRepair
// (idle gate, host lock, version check, journal, audit). It never deletes
// an entry:
//
//   - The synthetic results of an assistant message go right after its run
//     of paired results on the active path (after the assistant line
//     itself when none follow), one entry per missing call, in call order,
//     chained by parentId; the entry that followed there on the active path
//     is re-parented to the last of them. Each is a "message" entry in pi's
//     member order ({"type","id","parentId","timestamp","message"}, a new
//     8-hex id unique in the file) holding the host's own synthetic
//     message: OpenClaw's for a session with an agent, pi-ai's for a pi
//     session.
//   - A displaced result is moved back, by re-parenting only: it goes
//     right after its call's run of results (before any synthetic result
//     of the same message), the entry that followed the run becomes its
//     child, and the entry that followed it is re-parented to its old
//     parent. It cannot move when it is the active leaf (the path would
//     then end at it, without the messages that came between): it is
//     reported as not fixable yet, and its call gets no synthetic result,
//     which would shadow the real one; nor when it is a compaction's
//     first kept entry or has no id.
//   - An orphan result is taken off the active path: the entry after it is
//     re-parented to the entry before it, and the result stays in the file
//     on a dead branch. The active leaf (pi takes the last entry as the
//     leaf), a compaction's first kept entry, and entries without ids
//     cannot be taken off that way: they are reported as not fixable.
//   - Every other entry keeps its parentId: one whose predecessor on the
//     active path is the same after the repair is left alone, even when
//     its parentId names an entry that is not in the file.
//
// Only the JSONL store takes the repair. OpenClaw's SQLite store is
// refused (Report.FixRefused, FixResult.Refused): BrainSurgeon never
// inserts or re-parents its rows, because the host owns its event
// sequence; its diagnosis is complete all the same. A pristine restore
// (restore.RestoreAll) takes a repair back byte for byte.
package doctor
