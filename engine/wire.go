package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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
// and chars, separated by U+0000; for a bootstrap message
// (Message.Bootstrap) the timestamp counts as 0 and U+0000 "bootstrap"
// follows, so that the host's bootstrap of each run is the same message
// and no other message is one. The OpenClaw plugin computes the same
// chain over the skeletons it sends.
func ChainFingerprint(prev string, m Message) string {
	var b strings.Builder
	b.Grow(len(prev) + len(m.Role) + len(m.ToolCallID) + 48)
	b.WriteString(prev)
	b.WriteByte('\n')
	ts := m.Timestamp
	if m.Bootstrap {
		ts = 0
	}
	b.WriteString(m.Role)
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(ts, 10))
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
	if m.Bootstrap {
		b.WriteString("\x00bootstrap")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// ackedList is the list of messages of one kind of host call (keyed by
// Request.HostCall) that the engine holds for a session, with the chain
// fingerprint after each message, and the join of the list to the
// session's cache.
type ackedList struct {
	// msgs is the list of the last call; chain the fingerprints of its
	// first len(chain) messages (those acknowledged, or known the same as
	// those acknowledged).
	msgs  []Message
	chain []string
	// sums are the sums of the Chars of msgs (Request.sums).
	sums []int
	// j is the join of the first jValid messages of msgs to the
	// session's cache j.c (nil for none).
	j      *join
	jValid int
}

// fingerprint returns the chain fingerprint of the first n messages.
func (a *ackedList) fingerprint(n int) string {
	if n <= 0 {
		return ""
	}
	return a.chain[n-1]
}

// resolveBase makes req.Messages the whole list of the call, held for
// req.HostCall: when req.Base is set, the first Base messages of the list
// held followed by req.Messages (the held list is extended in place),
// else req.Messages as given. The error wraps ErrNeedFull when no such
// list is held, it is shorter, or its fingerprint differs.
func (ss *sessionState) resolveBase(req *Request) error {
	if ss.acked == nil {
		ss.acked = map[string]*ackedList{}
	}
	a := ss.acked[req.HostCall]
	if req.Base == 0 && req.BaseFingerprint == "" {
		if a == nil {
			a = &ackedList{}
			ss.acked[req.HostCall] = a
		}
		same := 0
		for same < len(a.msgs) && same < len(req.Messages) && same < len(a.chain) && sameMessage(&a.msgs[same], &req.Messages[same]) {
			same++
		}
		// Held without spare capacity: an extension in place never writes
		// into the caller's array.
		a.msgs, a.chain, a.jValid = slices.Clip(req.Messages), a.chain[:same], min(a.jValid, same)
		a.sum(min(same, len(a.sums)))
		req.sums = a.sums
		return nil
	}
	if req.Base < 0 {
		return fmt.Errorf("base: expected a count of messages ≥ 0, found %d: %w", req.Base, ErrNeedFull)
	}
	if a == nil {
		return fmt.Errorf("base: no list of messages of the host's %q calls is held for the session: %w", hostCallName(req.HostCall), ErrNeedFull)
	}
	if req.Base > len(a.chain) {
		return fmt.Errorf("base: expected at most the %d messages held, found %d: %w", len(a.chain), req.Base, ErrNeedFull)
	}
	if got := a.fingerprint(req.Base); got != req.BaseFingerprint {
		return fmt.Errorf("base: the first %d messages held have the fingerprint %s, found %q: %w", req.Base, got, req.BaseFingerprint, ErrNeedFull)
	}
	// The held list is the engine's own: extended in place. Its first
	// Base messages stay; what follows is this call's.
	a.msgs = append(a.msgs[:req.Base], req.Messages...)
	a.chain, a.jValid = a.chain[:req.Base], min(a.jValid, req.Base)
	a.sum(min(req.Base, len(a.sums)))
	req.Messages, req.sums = a.msgs, a.sums
	req.Base, req.BaseFingerprint = 0, ""
	return nil
}

// sum makes a.sums the sums of a.msgs, the first from of them known.
func (a *ackedList) sum(from int) {
	a.sums = a.sums[:from]
	n := 0
	if from > 0 {
		n = a.sums[from-1]
	}
	for i := from; i < len(a.msgs); i++ {
		n += a.msgs[i].Chars
		a.sums = append(a.sums, n)
	}
}

// joinOf returns the join of req.Messages (resolved by resolveBase) to
// the cache c: the join of the list held, extended, when it was made on
// c, else made again.
func (ss *sessionState) joinOf(req *Request, c *viewCache, full bool) *join {
	a := ss.acked[req.HostCall]
	if a == nil {
		a = &ackedList{msgs: req.Messages}
		ss.acked[req.HostCall] = a
	}
	j := a.j
	ok := j != nil && j.c == c && !full && j.joinMore(req.Messages, a.jValid, c.sm)
	if !ok {
		j = &join{c: c}
		j.joinAll(req.Messages, c.sm)
	}
	a.j, a.jValid = j, len(req.Messages)
	return j
}

// ack records req.Messages as the list held for req.HostCall and returns
// what the answer acknowledges. The chain is computed only past the
// prefix known to be the same as the list acknowledged before.
func (ss *sessionState) ack(req *Request) *Ack {
	if ss.acked == nil {
		ss.acked = map[string]*ackedList{}
	}
	a := ss.acked[req.HostCall]
	if a == nil {
		a = &ackedList{}
		ss.acked[req.HostCall] = a
	}
	if len(a.msgs) != len(req.Messages) || len(a.chain) > len(a.msgs) || (len(a.msgs) > 0 && &a.msgs[0] != &req.Messages[0]) {
		// Not the list resolveBase held (a call made without it).
		a.msgs, a.chain, a.j, a.jValid = req.Messages, a.chain[:0], nil, 0
	}
	prev := a.fingerprint(len(a.chain))
	for i := len(a.chain); i < len(a.msgs); i++ {
		prev = ChainFingerprint(prev, a.msgs[i])
		a.chain = append(a.chain, prev)
	}
	return &Ack{Messages: len(a.msgs), Fingerprint: a.fingerprint(len(a.msgs))}
}

// sameMessage reports whether two skeletons are equal (two bootstrap
// messages whatever their timestamps, as ChainFingerprint counts them).
func sameMessage(a, b *Message) bool {
	if a.Bootstrap != b.Bootstrap || a.Timestamp != b.Timestamp && !a.Bootstrap {
		return false
	}
	return a.Role == b.Role && a.ToolCallID == b.ToolCallID && a.Chars == b.Chars && sameIDs(a.ToolCallIDs, b.ToolCallIDs)
}

// hostCallName names a Request.HostCall for messages ("unnamed" for "").
func hostCallName(c string) string {
	if c == "" {
		return "unnamed"
	}
	return c
}
