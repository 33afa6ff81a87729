package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// maxCaches is how many sessions' view caches the process keeps at most;
// past it the least recently used is dropped (its next call reads the
// whole session again).
const maxCaches = 32

// viewCache is what the engine keeps of one session between calls: the
// context messages of its active path as read at a store version, with
// what the layers decided of each that does not depend on the call, and
// the join of the host's last list of messages of each kind of call. It
// is extended by the lines the store appended since (ReadAppended) when
// they only extend the active path; anything else reads the session
// again. Only the holder of the session's lock reads or writes it.
type viewCache struct {
	// store and pkey are what it was read with: another store or policy
	// reads the session again.
	store bs.Store
	pkey  string
	// version is the store's version the messages were read at, and lines
	// how many lines it holds.
	version bs.Version
	lines   int
	// extendable is false when appended lines cannot be followed (a v1
	// transcript, whose path is every entry; no active leaf with an id).
	extendable bool
	// leafID is the id of the active path's leaf.
	leafID string
	// ids holds the id of every entry of the transcript.
	ids map[string]struct{}
	// sm are the context messages of the active path (see stored), byID
	// their positions by entry id, msgs their viewMsg (only Index and
	// Tokens change from call to call).
	sm   []stored
	byID map[string]int
	msgs []viewMsg
	// hot is what layer 1 reads of each context message on every call,
	// kept compact.
	hot []hotMsg
	// contents are stored.old.content of each (read in order with hot);
	// dups counts the messages whose id another one has too.
	contents [][]byte
	dups     int
	// pathChecked is the state whose HostSizes were last found to name
	// only entries of the cache's path (see learnHostSizes).
	pathChecked *State
	// coll mirrors which context messages are in collFor.Collapsed (see
	// mirrorOf).
	coll    []bool
	collFor *State
	// joins are the joins of the host's last list of each kind of call
	// (Request.HostCall).
	joins map[string]*join
	// leaves caches the ids of the messages each top-level summary covers;
	// rendered is the last summary message rendered, of the tops named
	// by renderedKey, and renderedLen its JSON length (jsQuotedLen).
	leaves      map[string][]string
	found       map[string]int
	rendered    *Summary
	renderedKey string
	renderedLen int
	// line reads a line of the session during a call (nil: none can be).
	line func(line int) ([]byte, error)
	// raws are the raw lines of the context messages during the call that
	// read them (a summary of them needs them), nil after.
	raws [][]byte
	// inc is what layer 1 keeps between calls, by kind of host call
	// (layer1Inc); msgsBy is the one that last wrote the Index and Tokens
	// of msgs (nil for none).
	inc    map[string]*l1inc
	msgsBy *l1inc
	// changes are the ids whose state entries changed while the cache
	// mirrored the state (logChange), the first of them the logBase-th
	// change logged; mirrorGen counts the mirror's rebuilds.
	changes   []string
	logBase   int
	mirrorGen uint64
	// The scratch of a call, kept to be reused.
	repl    replSet
	dec     []uint8
	sent    []bool
	cum     []int
	fresh   []int
	touched []int
}

// hotMsg is what layer 1 reads of a context message on every call (see
// stored).
type hotMsg struct {
	// cand is true for a tool result with content: layer 1 decides it;
	// tr for a message of the tool result role with an id.
	cand, tr bool
	// oldOK, force, dup, restored and window are stored.old.ok,
	// stored.force, stored.dupID, a stored.restoredAt that is set, and
	// stored.window.
	oldOK, force, dup, restored bool
	window                      int32
	// clen is the length of stored.old.content.
	clen int32
}

// replSet is the new content of the stored messages a view replaces, by
// position, with the positions set (in the order they were set).
type replSet struct {
	c    [][]byte
	n    []int // the length of each (utf16Len)
	has  []bool
	keys []int
}

// reset empties the set and sizes it for n messages.
func (r *replSet) reset(n int) {
	for _, k := range r.keys {
		r.has[k], r.c[k] = false, nil
	}
	r.keys = r.keys[:0]
	for len(r.c) < n {
		r.c = append(r.c, nil)
		r.n = append(r.n, 0)
		r.has = append(r.has, false)
	}
}

// set sets the content of k to c, of length n (utf16Len(c)).
func (r *replSet) set(k int, c []byte, n int) {
	if !r.has[k] {
		r.has[k] = true
		r.keys = append(r.keys, k)
	}
	r.c[k], r.n[k] = c, n
}

func (r *replSet) get(k int) ([]byte, bool) {
	if k < 0 || k >= len(r.has) || !r.has[k] {
		return nil, false
	}
	return r.c[k], true
}

func (r *replSet) len() int { return len(r.keys) }

// policyKey is what a cache's decisions depend on of the policy.
func policyKey(p extract.Policy) string { return fmt.Sprintf("%+v", p) }

// newCache reads the context messages of tr into a new cache; with
// keepRaws it holds their raw lines for the call (see raws).
func newCache(ctx context.Context, store bs.Store, tr bs.Transcript, p extract.Policy, keepRaws bool) (*viewCache, error) {
	sm, raws, err := readStored(ctx, tr, p, keepRaws)
	if err != nil {
		return nil, err
	}
	c := &viewCache{store: store, pkey: policyKey(p), version: tr.Version(), sm: sm, raws: raws, joins: map[string]*join{}}
	nodes := tr.Nodes()
	c.lines = len(nodes)
	c.ids = make(map[string]struct{}, len(nodes))
	for i := range nodes {
		if nodes[i].Kind == bs.KindEntry && nodes[i].ID != "" {
			c.ids[nodes[i].ID] = struct{}{}
		}
	}
	if path := tr.ActivePath(); len(path) > 0 && tr.Header().Version >= 2 {
		c.leafID = nodes[path[len(path)-1]].ID
		c.extendable = c.leafID != ""
	}
	c.byID = make(map[string]int, len(sm))
	c.msgs = make([]viewMsg, 0, len(sm))
	for k := range sm {
		c.added(k)
	}
	return c, nil
}

// added records the new context message sm[k] in byID and msgs.
func (c *viewCache) added(k int) {
	s := &c.sm[k]
	c.contents = append(c.contents, s.old.content)
	c.hot = append(c.hot, hotMsg{cand: s.typ == "message" && s.role == collapseRole && s.hasContent, tr: s.role == collapseRole && s.id != "", oldOK: s.old.ok,
		force: s.force, restored: !s.restoredAt.IsZero(), window: int32(min(max(s.window, -1), 1<<30)), clen: int32(s.old.clen)})
	if s.id != "" {
		if o, dup := c.byID[s.id]; dup {
			c.sm[o].dupID, s.dupID = true, true
			c.hot[o].dup, c.hot[k].dup = true, true
			c.dups++
		}
		c.byID[s.id] = k
	}
	c.msgs = append(c.msgs, viewMsg{Index: -1, Line: s.line, ID: s.id, Role: s.role, Timestamp: s.ts, CallID: s.callID, Calls: s.calls, Pinned: s.pinned})
}

// errUnexplained is what extend returns for appended lines it cannot
// follow.
var errUnexplained = errors.New("the appended lines do not only extend the active path")

// extend follows the entries appended to the transcript (in order, their
// lines numbered on from c.lines+1): a message entry whose parent is the
// active leaf extends the context messages, another entry whose parent is
// the leaf moves the leaf. Anything else (a compaction or a branch
// summary, a leaf control line, a side append, an id seen before, another
// parent, a line that is not an entry) fails with errUnexplained; the
// cache is then partly extended and must be dropped.
func (c *viewCache) extend(entries []*bs.Entry, p extract.Policy) error {
	if !c.extendable {
		return errUnexplained
	}
	var sc scanner
	for i, en := range entries {
		if en == nil || en.Line != c.lines+1+i || en.Kind != bs.KindEntry || en.ID == "" || en.AppendMode != "" {
			return errUnexplained
		}
		switch en.Type {
		case "compaction", "branch_summary", "leaf":
			return errUnexplained
		}
		if _, seen := c.ids[en.ID]; seen || en.ParentID != c.leafID {
			return errUnexplained
		}
		c.ids[en.ID] = struct{}{}
		c.leafID = en.ID
		if !bs.IsMessageType(en.Type) {
			continue
		}
		c.sm = append(c.sm, stored{node: -1, line: en.Line, id: en.ID, typ: en.Type, e: en})
		k := len(c.sm) - 1
		describeStored(&c.sm[k], &sc)
		prepare(&c.sm[k], p, true)
		c.added(k)
	}
	c.lines += len(entries)
	return nil
}

// pos returns the position from the end of the active path of context
// message k (-1 for a compaction).
func (c *viewCache) pos(k int) int {
	if c.sm[k].typ == "compaction" {
		return -1
	}
	return len(c.sm) - 1 - k
}

// maxCachedMessages bounds the context messages the caches hold together
// (a cache of 64k messages holds about 50 MB).
var maxCachedMessages = 256 << 10

// caches orders the sessions that hold a cache, for the LRU, with the
// context messages each holds.
var caches = struct {
	mu    sync.Mutex
	clock uint64
	held  map[*sessionState]int
}{held: map[*sessionState]int{}}

// touchCache marks the cache of ss (whose lock the caller holds) as just
// used and drops the least recently used caches of other sessions past
// maxCaches or maxCachedMessages (those whose lock is free: a session in
// a call keeps its cache).
func touchCache(ss *sessionState) {
	caches.mu.Lock()
	caches.clock++
	ss.lastUse.Store(caches.clock)
	caches.held[ss] = len(ss.vc.sm)
	var over []*sessionState
	if overBounds(caches.held) {
		for o := range caches.held {
			if o != ss {
				over = append(over, o)
			}
		}
	}
	caches.mu.Unlock()
	for len(over) > 0 {
		caches.mu.Lock()
		still := overBounds(caches.held)
		caches.mu.Unlock()
		if !still {
			return
		}
		// The least recently used among the others.
		oldest, at := -1, ^uint64(0)
		for i, o := range over {
			if u := o.lastUse.Load(); u < at {
				oldest, at = i, u
			}
		}
		o := over[oldest]
		over = append(over[:oldest], over[oldest+1:]...)
		if o.mu.TryLock() {
			o.dropCache()
			o.mu.Unlock()
		}
	}
}

// over2 reports whether the caches held are past their bounds (the
// caller holds caches.mu).
func overBounds(held map[*sessionState]int) bool {
	if len(held) > maxCaches {
		return true
	}
	n := 0
	for _, m := range held {
		n += m
	}
	return n > maxCachedMessages && len(held) > 1
}

// dropCache drops the session's cache and what it holds of the host's
// lists (the caller holds ss.mu).
func (ss *sessionState) dropCache() {
	ss.vc = nil
	ss.acked = nil
	ss.dropView()
	caches.mu.Lock()
	delete(caches.held, ss)
	caches.mu.Unlock()
}

// readSession returns the session's cache, up to date with the store:
// extended by what was appended since it was read when it can be, else
// read again (then tr is the transcript read, else nil).
func (e *Engine) readSession(ctx context.Context, ss *sessionState, ref bs.SessionRef) (*viewCache, bs.Transcript, error) {
	p := e.policy()
	if c := ss.vc; c != nil && c.store == e.Store && c.pkey == policyKey(p) && !e.noIncremental {
		entries, v, err := bs.ReadAppended(ctx, e.Store, ref, c.version, c.lines)
		if err == nil && len(entries) > 0 {
			err = c.extend(entries, p)
		}
		if err == nil {
			c.version = v
			touchCache(ss)
			cacheCounts.extended.Add(1)
			return c, nil, nil
		}
		if !errors.Is(err, bs.ErrUnsupported) {
			e.log().Debug("engine: the session is read again", "session", ref.String(), "why", err.Error())
		}
		ss.vc = nil
	}
	tr, err := e.Store.Open(ctx, ref, nil)
	if err != nil {
		return nil, nil, err
	}
	// Without a summarizer a summary reads its lines again as it is
	// written (see messageJob): the whole session's are not held.
	c, err := newCache(ctx, e.Store, tr, p, e.Summarizer != nil)
	if err != nil {
		return nil, nil, err
	}
	ss.vc = c
	touchCache(ss)
	cacheCounts.read.Add(1)
	return c, tr, nil
}

// cacheCounts counts the calls served from a cache extended by what was
// appended, and those that read the whole session (for the tests).
var cacheCounts struct{ extended, read atomic.Int64 }

// quotedLen returns the plugin's size of the summary message of tops
// (jsQuotedLen of its text), from the cache when it rendered them last.
func (c *viewCache) quotedLen(st *State, tops []*SummaryRecord) int {
	s := c.render(st, tops)
	if s == nil {
		return jsQuotedLen("")
	}
	if c.renderedLen == 0 {
		c.renderedLen = jsQuotedLen(s.Text)
	}
	return c.renderedLen
}

// verifiedAt returns where the messages of summary id were found among the
// cache's context messages (see verified).
func (c *viewCache) verifiedAt(id string) (int, bool) {
	if c == nil {
		return 0, false
	}
	at, ok := c.found[id]
	return at, ok
}

// verified records that the messages summary id covers are the cache's
// context messages from at on.
func (c *viewCache) verified(id string, at int) {
	if c == nil {
		return
	}
	if c.found == nil || len(c.found) > 1024 {
		c.found = map[string]int{}
	}
	c.found[id] = at
}

// usage returns the recorded usage of context message k (recordedInput),
// read from its line when the cache has not read it yet.
func (c *viewCache) usage(k int) int {
	s := &c.sm[k]
	if s.usage != usageUnknown {
		return s.usage
	}
	if c.line == nil {
		return 0
	}
	raw, err := c.line(s.line)
	if err != nil || (s.id != "" && !lineHasID(raw, s.id)) {
		return 0
	}
	s.usage = recordedInput(&stored{role: s.role, e: &bs.Entry{Raw: raw}})
	return s.usage
}
