package compact

import (
	"bytes"
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// cutRole reports whether a context message may start the kept part, as
// pi's findValidCutPoints says: user, assistant, bashExecution, custom,
// branchSummary and compactionSummary messages, custom_message and
// branch_summary entries; never a toolResult.
func cutRole(m *msg) bool {
	switch m.typ {
	case "custom_message", "branch_summary":
		return true
	case "message":
		switch m.role {
		case "user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary":
			return true
		}
	}
	return false
}

// validCuts tells, for each context message, whether the kept part may
// start there: the message has an id and a cut role, and no tool call
// before it has its result at or after it (a cut never separates a tool
// call from its result).
func validCuts(msgs []msg) []bool {
	ok := make([]bool, len(msgs))
	for k := range msgs {
		ok[k] = msgs[k].id != "" && cutRole(&msgs[k])
	}
	callAt := make(map[string]int)
	for k := range msgs {
		m := &msgs[k]
		for _, tc := range m.calls {
			if tc.id != "" {
				callAt[tc.id] = k
			}
		}
		if !m.toolResult || m.callID == "" {
			continue
		}
		if c, found := callAt[m.callID]; found {
			for j := c + 1; j <= k; j++ {
				ok[j] = false
			}
		}
	}
	return ok
}

// keepCut returns the index of the first kept message when the most
// recent keep tokens are kept, like pi's findCutPoint: walk back from the
// newest message accumulating tokens until keep is reached, then take the
// nearest valid cut at or after that message (or, when there is none, the
// nearest one before it). It returns -1 when nothing can be summarized:
// the whole context fits in keep, or no valid cut leaves anything before
// it.
func keepCut(msgs []msg, ok []bool, keep int) int {
	target, acc := -1, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		acc += msgs[i].tokens
		if acc >= keep {
			target = i
			break
		}
	}
	if target < 0 {
		return -1
	}
	for c := max(target, 1); c < len(msgs); c++ {
		if ok[c] {
			return c
		}
	}
	for c := target - 1; c >= 1; c-- {
		if ok[c] {
			return c
		}
	}
	return -1
}

// lastCut returns the last valid cut (the full layer keeps only the last
// turn), or -1 when there is none after the first message.
func lastCut(ok []bool) int {
	for c := len(ok) - 1; c >= 1; c-- {
		if ok[c] {
			return c
		}
	}
	return -1
}

// keepRestored pulls a summarize cut back so that the kept part holds
// every message of msgs[:cut] the agent restored within keep before now
// (restored: the newest restore time by entry id): it starts at the last
// valid cut at or before the first such message. It returns cut when
// none was restored within the window, and -1 when no valid cut is left
// before it (nothing is summarized).
func keepRestored(msgs []msg, ok []bool, cut int, restored map[string]time.Time, now time.Time, keep time.Duration) int {
	if len(restored) == 0 || keep <= 0 {
		return cut
	}
	for i := 0; i < cut && i < len(msgs); i++ {
		at, found := restored[msgs[i].id]
		if !found || now.Sub(at) >= keep {
			continue
		}
		for c := i; c >= 1; c-- {
			if ok[c] {
				return c
			}
		}
		return -1
	}
	return cut
}

// restoredTimes returns the newest restore time of each message of msgs
// that has one: the log's (log may be nil) or its own "_restored".
func restoredTimes(ctx context.Context, log bs.RestoreLog, ref bs.SessionRef, msgs []msg) (map[string]time.Time, error) {
	logged, err := bs.RestoresOf(ctx, log, ref)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time)
	mark := []byte(`"_restored"`)
	for i := range msgs {
		m := &msgs[i]
		if m.id == "" {
			continue
		}
		var at time.Time
		if bytes.Contains(m.raw, mark) {
			at = entry.ParseLite(m.raw, m.line, 0).Restored
		}
		e := &bs.Entry{ID: m.id, Role: m.role, Raw: m.raw, Restored: at}
		if m.toolResult {
			e.Role = "toolResult"
		}
		if t := extract.WithRestores(e, logged).Restored; !t.IsZero() {
			out[m.id] = t
		}
	}
	return out, nil
}
