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
	// index is, for each stored message, the index of the host message
	// matched to it (-1 for none); with no request, its own position.
	index              []int
	matched, unmatched int
	// repl is the new content of the stored messages the view collapses,
	// by position in st.
	repl map[int][]byte
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
}

// collapsible is what layer 1 decides for one stored message.
type collapsible struct {
	ok      bool
	code    extract.Code
	content []byte // the content as an extraction would leave it
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
	l, err := e.layer1(ctx, tr, req, st)
	if err != nil {
		return nil, err
	}
	return l.msgs, nil
}

// layer1 reads the context messages of tr, updates the calibration from
// the recorded usage they hold, joins req's messages to them and decides
// the collapse (see messages).
func (e *Engine) layer1(ctx context.Context, tr bs.Transcript, req *Request, st *State) (*layer1, error) {
	sm, err := readStored(ctx, tr)
	if err != nil {
		return nil, err
	}
	st.ensureMaps()
	e.measure(sm, st)
	l := &layer1{st: sm, repl: map[int][]byte{}}
	if req != nil {
		l.index, l.matched = match(req.Messages, sm)
		l.unmatched = len(req.Messages) - l.matched
	} else {
		l.index = make([]int, len(sm))
		for k := range l.index {
			l.index[k] = k
		}
		l.matched = len(sm)
	}
	if req != nil && l.matched == 0 {
		return l, nil // a passthrough: nothing else is decided
	}
	now := e.now()
	p := e.policy()
	adoptSourceRestores(sm, st)
	for id, at := range st.Restored {
		if now.Sub(at) >= p.KeepAfterRestore {
			delete(st.Restored, id) // its protection is over
		}
	}
	orig := func(k int) int {
		if req != nil {
			return req.Messages[l.index[k]].Chars
		}
		return sm[k].chars
	}
	dec := make(map[int]collapsible)
	for k := range sm {
		if l.index[k] < 0 || sm[k].typ != "message" || sm[k].role != collapseRole || !sm[k].hasContent {
			continue
		}
		c := decideCollapse(&sm[k], p, now)
		if c.ok {
			c.saving = orig(k) - utf16Len(c.content)
		}
		dec[k] = c
	}
	// Sticky collapses first: they are part of the cached prefix.
	byID := make(map[string]int, len(sm))
	for k := range sm {
		if sm[k].id != "" {
			byID[sm[k].id] = k
		}
	}
	for id := range st.Collapsed {
		k, ok := byID[id]
		if !ok || l.index[k] < 0 {
			continue // not in this view (summarized, off the path, not sent)
		}
		c := dec[k]
		switch {
		case sm[k].role != collapseRole:
			// Collapsed by an earlier version that collapsed other
			// roles too: shown as the host sends it from now on.
			delete(st.Collapsed, id)
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
		case c.ok:
			l.repl[k] = c.content
		case c.code == extract.CodeAlreadyExtracted:
			// Extracted in the transcript meanwhile: the host sends the
			// same placeholder the view showed.
		default:
			delete(st.Collapsed, id)
			l.touched = append(l.touched, k)
			l.layers = appendOnce(l.layers, "restore")
			e.log().Debug("collapsed value shown in full again", "session", tr.Ref().String(), "entry", id, "code", string(c.code))
		}
	}
	for _, id := range st.Expanded {
		if k, ok := byID[id]; ok && l.index[k] >= 0 {
			if _, still := l.repl[k]; !still {
				l.touched = append(l.touched, k)
				l.layers = appendOnce(l.layers, "restore")
			}
		}
	}
	e.showRestored(ctx, tr.Ref(), sm, l, st, req != nil, now, p.KeepAfterRestore)
	// The view's size with the sticky collapses.
	chars := 0
	if req != nil {
		for i := range req.Messages {
			chars += req.Messages[i].Chars
		}
	} else {
		for k := range sm {
			chars += sm[k].chars
		}
	}
	for k, c := range l.repl {
		chars -= orig(k) - utf16Len(c)
	}
	// New collapses wait until they are worth a change of the prefix.
	var fresh []int
	saving := 0
	for k, c := range dec {
		if !c.ok {
			continue
		}
		if _, sticky := st.Collapsed[sm[k].id]; sticky {
			continue
		}
		if at, ok := st.Restored[sm[k].id]; ok && now.Sub(at) < p.KeepAfterRestore && !extract.ParseExtractable(sm[k].e.Extractable).Force {
			continue
		}
		fresh = append(fresh, k)
		saving += c.saving
	}
	slices.Sort(fresh)
	if req != nil {
		learnHostSizes(l, req, st)
	}
	if len(fresh) > 0 {
		prompt, viewChars, viewSaving := 0, chars, saving
		if req != nil {
			prompt = req.PromptChars
			viewChars, viewSaving = e.batchView(l, req, st, fresh, dec)
		}
		viewTokens := charTokens(viewChars + prompt)
		savingTokens := charTokens(viewSaving)
		window := e.window(req)
		if req != nil && req.batchWindow > 0 {
			window = req.batchWindow
		}
		s := e.settings()
		worth := savingTokens >= p.MinSavingTokens && float64(savingTokens) >= minShareOfView*float64(viewTokens)
		full := window > 0 && float64(predict(viewTokens, st.Calibration)) > s.PruneTriggerPercent/100*float64(window)
		if req != nil && (worth || full) {
			for _, k := range fresh {
				c := dec[k]
				l.repl[k] = c.content
				st.Collapsed[sm[k].id] = Collapsed{At: now, Chars: c.saving}
				delete(st.Restored, sm[k].id)
				l.touched = append(l.touched, k)
			}
			chars -= saving
			l.layers = appendOnce(l.layers, "collapse")
		} else {
			e.log().Debug("new collapses wait for a larger batch", "session", tr.Ref().String(), "values", len(fresh),
				"saving_tokens", savingTokens, "view_tokens", viewTokens, "min_saving_tokens", p.MinSavingTokens)
		}
	}
	l.chars = chars
	l.msgs = make([]viewMsg, len(sm))
	for k := range sm {
		s := &sm[k]
		m := viewMsg{Index: l.index[k], Line: s.line, ID: s.id, Role: s.role, Timestamp: s.ts, CallID: s.callID, Calls: s.calls, Pinned: s.pinned}
		if m.Index >= 0 {
			n := orig(k)
			if c, ok := l.repl[k]; ok {
				n = utf16Len(c)
			}
			m.Tokens = charTokens(n)
		}
		l.msgs[k] = m
	}
	return l, nil
}

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
func (e *Engine) batchView(l *layer1, req *Request, st *State, fresh []int, dec map[int]collapsible) (chars, saving int) {
	sm := l.st
	ids := make([]viewMsg, len(sm))
	for k := range sm {
		ids[k].ID = sm[k].id
	}
	tops, covered := (&planner{e: e, in: &summaryInput{State: st, Msgs: ids}}).applied(false)
	sent := make([]bool, len(req.Messages))
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
		if c, ok := l.repl[k]; ok {
			n = utf16Len(c)
		}
		chars += n
	}
	for i := range req.Messages {
		if !sent[i] {
			chars += req.Messages[i].Chars // not stored (yet), or the summary served
		}
	}
	if spanSent {
		chars += jsQuotedLen(render(st, tops).Text)
	}
	for _, k := range fresh {
		if k >= covered {
			saving += max(hostSize(l, req, st, k)-utf16Len(dec[k].content), 0)
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
	onPath := make(map[string]bool, len(l.st))
	for k := range l.st {
		s := &l.st[k]
		onPath[s.id] = true
		i := l.index[k]
		if i < 0 || s.id == "" || s.role != collapseRole {
			continue
		}
		if _, ours := st.Collapsed[s.id]; ours {
			continue
		}
		if _, ours := l.repl[k]; ours {
			continue
		}
		n := req.Messages[i].Chars
		switch {
		case n < s.chars:
			if st.HostSizes == nil {
				st.HostSizes = map[string]HostSize{}
			}
			st.HostSizes[s.id] = HostSize{Stored: s.chars, Chars: n}
		case req.HostCall == CallModelRequest:
			delete(st.HostSizes, s.id)
		}
	}
	for id := range st.HostSizes {
		if !onPath[id] {
			delete(st.HostSizes, id)
		}
	}
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
	full := e.restoredContents(ctx, ref, sm, l.index, st, now, keep)
	prev := make(map[string]bool, len(st.PutBack))
	for _, id := range st.PutBack {
		prev[id] = true
	}
	var ids []string
	for k, c := range full {
		id := sm[k].id
		ids = append(ids, id)
		delete(st.Collapsed, id)
		l.repl[k] = c
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
		if !prev[sm[k].id] || l.index[k] < 0 {
			continue
		}
		if _, collapsed := l.repl[k]; collapsed || (sm[k].hasContent && extract.HoldsOwnPlaceholder(sm[k].e.Raw[sm[k].cStart:sm[k].cEnd], sm[k].e)) {
			l.touched = append(l.touched, k)
		}
	}
	if served {
		slices.Sort(ids)
		st.PutBack = ids
	}
}

// decideCollapse decides whether the view collapses the values of the
// stored message s (a tool result: see collapseRole), by the extraction policy p at now (extract.Decide at
// the message's position), restricted to the values under the message's
// content. The content is computed exactly as extraction writes it: the
// extraction's splices applied to the raw line, then the bytes of
// "/message/content" of the edited line.
func decideCollapse(s *stored, p extract.Policy, now time.Time) collapsible {
	d := extract.Decide(s.e, s.pos, p, now)
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
	return collapsible{ok: true, code: d.Code, content: bytes.Clone(edited[a:b])}
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
