package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
	"github.com/go-json-experiment/json/jsontext"
)

// stored is one context message of the session's active path as it is
// stored: the latest compaction's summary (when there is one) first, then
// every message of tr.Context().Messages, in order.
type stored struct {
	node, line int
	id         string
	// typ is the entry type; role the role of the message the host makes
	// of it ("user", "assistant", "toolResult", "custom",
	// "branchSummary", "compactionSummary", …).
	typ, role string
	// ts is the message's timestamp in Unix milliseconds: a message's
	// "message.timestamp", else (and for the other entry types) the
	// entry's own time; 0 when it has none.
	ts     int64
	callID string
	calls  []string
	pinned bool
	// pos is the message's position from the end of the active path (0 is
	// the newest), -1 for the compaction.
	pos int
	// e is the parsed line.
	e *bs.Entry
	// chars is the length, in UTF-16 code units, of the stored JSON of
	// the message's content (a compaction's summary).
	chars int
	// content is the span of "/message/content" in e.Raw, when it has one.
	cStart, cEnd int
	hasContent   bool
	// The parts of e the layers read after the line is described (e
	// itself is dropped from a cached message that needs no more: see
	// prepare): force is `_extractable: true`, restoredAt the line's
	// "_restored" time, ownPlaceholder that a tool result's content holds
	// the entry's own placeholders, usage the request size the provider
	// recorded (recordedInput).
	force          bool
	restoredAt     time.Time
	ownPlaceholder bool
	usage          int
	// window is the keep_recent the extraction policy applies to the
	// message, and old the collapse decided for it once it is past that
	// window, the restore protection left out (see decision).
	window int
	old    collapsible
	// described is true once the line was read and described; dupID
	// that another context message has the same id.
	described, dupID bool
}

// readStored reads the context messages of tr's active path, described
// and prepared for the policy p (see prepare): the parsed lines of most
// are dropped as they are read.
//
// With keep it also returns the raw line of each (the caller's to keep),
// else nil: the lines are then dropped once described.
func readStored(ctx context.Context, tr bs.Transcript, p extract.Policy, keep bool) ([]stored, [][]byte, error) {
	c := tr.Context()
	nodes := tr.Nodes()
	idx := make([]int, 0, len(c.Messages)+1)
	if c.Compaction >= 0 {
		idx = append(idx, c.Compaction)
	}
	idx = append(idx, c.Messages...)
	out := make([]stored, len(idx))
	byLine := make(map[int]int, len(idx))
	lines := make([]int, 0, len(idx))
	// A message's position from the end of the active path: the context
	// messages after the compaction's first kept entry are every message
	// of the path from there on (tr.MessagePositions).
	for k, i := range idx {
		n := &nodes[i]
		s := &out[k]
		s.node, s.line, s.id, s.typ = i, n.Line, n.ID, n.Type
		s.pos = -1
		if n.Type != "compaction" {
			s.pos = len(idx) - 1 - k
		}
		byLine[n.Line] = k
		lines = append(lines, n.Line)
	}
	// Lines wants them ascending; the active path is, but the compaction
	// may sit after the first kept entry.
	slices.Sort(lines)
	// The lines are read in order and described by a few workers (the
	// parse of a line is most of the work).
	type item struct {
		k, line int
		off     int64
		raw     []byte
	}
	workers := min(max(runtime.GOMAXPROCS(0), 1), 4)
	jobs := make(chan []item, 2*workers)
	var wg sync.WaitGroup
	eager := eagerUsage
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sc scanner
			for batch := range jobs {
				for _, it := range batch {
					s := &out[it.k]
					s.e = entry.Parse(it.raw, it.line, it.off)
					describeStored(s, &sc)
					prepare(s, p, it.k >= len(out)-eager)
				}
			}
		}()
	}
	var readErr error
	var raws [][]byte
	if keep {
		raws = make([][]byte, len(out))
	}
	if len(lines) > 0 {
		seen := make([]bool, len(out))
		batch := make([]item, 0, 64)
		for le, err := range tr.Lines(ctx, lines) {
			if err != nil {
				readErr = fmt.Errorf("read the context of %s: %w", tr.Ref(), err)
				break
			}
			k, ok := byLine[le.Line]
			if !ok || seen[k] {
				continue
			}
			seen[k] = true
			if keep {
				raws[k] = le.Raw
			}
			// The entry may be reused by the next read; its Raw is ours.
			batch = append(batch, item{k: k, line: le.Line, off: le.Offset, raw: le.Raw})
			if len(batch) == cap(batch) {
				jobs <- batch
				batch = make([]item, 0, 64)
			}
		}
		if len(batch) > 0 {
			jobs <- batch
		}
	}
	close(jobs)
	wg.Wait()
	if readErr != nil {
		return nil, nil, readErr
	}
	for k := range out {
		if !out[k].described {
			return nil, nil, fmt.Errorf("read the context of %s: line %d was not read: %w", tr.Ref(), out[k].line, bs.ErrChanged)
		}
	}
	return out, raws, nil
}

// eagerUsage is how many of the newest context messages read with the
// session have their recorded usage read at once; an older one's is read
// when a turn's measure needs it (usageUnknown until then).
var eagerUsage = 1024

const usageUnknown = -1

// noRestoreProtection is a KeepAfterRestore no restore time is within.
const noRestoreProtection = time.Duration(math.MinInt64)

// prepare keeps what the layers read of the described message s beyond
// describeStored's fields, so that its parsed line can be dropped: the
// collapse decided for it once past its keep_recent window, without the
// restore protection (decision adds both back), its recorded usage, and
// whether its content holds its own placeholders. The line is kept only
// for a message whose content holds placeholders (a restored value is
// put back into it: restoredContents), a small line.
func prepare(s *stored, p extract.Policy, usage bool) {
	e := s.e
	ext := extract.ParseExtractable(e.Extractable)
	s.force, s.restoredAt = ext.Force, e.Restored
	s.window = p.KeepRecent
	if ext.Set && !ext.Force && !ext.Never {
		s.window = ext.Window
	}
	s.usage = 0
	if s.role == "assistant" {
		s.usage = usageUnknown
		if usage {
			s.usage = recordedInput(s)
		}
	}
	if s.hasContent {
		s.ownPlaceholder = extract.HoldsOwnPlaceholder(e.Raw[s.cStart:s.cEnd], e)
	}
	if s.typ == "message" && s.role == collapseRole && s.hasContent {
		q := p
		q.KeepAfterRestore = noRestoreProtection
		s.old = decideCollapse(s, math.MaxInt32, q, time.Time{})
	}
	if !s.ownPlaceholder {
		s.e = nil
	}
	s.described = true
}

// describeStored fills what the join and the layers need from the parsed
// line of s.
func describeStored(s *stored, sc *scanner) {
	e := s.e
	raw := e.Raw
	ms := int64(0)
	if !e.Timestamp.IsZero() {
		ms = e.Timestamp.UnixMilli()
	}
	s.pinned = extract.ParseExtractable(e.Extractable).Never
	switch s.typ {
	case "compaction":
		s.role, s.ts = "compactionSummary", ms
		if a, b, ok := jsonedit.Find(raw, "/summary"); ok {
			s.chars = utf16Len(raw[a:b])
		}
		return
	case "custom_message":
		s.role, s.ts = "custom", ms
		if a, b, ok := jsonedit.Find(raw, "/content"); ok {
			s.chars = utf16Len(raw[a:b])
		}
		return
	case "branch_summary":
		s.role, s.ts = "branchSummary", ms
		if a, b, ok := jsonedit.Find(raw, "/summary"); ok {
			s.chars = utf16Len(raw[a:b])
		}
		return
	}
	s.role = e.Role
	m, ok := sc.scanMessage(raw)
	if !ok {
		// Not an object this scan reads: the slower, more lenient path.
		m = messageMembers{}
		if a, b, ok := jsonedit.Find(raw, "/message/timestamp"); ok {
			m.ts = parseMillis(raw[a:b])
		}
		if a, b, ok := jsonedit.Find(raw, "/message/content"); ok {
			m.cStart, m.cEnd, m.hasContent = a, b, true
		}
		if a, b, ok := jsonedit.Find(raw, "/message/toolCallId"); ok {
			m.callID, _ = strconv.Unquote(string(raw[a:b]))
		}
	}
	s.ts = m.ts
	if m.hasContent {
		s.cStart, s.cEnd, s.hasContent = m.cStart, m.cEnd, true
		s.chars = utf16Len(raw[m.cStart:m.cEnd])
	}
	switch s.role {
	case "toolResult":
		s.callID = m.callID
	case "assistant":
		for _, b := range e.Blocks {
			if b.Type != "toolCall" {
				continue
			}
			blk := raw[b.Start:b.End]
			if a, z, ok := jsonedit.Find(blk, "/id"); ok {
				if id, err := strconv.Unquote(string(blk[a:z])); err == nil {
					s.calls = append(s.calls, id)
				}
			}
		}
	}
}

// messageMembers are the members of a message line the join reads.
type messageMembers struct {
	ts           int64
	cStart, cEnd int
	hasContent   bool
	callID       string
}

// decodeOptions read lines as leniently as the entry parser does.
var decodeOptions = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// scanner reads message lines with one decoder.
type scanner struct {
	r   bytes.Reader
	dec *jsontext.Decoder
}

// scanMessage reads "message.timestamp", the span of "message.content"
// and "message.toolCallId" of a raw line in one pass; ok is false when
// the line is not an object with a "message" object.
func (sc *scanner) scanMessage(raw []byte) (m messageMembers, ok bool) {
	sc.r.Reset(raw)
	if sc.dec == nil {
		sc.dec = jsontext.NewDecoder(&sc.r, decodeOptions...)
	} else {
		sc.dec.Reset(&sc.r, decodeOptions...)
	}
	dec := sc.dec
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return m, false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return m, false
		}
		if name.String() != "message" { // read before the next read
			if dec.SkipValue() != nil {
				return m, false
			}
			continue
		}
		if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
			return m, false
		}
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return m, false
			}
			member := tok.String() // the token is valid until the next read
			switch member {
			case "timestamp", "content", "toolCallId":
				v, err := dec.ReadValue()
				if err != nil {
					return m, false
				}
				end := int(dec.InputOffset())
				start := end - len(v)
				switch member {
				case "timestamp":
					m.ts = parseMillis(v)
				case "content":
					m.cStart, m.cEnd, m.hasContent = start, end, true
				case "toolCallId":
					if v.Kind() == '"' {
						if u, err := jsontext.AppendUnquote(nil, v); err == nil {
							m.callID = string(u)
						}
					}
				}
			default:
				if dec.SkipValue() != nil {
					return m, false
				}
			}
		}
		return m, true
	}
	return m, false
}

// parseMillis reads a JSON number of milliseconds (or a numeric string);
// 0 when it is neither.
func parseMillis(b []byte) int64 {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < 1e16 {
		return int64(f)
	}
	return 0
}

// utf16Len returns the length of b in UTF-16 code units, as JavaScript
// counts a string's length (a byte that is not UTF-8 counts as one).
func utf16Len(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// matchKey is what a host message and a stored one must share.
type matchKey struct {
	role   string
	ts     int64
	callID string
}

// match joins the host's messages to the stored ones: host message i is
// matched to the next stored message (after the previous match) with the
// same role and timestamp and, for a tool result, the same toolCallId;
// an assistant message that names its tool-call ids must name the same
// ones. A bootstrap message (Message.Bootstrap) is matched to none. It
// returns, for each stored message, the index of the host message matched
// to it (-1 for none), and how many host messages matched.
func match(host []Message, st []stored) (index []int, matched int) {
	index = make([]int, len(st))
	for k := range index {
		index[k] = -1
	}
	byKey := make(map[matchKey][]int, len(st))
	for k := range st {
		key := matchKey{st[k].role, st[k].ts, ""}
		if st[k].role == "toolResult" {
			key.callID = st[k].callID
		}
		byKey[key] = append(byKey[key], k)
	}
	cursor := make(map[matchKey]int, len(byKey))
	next := 0 // the first stored message a match may take
	for i := range host {
		h := &host[i]
		if h.Bootstrap {
			continue // the host made it up: never stored
		}
		key := matchKey{h.Role, h.Timestamp, ""}
		if h.Role == "toolResult" {
			key.callID = h.ToolCallID
		}
		list := byKey[key]
		c := cursor[key]
		for c < len(list) && list[c] < next {
			c++
		}
		cursor[key] = c
		for j := c; j < len(list); j++ {
			k := list[j]
			if h.Role == "assistant" && len(h.ToolCallIDs) > 0 && !sameIDs(h.ToolCallIDs, st[k].calls) {
				continue
			}
			index[k] = i
			matched++
			next = k + 1
			if j == c {
				cursor[key] = c + 1
			}
			break
		}
	}
	return index, matched
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// join is the join of one list of the host's messages to the context
// messages of a cache, kept so that a later list that extends it (or
// shares a prefix with it) is joined at the cost of the messages after
// that prefix. It is what match returns, with the greedy walk's state.
type join struct {
	// c is the cache the join was made on; n how many of its context
	// messages it saw.
	c *viewCache
	n int
	// index is, for each context message, the host message matched to it
	// (-1 for none); hostK, for each host message, its context message
	// (-1 for none).
	index   []int
	hostK   []int
	matched int
	// unmatched are the host messages matched to none, ascending.
	unmatched []int
	// next is the first context message a match of a later host message
	// may take.
	next int
}

// maxJoinScan bounds the comparisons an incremental join makes before it
// gives way to a whole one.
const maxJoinScan = 1 << 16

// joinAll joins host to sm from scratch (match) into j.
func (j *join) joinAll(host []Message, sm []stored) {
	index, matched := match(host, sm)
	j.index, j.matched, j.n = index, matched, len(sm)
	j.hostK = j.hostK[:0]
	for range host {
		j.hostK = append(j.hostK, -1)
	}
	j.next = 0
	for k, i := range index {
		if i >= 0 {
			j.hostK[i] = k
			j.next = k + 1
		}
	}
	j.unmatched = j.unmatched[:0]
	for i, k := range j.hostK {
		if k < 0 {
			j.unmatched = append(j.unmatched, i)
		}
	}
}

// joinMore joins host, whose first shared messages are those of the list
// j was made for, to sm, which extends the context messages j saw: the
// matches of the shared messages stand unless one that matched nothing
// would now match an appended context message (then it reports false and
// j must be made again with joinAll), and the messages after them are
// matched as match would. It reports false, too, when that would take
// more than maxJoinScan comparisons.
func (j *join) joinMore(host []Message, shared int, sm []stored) bool {
	if shared > len(j.hostK) || j.n > len(sm) {
		return false
	}
	// Forget the matches of the messages after the shared ones.
	for i := shared; i < len(j.hostK); i++ {
		if k := j.hostK[i]; k >= 0 {
			j.index[k] = -1
			j.matched--
		}
	}
	j.hostK = j.hostK[:shared]
	for len(j.unmatched) > 0 && j.unmatched[len(j.unmatched)-1] >= shared {
		j.unmatched = j.unmatched[:len(j.unmatched)-1]
	}
	j.next = 0
	for i := shared - 1; i >= 0; i-- {
		if k := j.hostK[i]; k >= 0 {
			j.next = k + 1
			break
		}
	}
	for len(j.index) < len(sm) {
		j.index = append(j.index, -1)
	}
	// A shared message that matched nothing would take an appended
	// context message now (the greedy walk reaches it before the next).
	if old := j.n; old < len(sm) && len(j.unmatched) > 0 {
		if len(j.unmatched)*(len(sm)-old) > maxJoinScan {
			return false
		}
		for _, i := range j.unmatched {
			for k := old; k < len(sm); k++ {
				if matches(&host[i], &sm[k]) {
					return false
				}
			}
		}
	}
	j.n = len(sm)
	scan := 0
	for i := shared; i < len(host); i++ {
		found := -1
		for k := j.next; k < len(sm); k++ {
			scan++
			if matches(&host[i], &sm[k]) {
				found = k
				break
			}
		}
		if scan > maxJoinScan {
			return false
		}
		j.hostK = append(j.hostK, found)
		if found < 0 {
			j.unmatched = append(j.unmatched, i)
			continue
		}
		j.index[found] = i
		j.matched++
		j.next = found + 1
	}
	return true
}

// matches reports whether host message h may be matched to the context
// message s (match's rule).
func matches(h *Message, s *stored) bool {
	if h.Bootstrap || h.Role != s.role || h.Timestamp != s.ts {
		return false
	}
	if h.Role == "toolResult" && h.ToolCallID != s.callID {
		return false
	}
	return !(h.Role == "assistant" && len(h.ToolCallIDs) > 0 && !sameIDs(h.ToolCallIDs, s.calls))
}
