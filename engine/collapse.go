package engine

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// contentPrefix is where the values the view may collapse live: the host
// sends the model a message's content only.
const contentPrefix = "/message/content/"

// collapseRole is the role of the only messages whose values the view
// collapses: tool results (their text and image blocks). An assistant's
// content is left as the host sends it, because the host rewrites it
// before the model sees it (thinking blocks, their signatures, tool-call
// arguments) and a placeholder put back in their place would reach the
// provider as a thinking signature; a user's is the user's own words.
const collapseRole = "toolResult"

// minShareOfView is the share of the view's tokens a batch of new
// collapses must save (with Policy.MinSavingTokens) to be applied before
// the view nears the window: a change of the cached prefix is worth it
// only when it saves much.
const minShareOfView = 0.10

// layer1 is the join and the collapse of one view.
type layer1 struct {
	st []stored
	// c is the session's cache the view is made of.
	c *viewCache
	// index is, for each stored message, the index of the host message
	// matched to it (-1 for none); with no request, its own position. It
	// is the join's: not to be written.
	index              []int
	matched, unmatched int
	// repl is the new content of the stored messages the view collapses,
	// by position in st.
	repl *replSet
	// msgs are the view's messages (viewMsg), one per stored message.
	msgs []viewMsg
	// layers names what changed this view ("collapse", "restore").
	layers []string
	// touched are the stored messages whose content in the view changed
	// this turn (collapsed, or shown in full again).
	touched []int
	// chars is the size of the messages the view sends (every host
	// message, after collapse), in UTF-16 code units.
	chars int
	// putBack are the stored messages shown with their values put back
	// (showRestored).
	putBack []int
	// cum are the sums of msgs' Tokens by position.
	cum []int
}

// collapsible is what layer 1 decides for one stored message.
type collapsible struct {
	ok      bool
	code    extract.Code
	content []byte // the content as an extraction would leave it
	clen    int    // its length (utf16Len)
	saving  int    // chars the collapse saves
}

// messages joins req's messages to the context messages of tr and decides
// layer 1 (the collapse): sticky collapses are applied, and new ones are
// applied as one batch when it is worth it (Policy.MinSavingTokens and a
// tenth of the view, or the view above Settings.PruneTriggerPercent of
// the window), recorded in st. It returns one viewMsg per context message
// of the active path (the latest compaction's summary first, with role
// "compactionSummary", when there is one), with its size after the
// collapse. With req nil every context message counts as sent
// (viewMsg.Index is its own position) and the view is the one that
// stands: the sticky collapses apply, no new one is made.
func (e *Engine) messages(ctx context.Context, tr bs.Transcript, req *Request, st *State) ([]viewMsg, error) {
	c, err := newCache(ctx, e.Store, tr, e.policy(), false)
	if err != nil {
		return nil, err
	}
	j := &join{}
	if req != nil {
		j.joinAll(req.Messages, c.sm)
	}
	c.line = lineReader(ctx, e.Store, tr.Ref(), tr)
	l := e.layer1(ctx, tr.Ref(), c, j, req, st)
	return l.msgs, nil
}

// layer1 updates the calibration from the recorded usage the context
// messages of c hold, takes the join j of req's messages to them (with
// req nil, every message counts as sent) and decides the collapse (see
// messages). The view's slices are c's scratch: valid until the next
// call on c.
func (e *Engine) layer1(ctx context.Context, ref bs.SessionRef, c *viewCache, j *join, req *Request, st *State) *layer1 {
	sm := c.sm
	st.ensureMaps()
	e.measure(c, st)
	c.repl.reset(len(sm))
	l := &layer1{st: sm, c: c, repl: &c.repl, touched: c.touched[:0]}
	defer func() { c.touched = l.touched[:0] }()
	c.msgsBy = nil // the messages are written here, not by layer1Inc
	if req != nil {
		l.index, l.matched = j.index, j.matched
		l.unmatched = len(req.Messages) - l.matched
	} else {
		l.index = make([]int, len(sm))
		for k := range l.index {
			l.index[k] = k
		}
		l.matched = len(sm)
	}
	l.msgs = c.msgs
	if req != nil && l.matched == 0 {
		for k := range l.msgs {
			l.msgs[k].Index, l.msgs[k].Tokens = -1, 0
		}
		return l // a passthrough: nothing else is decided
	}
	now := e.now()
	p := e.policy()
	adoptSourceRestores(sm, st)
	for id, at := range st.Restored {
		if now.Sub(at) >= p.KeepAfterRestore {
			st.delRestored(id) // its protection is over
		}
	}
	orig := func(k int) int {
		if req != nil {
			return req.Messages[l.index[k]].Chars
		}
		return sm[k].chars
	}
	// The decision of each tool result sent (see stored.decision), from
	// the cache's compact copy of what it needs.
	for len(c.dec) < len(sm) {
		c.dec = append(c.dec, decNone)
	}
	dec, hot, index := c.dec[:len(sm)], c.hot[:len(sm)], l.index[:len(sm)]
	last := len(sm) - 1
	for k := range dec {
		h := &hot[k]
		switch {
		case !h.cand || index[k] < 0:
			dec[k] = decNone
		case !h.oldOK:
			dec[k] = decNo
		case !h.force && h.restored && now.Sub(sm[k].restoredAt) < p.KeepAfterRestore:
			dec[k] = decNo
		case last-k < int(h.window): // a tool result is never a compaction: its position is last-k
			dec[k] = decNo
		default:
			dec[k] = decOK
		}
	}
	// Sticky collapses first: they are part of the cached prefix. The
	// entries of Collapsed on the path are those the cache's mirror marks
	// (and those whose id another message has too).
	byID := c.byID
	c.mirrorOf(st)
	sticky := func(id string, k int) {
		if index[k] < 0 {
			return // not in this view (summarized, not sent)
		}
		switch {
		case !hot[k].tr && sm[k].role != collapseRole:
			// Collapsed by an earlier version that collapsed other
			// roles too: shown as the host sends it from now on.
			st.delCollapsed(id)
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
		case dec[k] == decOK:
			l.repl.set(k, c.contents[k], int(hot[k].clen))
		default:
			var code extract.Code
			if dec[k] == decNo {
				code = sm[k].decision(c.pos(k), p, now).code
			}
			if code == extract.CodeAlreadyExtracted {
				// Extracted in the transcript meanwhile: the host sends
				// the same placeholder the view showed.
				return
			}
			st.delCollapsed(id)
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
			e.log().Debug("collapsed value shown in full again", "session", ref.String(), "entry", id, "code", string(code))
		}
	}
	coll, dups := c.coll, false
	for k := range coll {
		if hot[k].dup {
			dups = true
			continue
		}
		if coll[k] {
			sticky(sm[k].id, k)
		}
	}
	if dups {
		for k := range sm {
			if !hot[k].dup {
				continue
			}
			if _, in := st.Collapsed[sm[k].id]; in && byID[sm[k].id] == k {
				sticky(sm[k].id, k)
			}
		}
	}
	for _, id := range st.Expanded {
		if k, ok := byID[id]; ok && index[k] >= 0 {
			if _, still := l.repl.get(k); !still {
				l.touched = append(l.touched, k)
				l.layers = appendOnce(l.layers, "restore")
			}
		}
	}
	e.showRestored(ctx, ref, sm, l, st, req != nil, now, p.KeepAfterRestore)
	// The view's size with the sticky collapses.
	chars := 0
	if req != nil {
		chars = req.chars()
	} else {
		for k := range sm {
			chars += sm[k].chars
		}
	}
	for _, k := range l.repl.keys {
		chars -= orig(k) - l.repl.n[k]
	}
	// New collapses wait until they are worth a change of the prefix.
	fresh := c.fresh[:0]
	saving := 0
	for k := range dec {
		if dec[k] != decOK {
			continue
		}
		// A message the sticky collapses replaced is in Collapsed (a
		// message whose id another one on the path has too, and one shown
		// with its values put back, are looked up).
		if c.collapsed(st, k) {
			continue
		}
		if at, ok := st.Restored[sm[k].id]; ok && now.Sub(at) < p.KeepAfterRestore && !sm[k].force {
			continue
		}
		fresh = append(fresh, k)
		saving += orig(k) - int(hot[k].clen)
	}
	c.fresh = fresh[:0]
	if req != nil {
		learnHostSizes(l, req, st)
	}
	if len(fresh) > 0 {
		prompt, viewChars, viewSaving := 0, chars, saving
		if req != nil {
			prompt = req.PromptChars
			viewChars, viewSaving = e.batchView(l, req, st, fresh)
		}
		viewTokens := charTokens(viewChars + prompt)
		savingTokens := charTokens(viewSaving)
		window := e.window(req)
		if req != nil && req.batchWindow > 0 {
			window = req.batchWindow
		}
		s := e.settings()
		worth := savingTokens >= p.MinSavingTokens && float64(savingTokens) >= minShareOfView*float64(viewTokens)
		full := window > 0 && float64(st.Calibration.Predict(viewTokens)) > s.PruneTriggerPercent/100*float64(window)
		if req != nil && (worth || full) {
			for _, k := range fresh {
				d := &sm[k].old
				l.repl.set(k, d.content, d.clen)
				st.setCollapsed(sm[k].id, Collapsed{At: now, Chars: orig(k) - d.clen})
				st.delRestored(sm[k].id)
				l.touched = append(l.touched, k)
			}
			chars -= saving
			l.layers = appendOnce(l.layers, "collapse")
		} else {
			e.log().Debug("new collapses wait for a larger batch", "session", ref.String(), "values", len(fresh),
				"saving_tokens", savingTokens, "view_tokens", viewTokens, "min_saving_tokens", p.MinSavingTokens)
		}
	}
	l.chars = chars
	has := l.repl.has
	cum, sum := c.cum[:0], 0
	for k := range l.msgs {
		m := &l.msgs[k]
		m.Index, m.Tokens = index[k], 0
		if m.Index >= 0 {
			n := 0
			if has[k] {
				n = l.repl.n[k]
			} else {
				n = orig(k)
			}
			m.Tokens = charTokens(n)
		}
		sum += m.Tokens
		cum = append(cum, sum)
	}
	c.cum, l.cum = cum, cum
	return l
}

// The decisions of layer 1 for one stored message in a call: not a tool
// result sent, one that stays in full, one that collapses.
const (
	decNone uint8 = iota
	decNo
	decOK
)

// batchView returns what the batch rule measures on a request: the size
// of the view the model is sent with the sticky collapses, and what the
// fresh collapses save of it, in the units of Message.Chars. Both calls of
// the host measure the same view:
//
//   - the messages the engine's standing summaries cover do not count, the
//     summary message does: the turn-start call carries those messages (the
//     view the engine serves replaces them), the model-request call the
//     summary message the engine served instead;
//   - a tool result counts at the size the host sends it (State.HostSizes):
//     the model-request call carries the host's pruned tool results, the
//     turn-start call their stored size.
//
// A value collapsed under the summary saves the model nothing.
func (e *Engine) batchView(l *layer1, req *Request, st *State, fresh []int) (chars, saving int) {
	sm := l.st
	tops, covered := (&planner{e: e, in: &summaryInput{State: st, Msgs: l.msgs, cache: l.c}}).applied(false)
	sent := l.c.sent[:0]
	for range req.Messages {
		sent = append(sent, false)
	}
	l.c.sent = sent[:0]
	spanSent := false // the host sent messages the summaries cover
	for k := range sm {
		i := l.index[k]
		if i < 0 {
			continue
		}
		sent[i] = true
		if k < covered {
			spanSent = true
			continue
		}
		n := hostSize(l, req, st, k)
		if _, ok := l.repl.get(k); ok {
			n = l.repl.n[k]
		}
		chars += n
	}
	for i := range req.Messages {
		if !sent[i] {
			chars += req.Messages[i].Chars // not stored (yet), or the summary served
		}
	}
	if spanSent {
		chars += l.c.quotedLen(st, tops)
	}
	for _, k := range fresh {
		if k >= covered {
			saving += max(hostSize(l, req, st, k)-l.st[k].old.clen, 0)
		}
	}
	return chars, saving
}

// hostSize is the size of stored message k as the host sends it to the
// model: its size in req, or the smaller size the host sent it at before
// (State.HostSizes) while its stored content is the same.
func hostSize(l *layer1, req *Request, st *State, k int) int {
	n := req.Messages[l.index[k]].Chars
	if h, ok := st.HostSizes[l.st[k].id]; ok && h.Stored == l.st[k].chars {
		n = min(n, h.Chars)
	}
	return n
}

// learnHostSizes records in st.HostSizes the tool results req carries
// smaller than the session stores them, and on a model-request call
// forgets those it carries in full again; the view's own collapses are
// not the host's doing and are left out. It also forgets the entries no
// longer on the session's active path.
func learnHostSizes(l *layer1, req *Request, st *State) {
	hot := l.c.hot
	for k, i := range l.index[:len(l.st)] {
		if i < 0 || !hot[k].tr {
			continue
		}
		if _, ours := l.repl.get(k); ours {
			continue
		}
		if l.c.collapsed(st, k) {
			continue
		}
		s := &l.st[k]
		n := req.Messages[i].Chars
		switch {
		case n < s.chars:
			st.setHostSize(s.id, HostSize{Stored: s.chars, Chars: n})
		case req.HostCall == CallModelRequest:
			st.delHostSize(s.id)
		}
	}
	// The messages of a cache only grow: an entry found on its path once
	// stays there, and the entries added since were on it.
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

// jsQuotedLen is the length, in UTF-16 code units, of JavaScript's
// JSON.stringify(s): the plugin's size of a summary message.
func jsQuotedLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
			n += 2
		case r < 0x20:
			n += 6
		case r >= 0x10000:
			n += 2
		default:
			n++
		}
	}
	return n
}

// showRestored shows in full the tool results the agent restored within
// the protection window while the host's row still holds their
// placeholders (restoredContents): their content with the values put
// back replaces the row's in the view, a collapse of theirs included. A
// message the view starts or stops showing so is touched; served is true
// for a view that is sent (its list is kept in State.PutBack for the next
// one).
func (e *Engine) showRestored(ctx context.Context, ref bs.SessionRef, sm []stored, l *layer1, st *State, served bool, now time.Time, keep time.Duration) {
	full := e.restoredContents(ctx, ref, l.c, l.index, st, now, keep)
	prev := make(map[string]bool, len(st.PutBack))
	for _, id := range st.PutBack {
		prev[id] = true
	}
	var ids []string
	for k, c := range full {
		id := sm[k].id
		ids = append(ids, id)
		st.delCollapsed(id)
		l.repl.set(k, c, utf16Len(c))
		l.putBack = append(l.putBack, k)
		if !prev[id] {
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
		}
		delete(prev, id)
	}
	// Shown so by the previous view, not by this one: the placeholder is
	// back (the window is over), or the row now holds the value (the
	// write-back was applied), which is what the view showed.
	for k := range sm {
		if len(prev) == 0 {
			break
		}
		if !prev[sm[k].id] || l.index[k] < 0 {
			continue
		}
		if _, collapsed := l.repl.get(k); collapsed || (sm[k].hasContent && sm[k].ownPlaceholder) {
			l.touched = append(l.touched, k)
		}
	}
	if served {
		slices.Sort(ids)
		st.PutBack = ids
	}
}

// decision is the collapse decided for the stored message s at position
// pos from the end of the active path: its decision past its keep_recent
// window (stored.old), unless it is within that window or the restore
// protection of its own "_restored" time, as extract.Decide orders the
// rules (only CodeAlreadyExtracted, which comes first, is read back).
func (s *stored) decision(pos int, p extract.Policy, now time.Time) collapsible {
	if !s.old.ok {
		return s.old
	}
	if !s.force && !s.restoredAt.IsZero() && now.Sub(s.restoredAt) < p.KeepAfterRestore {
		return collapsible{code: extract.CodeRestoreProtected}
	}
	if pos >= 0 && pos < s.window {
		return collapsible{code: extract.CodeTooRecent}
	}
	return s.old
}

// decideCollapse decides whether the view collapses the values of the
// stored message s (a tool result: see collapseRole), by the extraction policy p at now (extract.Decide at
// the message's position), restricted to the values under the message's
// content. The content is computed exactly as extraction writes it: the
// extraction's splices applied to the raw line, then the bytes of
// "/message/content" of the edited line.
func decideCollapse(s *stored, pos int, p extract.Policy, now time.Time) collapsible {
	d := extract.Decide(s.e, pos, p, now)
	if !d.Extract {
		return collapsible{code: d.Code}
	}
	raw := s.e.Raw
	var splices []bs.Splice
	for _, c := range d.Candidates {
		if !strings.HasPrefix(c.Pointer, contentPrefix) {
			continue
		}
		splices = append(splices, bs.Splice{Start: c.Start, End: c.End, With: extract.Replacement(raw, c, s.e.ID, p.PreviewChars)})
	}
	if len(splices) == 0 {
		return collapsible{code: extract.CodeNothing}
	}
	edited := jsonedit.Apply(raw, splices...)
	a, b, ok := jsonedit.Find(edited, "/message/content")
	if !ok || b <= a || edited[a] != '[' {
		return collapsible{code: extract.CodeNothing}
	}
	content := bytes.Clone(edited[a:b])
	return collapsible{ok: true, code: d.Code, content: content, clen: utf16Len(content)}
}

// charTokens is the base token count of n characters (chars/4, rounded
// up).
func charTokens(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 3) / 4
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
