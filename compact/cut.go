package compact

import (
	"bytes"
	"context"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// A CutMessage is what the cut rule (ValidCuts, KeepCut) reads of one
// context message.
type CutMessage struct {
	// ID is the entry's id: a message without one never starts the kept
	// part.
	ID string
	// Role is the message's role ("user", "assistant", "toolResult", …),
	// or the entry's type for a custom_message or branch_summary entry.
	Role string
	// CallID is a tool result's toolCallId.
	CallID string
	// Calls are the ids of an assistant message's tool calls.
	Calls []string
}

// CutRole reports whether a context message of role (a CutMessage's
// Role) may start the kept part, as pi's findValidCutPoints says: user,
// assistant, bashExecution, custom, branchSummary and compactionSummary
// messages, custom_message and branch_summary entries; never a toolResult.
func CutRole(role string) bool {
	switch role {
	case "user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary",
		"custom_message", "branch_summary":
		return true
	}
	return false
}

// ValidCuts tells, for each of n context messages (at returns message k),
// whether the kept part may start there: the message has an id and a cut
// role (CutRole), and no tool call before it has its result at or after
// it (a cut never separates a tool call from its result).
func ValidCuts(n int, at func(k int) CutMessage) []bool {
	ok := make([]bool, n)
	callAt := make(map[string]int)
	for k := range n {
		m := at(k)
		ok[k] = m.ID != "" && CutRole(m.Role)
		for _, id := range m.Calls {
			if id != "" {
				callAt[id] = k
			}
		}
		if m.Role != "toolResult" || m.CallID == "" {
			continue
		}
		if c, found := callAt[m.CallID]; found {
			for j := c + 1; j <= k; j++ {
				ok[j] = false
			}
		}
	}
	return ok
}

// KeepCut returns the index of the first kept message when the newest
// keep tokens are kept and the messages before from are already
// summarized (ok are ValidCuts' answers, tokens(k) is message k's size),
// like pi's findCutPoint: walk back from the newest message accumulating
// tokens until keep is reached, then take the nearest valid cut at or
// after that message, else the nearest one before it, after from. It
// returns -1 when nothing can be summarized: what follows from fits in
// keep, or no valid cut leaves anything after from before it.
func KeepCut(ok []bool, tokens func(k int) int, from, keep int) int {
	target, acc := -1, 0
	for i := len(ok) - 1; i >= from; i-- {
		acc += tokens(i)
		if acc >= keep {
			target = i
			break
		}
	}
	if target < 0 {
		return -1
	}
	for c := max(target, from+1); c < len(ok); c++ {
		if ok[c] {
			return c
		}
	}
	for c := target - 1; c > from; c-- {
		if ok[c] {
			return c
		}
	}
	return -1
}

// LastCut returns the last valid cut after from (the full layer keeps
// only the last turn), or -1 when there is none.
func LastCut(ok []bool, from int) int {
	for c := len(ok) - 1; c > from; c-- {
		if ok[c] {
			return c
		}
	}
	return -1
}

// cutMessage returns what the cut rule reads of m.
func cutMessage(m *msg) CutMessage {
	role := m.role
	if m.typ != "message" {
		role = m.typ
	}
	var calls []string
	if len(m.calls) > 0 {
		calls = make([]string, len(m.calls))
		for i, tc := range m.calls {
			calls[i] = tc.id
		}
	}
	return CutMessage{ID: m.id, Role: role, CallID: m.callID, Calls: calls}
}

// validCuts is ValidCuts over msgs.
func validCuts(msgs []msg) []bool {
	return ValidCuts(len(msgs), func(k int) CutMessage { return cutMessage(&msgs[k]) })
}

// keepCut is KeepCut over msgs, nothing summarized yet.
func keepCut(msgs []msg, ok []bool, keep int) int {
	return KeepCut(ok, func(k int) int { return msgs[k].tokens }, 0, keep)
}

// lastCut is LastCut over the whole context.
func lastCut(ok []bool) int { return LastCut(ok, 0) }

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
