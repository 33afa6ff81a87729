package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrNeedFull is wrapped by the error of an Assemble call whose
// Request.Base names a list of messages the engine does not hold (it
// restarted, forgot the session, or the fingerprint differs): the caller
// sends the whole list again, without Base.
var ErrNeedFull = errors.New("the engine does not hold the messages the request extends; send them all")

// Ack is what the engine holds of the host's list of messages after a
// call: a later call of the same kind (Request.HostCall) may send only
// the messages after the first Messages of its list, when those are the
// same, and name them by Fingerprint (Request.Base and BaseFingerprint).
type Ack struct {
	// Messages is how many messages the list holds.
	Messages int `json:"messages"`
	// Fingerprint is the chain fingerprint of the list (ChainFingerprint
	// over its messages, in order).
	Fingerprint string `json:"fingerprint"`
}

// ChainFingerprint returns the fingerprint of a list of messages that
// extends the list whose fingerprint is prev ("" for the empty list) by
// m: the first 16 hexadecimal digits of the SHA-256 of prev, a newline,
// and m's role, timestamp, tool-call id, tool-call ids (joined by U+0001)
// and chars, separated by U+0000. The OpenClaw plugin computes the same
// chain over the skeletons it sends.
func ChainFingerprint(prev string, m Message) string {
	var b strings.Builder
	b.Grow(len(prev) + len(m.Role) + len(m.ToolCallID) + 48)
	b.WriteString(prev)
	b.WriteByte('\n')
	b.WriteString(m.Role)
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(m.Timestamp, 10))
	b.WriteByte(0)
	b.WriteString(m.ToolCallID)
	b.WriteByte(0)
	for i, id := range m.ToolCallIDs {
		if i > 0 {
			b.WriteByte(1)
		}
		b.WriteString(id)
	}
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(m.Chars))
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// ackedList is the list of messages of one kind of host call (keyed by
// Request.HostCall) that the engine holds for a session, with the chain
// fingerprint after each message.
type ackedList struct {
	msgs  []Message
	chain []string
}

// fingerprint returns the chain fingerprint of the first n messages.
func (a *ackedList) fingerprint(n int) string {
	if n <= 0 {
		return ""
	}
	return a.chain[n-1]
}

// resolveBase replaces req.Messages, when req.Base is set, by the whole
// list: the first Base messages of the list held for req.HostCall
// followed by req.Messages. The error wraps ErrNeedFull when no such list
// is held, it is shorter, or its fingerprint differs.
func (ss *sessionState) resolveBase(req *Request) error {
	if req.Base == 0 && req.BaseFingerprint == "" {
		return nil
	}
	if req.Base < 0 {
		return fmt.Errorf("base: expected a count of messages ≥ 0, found %d: %w", req.Base, ErrNeedFull)
	}
	a := ss.acked[req.HostCall]
	if a == nil {
		return fmt.Errorf("base: no list of messages of the host's %q calls is held for the session: %w", hostCallName(req.HostCall), ErrNeedFull)
	}
	if req.Base > len(a.msgs) {
		return fmt.Errorf("base: expected at most the %d messages held, found %d: %w", len(a.msgs), req.Base, ErrNeedFull)
	}
	if got := a.fingerprint(req.Base); got != req.BaseFingerprint {
		return fmt.Errorf("base: the first %d messages held have the fingerprint %s, found %q: %w", req.Base, got, req.BaseFingerprint, ErrNeedFull)
	}
	// The held list is the engine's own: extend a copy of its prefix, so
	// that the list held stays intact until the call is served.
	full := make([]Message, 0, req.Base+len(req.Messages))
	full = append(full, a.msgs[:req.Base]...)
	full = append(full, req.Messages...)
	req.Messages = full
	req.Base, req.BaseFingerprint = 0, ""
	return nil
}

// ack records req.Messages as the list held for req.HostCall and returns
// what the answer acknowledges. The chain is computed only past the
// prefix shared with the list held before.
func (ss *sessionState) ack(req *Request) *Ack {
	if ss.acked == nil {
		ss.acked = map[string]*ackedList{}
	}
	old := ss.acked[req.HostCall]
	a := &ackedList{msgs: req.Messages, chain: make([]string, len(req.Messages))}
	same := 0
	if old != nil {
		for same < len(old.msgs) && same < len(a.msgs) && sameMessage(&old.msgs[same], &a.msgs[same]) {
			same++
		}
		copy(a.chain, old.chain[:same])
	}
	prev := a.fingerprint(same)
	for i := same; i < len(a.msgs); i++ {
		prev = ChainFingerprint(prev, a.msgs[i])
		a.chain[i] = prev
	}
	ss.acked[req.HostCall] = a
	return &Ack{Messages: len(a.msgs), Fingerprint: a.fingerprint(len(a.msgs))}
}

// sameMessage reports whether two skeletons are equal.
func sameMessage(a, b *Message) bool {
	return a.Role == b.Role && a.Timestamp == b.Timestamp && a.ToolCallID == b.ToolCallID && a.Chars == b.Chars &&
		sameIDs(a.ToolCallIDs, b.ToolCallIDs)
}

// hostCallName names a Request.HostCall for messages ("unnamed" for "").
func hostCallName(c string) string {
	if c == "" {
		return "unnamed"
	}
	return c
}
