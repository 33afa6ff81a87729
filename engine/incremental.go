package engine

import (
	"context"
	"slices"
	"sync/atomic"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// l1inc is what layer 1 keeps of one kind of host call (Request.HostCall)
// between calls on one cache, so that a call visits only the context
// messages whose decision can have changed since the last one: those
// appended, those the join matched anew, those whose state entries
// (Collapsed, Restored, HostSizes) changed, those within their
// keep_recent window or their restore protection, and those restored.
// Every other message's decision and its share of the sums the view
// needs are the last call's. It holds for the join j, the state st and
// the cache's mirror of st (generation gen) it was made with; anything
// else makes a new one, built by visiting every message.
type l1inc struct {
	j   *join
	st  *State
	gen uint64
	// n is how many context messages it visited; logPos how much of the
	// cache's change log it read.
	n      int
	logPos int
	// repl is the new content of the messages the view replaces, kept
	// from call to call.
	repl replSet
	// Per context message: the host's size counted (orig, 0 for a
	// message not sent), its tokens in the view, its share of the batch
	// view (bval) and of the batch saving (fval), whether it was sent and
	// whether it is a fresh collapse (decided, not yet applied).
	orig, tok, bval, fval []int32
	sent, fresh           []bool
	// freshList holds the fresh messages (and some that no longer are:
	// fresh says).
	freshList []int
	nFresh    int
	// The running sums: what the replacements save of the host's sizes,
	// what the fresh collapses would save, the host's sizes of the
	// messages sent.
	replSave, freshSaving, matchedOrig int
	// The sums of bval, fval and sent by position, for the batch view
	// past the summaries.
	bsize, fsave, mcount fenwick
	// pending are the messages kept in full by their keep_recent window
	// alone, timed those its restore protection (the line's own
	// "_restored") may keep: both are visited on every call.
	pending, timed []int
	// cum are the sums of tok (viewMsg.Tokens) by position.
	cum []int
	// mark tells the messages visited in a call (== stamp).
	mark  []uint32
	stamp uint32
}

// fenwick is a binary indexed tree of sums by position.
type fenwick struct{ t []int }

// push appends a position holding 0.
func (f *fenwick) push() {
	n := len(f.t) + 1
	f.t = append(f.t, f.prefix(n-1)-f.prefix(n-(n&-n)))
}

// add adds d at position k.
func (f *fenwick) add(k, d int) {
	if d == 0 {
		return
	}
	for i := k + 1; i <= len(f.t); i += i & -i {
		f.t[i-1] += d
	}
}

// prefix returns the sum of the positions before k.
func (f *fenwick) prefix(k int) int {
	s := 0
	for i := min(k, len(f.t)); i > 0; i -= i & -i {
		s += f.t[i-1]
	}
	return s
}

func (f *fenwick) total() int { return f.prefix(len(f.t)) }

// put sets the content of k to c, of length n, in a set kept from call to
// call (its keys are not kept).
func (r *replSet) put(k int, c []byte, n int) { r.has[k], r.c[k], r.n[k] = true, c, n }

// drop removes k from a set kept from call to call.
func (r *replSet) drop(k int) { r.has[k], r.c[k], r.n[k] = false, nil, 0 }

// grow sizes the set for n messages.
func (r *replSet) grow(n int) {
	for len(r.c) < n {
		r.c = append(r.c, nil)
		r.n = append(r.n, 0)
		r.has = append(r.has, false)
	}
}

// grow sizes x for n context messages.
func (x *l1inc) grow(n int) {
	if len(x.orig) == 0 && n > 0 {
		// Sized once for the messages of a whole visit (the appends of
		// later calls grow them).
		x.repl = replSet{c: make([][]byte, 0, n), n: make([]int, 0, n), has: make([]bool, 0, n)}
		x.orig, x.tok, x.bval, x.fval = make([]int32, 0, n), make([]int32, 0, n), make([]int32, 0, n), make([]int32, 0, n)
		x.sent, x.fresh, x.mark = make([]bool, 0, n), make([]bool, 0, n), make([]uint32, 0, n)
		x.bsize.t, x.fsave.t, x.mcount.t = make([]int, 0, n), make([]int, 0, n), make([]int, 0, n)
		x.cum = make([]int, 0, n)
	}
	x.repl.grow(n)
	for len(x.orig) < n {
		x.orig = append(x.orig, 0)
		x.tok = append(x.tok, 0)
		x.bval = append(x.bval, 0)
		x.fval = append(x.fval, 0)
		x.sent = append(x.sent, false)
		x.fresh = append(x.fresh, false)
		x.mark = append(x.mark, 0)
		x.bsize.push()
		x.fsave.push()
		x.mcount.push()
		x.cum = append(x.cum, 0)
	}
}

// unset takes message k's shares out of x's sums; clen is the length of
// its collapsed content.
func (x *l1inc) unset(k int, clen int32) {
	o := int(x.orig[k])
	if x.sent[k] {
		x.matchedOrig -= o
		x.mcount.add(k, -1)
	}
	if x.repl.has[k] {
		x.replSave -= o - x.repl.n[k]
		x.repl.drop(k)
	}
	if x.fresh[k] {
		x.freshSaving -= o - int(clen)
		x.fresh[k] = false
		x.nFresh--
	}
	x.bsize.add(k, -int(x.bval[k]))
	x.fsave.add(k, -int(x.fval[k]))
	x.orig[k], x.tok[k], x.bval[k], x.fval[k], x.sent[k] = 0, 0, 0, 0, false
}

// layer1Counts counts the calls of layer1Inc that visited only what
// changed and those that visited every message (for the tests).
var layer1Counts struct{ visited, whole atomic.Int64 }

// maxLogSpan bounds the change log of a cache (see viewCache.logChange):
// a kind of call that has not read it past that reads every message.
const maxLogSpan = 1 << 14

// maxLowScan bounds the host messages looked back over to find where the
// join changed; past it every message is visited.
const maxLowScan = 1 << 12

// layer1Inc is layer1 for a request on the session's cache, made from
// what the last call of the same kind decided (see l1inc): the view, the
// decisions and the state's changes are those layer1 makes, byte for
// byte. shared is how many of req's messages the join j kept from the
// last call's (more is true when it extended that join).
func (e *Engine) layer1Inc(ctx context.Context, ref bs.SessionRef, c *viewCache, j *join, more bool, shared int, req *Request, st *State) *layer1 {
	if c.dups > 0 {
		// Messages that share an id are decided together (layer1's
		// order): every call visits them all.
		clear(c.inc)
		return e.layer1(ctx, ref, c, j, req, st)
	}
	sm := c.sm
	st.ensureMaps()
	e.measure(c, st)
	l := &layer1{st: sm, c: c, touched: c.touched[:0]}
	defer func() { c.touched = l.touched[:0] }()
	l.index, l.matched = j.index, j.matched
	l.unmatched = len(req.Messages) - l.matched
	l.msgs = c.msgs
	if c.inc == nil {
		c.inc = map[string]*l1inc{}
	}
	if l.matched == 0 {
		delete(c.inc, req.HostCall)
		c.msgsBy = nil
		c.repl.reset(len(sm))
		l.repl = &c.repl
		for k := range l.msgs {
			l.msgs[k].Index, l.msgs[k].Tokens = -1, 0
		}
		return l // a passthrough: nothing else is decided
	}
	now := e.now()
	p := e.policy()
	keep := p.KeepAfterRestore
	adoptSourceRestores(sm, st)
	for id, at := range st.Restored {
		if now.Sub(at) >= keep {
			st.delRestored(id) // its protection is over
		}
	}
	c.mirrorOf(st)
	index, hot := l.index[:len(sm)], c.hot[:len(sm)]
	x := c.inc[req.HostCall]
	full := x == nil || x.j != j || x.st != st || x.gen != c.mirrorGen || x.logPos < c.logBase || !more || x.n > len(sm)
	lowK := 0
	if !full {
		// The matches of the host's messages before shared stand (see
		// joinMore): what follows the last of them may have changed.
		i := min(shared, len(j.hostK)) - 1
		for n := 0; i >= 0 && j.hostK[i] < 0; n++ {
			if n > maxLowScan {
				full = true
				break
			}
			i--
		}
		if i >= 0 {
			lowK = j.hostK[i] + 1
		}
		lowK = min(lowK, x.n)
	}
	if full {
		x = &l1inc{j: j, st: st}
		c.inc[req.HostCall] = x
		lowK = 0
		layer1Counts.whole.Add(1)
	} else {
		layer1Counts.visited.Add(1)
	}
	x.grow(len(sm))
	x.stamp++
	if x.stamp == 0 {
		clear(x.mark)
		x.stamp = 1
	}
	// The messages to visit.
	var dirty []int
	visit := func(k int) {
		if k >= 0 && k < len(sm) && x.mark[k] != x.stamp {
			x.mark[k] = x.stamp
			dirty = append(dirty, k)
		}
	}
	visitID := func(id string) {
		if k, ok := c.byID[id]; ok {
			visit(k)
		}
	}
	for k := lowK; k < len(sm); k++ {
		visit(k)
	}
	if !full {
		for _, id := range c.changes[x.logPos-c.logBase:] {
			visitID(id)
		}
		for _, k := range x.pending {
			visit(k)
		}
		for _, k := range x.timed {
			visit(k)
		}
	}
	for id := range st.Restored {
		visitID(id)
	}
	for _, id := range st.PutBack {
		visitID(id)
	}
	var expanded map[string]bool
	for _, id := range st.Expanded {
		if expanded == nil {
			expanded = map[string]bool{}
		}
		expanded[id] = true
		visitID(id)
	}
	for k := x.n; k < len(sm); k++ {
		h := &hot[k]
		if h.cand && h.oldOK && !h.force && h.restored {
			x.timed = append(x.timed, k)
		}
	}
	// The restored values shown in full (showRestored).
	putBack := e.restoredContents(ctx, ref, c, index, st, now, keep)
	prev := make(map[string]bool, len(st.PutBack))
	for _, id := range st.PutBack {
		prev[id] = true
	}
	var putIDs []string
	last := len(sm) - 1
	var pending []int
	lo := len(sm)
	hostSizeOf := func(k int) int {
		n := req.Messages[index[k]].Chars
		if h, ok := st.HostSizes[sm[k].id]; ok && h.Stored == sm[k].chars {
			n = min(n, h.Chars)
		}
		return n
	}
	// set puts message k's shares into x's sums.
	set := func(k int) {
		i := index[k]
		if i < 0 {
			return
		}
		o := req.Messages[i].Chars
		x.orig[k], x.sent[k] = int32(o), true
		x.matchedOrig += o
		x.mcount.add(k, 1)
		n := o
		if x.repl.has[k] {
			n = x.repl.n[k]
			x.replSave += o - n
			x.bval[k] = int32(n)
		} else {
			x.bval[k] = int32(hostSizeOf(k))
		}
		x.bsize.add(k, int(x.bval[k]))
		if x.fresh[k] {
			x.freshSaving += o - int(hot[k].clen)
			x.fval[k] = int32(max(hostSizeOf(k)-sm[k].old.clen, 0))
			x.fsave.add(k, int(x.fval[k]))
		}
		x.tok[k] = int32(charTokens(n))
	}
	eval := func(k int) {
		x.unset(k, hot[k].clen)
		lo = min(lo, k)
		i, h, s := index[k], &hot[k], &sm[k]
		var d uint8
		switch {
		case !h.cand || i < 0:
			d = decNone
		case !h.oldOK:
			d = decNo
		case !h.force && h.restored && now.Sub(s.restoredAt) < keep:
			d = decNo
		case last-k < int(h.window): // a tool result is never a compaction: its position is last-k
			d = decNo
			pending = append(pending, k)
		default:
			d = decOK
		}
		// The sticky collapse (layer1's sticky).
		if c.coll[k] && i >= 0 {
			switch {
			case !h.tr && s.role != collapseRole:
				st.delCollapsed(s.id)
				l.touched = append(l.touched, k)
				l.layers = appendOnce(l.layers, "restore")
			case d == decOK:
				x.repl.put(k, c.contents[k], int(h.clen))
			default:
				var code extract.Code
				if d == decNo {
					code = s.decision(c.pos(k), p, now).code
				}
				if code != extract.CodeAlreadyExtracted {
					st.delCollapsed(s.id)
					l.touched = append(l.touched, k)
					l.layers = appendOnce(l.layers, "restore")
					e.log().Debug("collapsed value shown in full again", "session", ref.String(), "entry", s.id, "code", string(code))
				}
			}
		}
		if expanded[s.id] && i >= 0 && !x.repl.has[k] {
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
		}
		if b, ok := putBack[k]; ok {
			st.delCollapsed(s.id)
			x.repl.put(k, b, utf16Len(b))
			putIDs = append(putIDs, s.id)
			if !prev[s.id] {
				l.touched = append(l.touched, k)
				l.layers = appendOnce(l.layers, "restore")
			}
		}
		// A fresh collapse waits for its batch.
		if d == decOK && !c.coll[k] {
			if _, ok := st.Restored[s.id]; !(ok && !s.force) {
				x.fresh[k] = true
				x.nFresh++
				x.freshList = append(x.freshList, k)
			}
		}
		// The host's sizes (learnHostSizes).
		if i >= 0 && h.tr && !x.repl.has[k] && !c.coll[k] {
			switch n := req.Messages[i].Chars; {
			case n < s.chars:
				if hs, ok := st.HostSizes[s.id]; !ok || hs != (HostSize{Stored: s.chars, Chars: n}) {
					st.setHostSize(s.id, HostSize{Stored: s.chars, Chars: n})
				}
			case req.HostCall == CallModelRequest:
				st.delHostSize(s.id)
			}
		}
		set(k)
	}
	for _, k := range dirty {
		eval(k)
	}
	// Shown with their values put back by the previous view, not by this
	// one.
	for _, id := range st.PutBack {
		k, ok := c.byID[id]
		if !ok || index[k] < 0 || slices.Contains(putIDs, id) {
			continue
		}
		if x.repl.has[k] || (sm[k].hasContent && sm[k].ownPlaceholder) {
			l.touched = append(l.touched, k)
		}
	}
	slices.Sort(putIDs)
	st.PutBack = putIDs
	pathCheck(l, st)
	chars := req.chars() - x.replSave
	if x.nFresh > 0 {
		saving := x.freshSaving
		viewChars, viewSaving := x.batchView(e, l, req, st)
		viewTokens := charTokens(viewChars + req.PromptChars)
		savingTokens := charTokens(viewSaving)
		window := e.window(req)
		if req.batchWindow > 0 {
			window = req.batchWindow
		}
		s := e.settings()
		worth := savingTokens >= p.MinSavingTokens && float64(savingTokens) >= minShareOfView*float64(viewTokens)
		fullView := window > 0 && float64(st.Calibration.Predict(viewTokens)) > s.PruneTriggerPercent/100*float64(window)
		if worth || fullView {
			var applied []int
			for _, k := range x.freshList {
				if !x.fresh[k] {
					continue
				}
				// Collapsed from now on: eval below shows it so (the
				// sticky collapse).
				d := &sm[k].old
				st.setCollapsed(sm[k].id, Collapsed{At: now, Chars: int(x.orig[k]) - d.clen})
				st.delRestored(sm[k].id)
				l.touched = append(l.touched, k)
				applied = append(applied, k)
			}
			x.freshList = x.freshList[:0]
			chars -= saving
			l.layers = appendOnce(l.layers, "collapse")
			for _, k := range applied {
				if x.mark[k] != x.stamp {
					x.mark[k] = x.stamp
					dirty = append(dirty, k)
				}
				eval(k)
			}
		} else {
			e.log().Debug("new collapses wait for a larger batch", "session", ref.String(), "values", x.nFresh,
				"saving_tokens", savingTokens, "view_tokens", viewTokens, "min_saving_tokens", p.MinSavingTokens)
		}
	}
	if len(x.freshList) > 2*x.nFresh+64 {
		x.freshList = slices.DeleteFunc(x.freshList, func(k int) bool { return !x.fresh[k] })
	}
	l.chars = chars
	l.repl = &x.repl
	// The view's messages: those visited, or all of them when another
	// kind of call wrote them last.
	if c.msgsBy != x {
		for k := range l.msgs {
			l.msgs[k].Index, l.msgs[k].Tokens = index[k], int(x.tok[k])
		}
		c.msgsBy = x
	} else {
		for _, k := range dirty {
			l.msgs[k].Index, l.msgs[k].Tokens = index[k], int(x.tok[k])
		}
	}
	sum := 0
	if lo > 0 && lo <= len(sm) {
		sum = x.cum[lo-1]
	}
	for k := lo; k < len(sm); k++ {
		sum += int(x.tok[k])
		x.cum[k] = sum
	}
	l.cum = x.cum[:len(sm)]
	slices.Sort(pending)
	x.pending = slices.Compact(pending)
	x.n, x.gen = len(sm), c.mirrorGen
	x.logPos = c.logBase + len(c.changes)
	c.trimLog()
	return l
}

// batchView is layer1's batchView from x's sums: the size of the view the
// model is sent with the sticky collapses, and what the fresh collapses
// save of it, past the messages the standing summaries cover.
func (x *l1inc) batchView(e *Engine, l *layer1, req *Request, st *State) (chars, saving int) {
	tops, covered := (&planner{e: e, in: &summaryInput{State: st, Msgs: l.msgs, cache: l.c}}).applied(false)
	covered = min(covered, len(l.st))
	chars = x.bsize.total() - x.bsize.prefix(covered)
	chars += req.chars() - x.matchedOrig // not stored (yet), or the summary served
	if x.mcount.prefix(covered) > 0 {
		chars += l.c.quotedLen(st, tops) // the host sent messages the summaries cover
	}
	saving = x.fsave.total() - x.fsave.prefix(covered)
	return chars, saving
}

// pathCheck forgets the host's sizes of entries no longer on the
// session's active path (the end of learnHostSizes).
func pathCheck(l *layer1, st *State) {
	if l.c.pathChecked == st {
		return
	}
	for id := range st.HostSizes {
		if _, onPath := l.c.byID[id]; !onPath && id != "" {
			st.delHostSize(id)
		}
	}
	l.c.pathChecked = st
}

// logChange records that the state entries of id changed (the cache
// mirrors st): the next call of each kind visits its message.
func (c *viewCache) logChange(st *State, id string) {
	if c == nil || c.collFor != st {
		return
	}
	if len(c.changes) >= maxLogSpan {
		c.logBase += len(c.changes)
		c.changes = c.changes[:0]
	}
	c.changes = append(c.changes, id)
}

// trimLog drops the changes every kind of call has read.
func (c *viewCache) trimLog() {
	end := c.logBase + len(c.changes)
	for _, x := range c.inc {
		if x.logPos < end {
			return
		}
	}
	c.logBase = end
	c.changes = c.changes[:0]
}
