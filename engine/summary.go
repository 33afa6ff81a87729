package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/summarize"
)

// The layers a summary record names.
const (
	layerSummarize = "summarize"
	layerFull      = "full"
	layerManual    = "manual"
	layerCondense  = "condense"
)

// Defaults of the summary layers.
const (
	// defaultSummaryWait is how long Assemble waits for a summary it
	// started (Engine.SummaryWait when 0).
	defaultSummaryWait = 2 * time.Second
	// defaultFanout is how many summaries of one level condense
	// (Engine.CondenseFanout when 0).
	defaultFanout = 4
	// jobTimeout bounds a background summary: the job outlives the
	// request that started it, never the engine's patience.
	jobTimeout = 5 * time.Minute
	// keepShare is the share of the window the summarize layer keeps at
	// most, whatever Settings.SummarizeKeepRecent says.
	keepShare = 0.30
	// headerTokens is a summary header's size, in base tokens.
	headerTokens = 30
)

// pinnedHeading starts the section of a summary that carries pinned
// entries verbatim; a condensed summary carries its children's sections
// forward.
const pinnedHeading = "\n\n## Pinned\n\nThese entries are marked `_extractable: false`: they are kept verbatim, never summarized.\n"

// job is the work of a summaryJob: one summary of messages (rec.Entries)
// or one condensation (rec.Children), written by the summarizer.
type job struct {
	// rec is the record being written, without its id, text and how it
	// was written.
	rec SummaryRecord
	// input is the summarizer's input; pinned the pinned section the text
	// ends with. A deterministic summary of messages may have lines
	// instead of input: the same lines, read again from the store as the
	// summary is written, so that they are never all held at once.
	input  [][]byte
	lines  iter.Seq2[[]byte, error]
	pinned string
	cancel context.CancelFunc
	// out is the written summary, valid once the job's done is closed.
	out compact.Summary
	// abandoned is true when the view stopped waiting for it: its result
	// is dropped. Only the session's lock holder reads or writes it.
	abandoned bool
	// stopped is true once Close cancelled the job: its result is
	// dropped. Close sets it without the session's lock.
	stopped atomic.Bool
}

// background is what an engine keeps of its own between calls: the
// summary jobs it started that still run (Close cancels and waits for
// them), and the stale summaries it logged (each is logged once).
type background struct {
	mu      sync.Mutex
	jobs    map[*summaryJob]struct{}
	dropped map[string]struct{}
}

// maxDropped bounds the stale summaries remembered as logged; past it the
// memory starts over (a summary may then be logged once more).
const maxDropped = 4096

// add records a job that started.
func (b *background) add(sj *summaryJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jobs == nil {
		b.jobs = map[*summaryJob]struct{}{}
	}
	b.jobs[sj] = struct{}{}
}

// remove forgets a job that ended.
func (b *background) remove(sj *summaryJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.jobs, sj)
}

// running returns the jobs started and not yet ended.
func (b *background) running() []*summaryJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*summaryJob, 0, len(b.jobs))
	for sj := range b.jobs {
		out = append(out, sj)
	}
	return out
}

// firstDrop reports whether summary id of session key is dropped from
// the view for the first time since it was last applied, and remembers
// it.
func (b *background) firstDrop(key, id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := key + " " + id
	if _, ok := b.dropped[k]; ok {
		return false
	}
	if b.dropped == nil || len(b.dropped) >= maxDropped {
		b.dropped = map[string]struct{}{}
	}
	b.dropped[k] = struct{}{}
	return true
}

// applies forgets that summary id of session key was dropped: it is in
// the view again, and a later drop is logged again.
func (b *background) applies(key, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.dropped, key+" "+id)
}

// planSummaries decides the summary part of a view: the summaries at the
// top of in.State's summary tree that still apply, a new summary of the
// oldest messages when the thresholds ask for one, and a condensation when
// CondenseFanout summaries of one level are at the top. It may add records
// to in.State (and count them in Compactions); the caller saves it.
//
// in.Tokens counts every message of in.Msgs as the view sends it after
// collapse (no summary applied), the prompt and the overhead included, in
// calibrated tokens.
//
// The caller holds the session's lock (e.session(in.Ref).mu). A summary is
// written by a background job, one at a time per session; the plan waits
// up to in.Wait (Engine.SummaryWait when 0, no wait when negative) for a
// job it started itself, and otherwise serves the view without it: a later
// call picks it up. A job an earlier call started is taken when it is
// done, never waited for (the host assembles before every model request of
// a turn). Above the full threshold or above the window the plan waits for
// any job up to ctx's deadline and then uses the deterministic summary at
// once, marked degraded.
//
// With Engine.ReadOnly the plan makes no summary and takes none a job
// wrote: the state is not saved, and a summary shown to the model must be
// one that recall_describe and recall_expand find. The summaries of the
// saved state are still served.
func (e *Engine) planSummaries(ctx context.Context, in summaryInput) (summaryPlan, error) {
	var plan summaryPlan
	if in.State == nil {
		return plan, fmt.Errorf("plan summaries of %s: no state: %w", in.Ref, bs.ErrInvalid)
	}
	ss := e.session(in.Ref)
	wait := in.Wait
	if wait == 0 {
		wait = e.summaryWait()
	}
	start := time.Now()
	budget := func() time.Duration { return max(wait-time.Since(start), 0) }
	p := &planner{e: e, in: &in, ss: ss}
	mine := false // ss.job was started by this call
	for range 4 {
		if e.ReadOnly {
			break
		}
		p.harvest(&plan)
		tops, pos := p.applied(false)
		urgent := p.urgent(tops, pos)
		if ss.job == nil {
			started, err := p.start(ctx, tops, pos)
			if err != nil {
				return plan, err
			}
			if !started {
				break
			}
			mine = true
		} else if !mine && !urgent {
			break // an earlier call's job: taken when it is done
		}
		if p.wait(ctx, ss.job, urgent, budget()) {
			continue // harvested on the next round
		}
		if urgent {
			// Above the full threshold the view cannot wait for the
			// model: the deterministic summary replaces the job at once.
			if err := p.fallback(ctx, &plan); err != nil {
				return plan, err
			}
		}
		break
	}
	if !e.ReadOnly {
		p.harvest(&plan)
	}
	p.applied(true) // logs the summaries the view drops
	tops, pos := p.applied(false)
	plan.Summary = in.cache.render(in.State, tops)
	if plan.Summary != nil {
		plan.FirstKept = pos
	}
	return plan, nil
}

// planner is one planSummaries call.
type planner struct {
	e  *Engine
	in *summaryInput
	ss *sessionState
}

// summaryWait returns Engine.SummaryWait or its default.
func (e *Engine) summaryWait() time.Duration {
	if e.SummaryWait > 0 {
		return e.SummaryWait
	}
	return defaultSummaryWait
}

// fanout returns Engine.CondenseFanout or its default (at least 2).
func (e *Engine) fanout() int {
	if e.CondenseFanout >= 2 {
		return e.CondenseFanout
	}
	return defaultFanout
}

// applied returns the summaries at the top of the tree that apply to the
// view: the top-level summaries, oldest first, from the first whose
// messages start in.Msgs, as long as each one's messages follow the
// previous one's; and the number of messages of in.Msgs they cover. A
// top-level summary left out (the host compacted, or the session moved to
// another branch) is dropped from the view, and logged when logIt is true,
// once per session and summary until it applies again; it stays in the
// state, where Describe and Expand find it.
func (p *planner) applied(logIt bool) ([]*SummaryRecord, int) {
	st, msgs := p.in.State, p.in.Msgs
	// The tops in the order of the messages they cover (a condensation is
	// made after summaries of newer messages); those whose first message
	// the view does not hold come first, and are dropped.
	c := p.in.cache
	var at map[string]int
	if c != nil {
		at = c.byID
	} else {
		at = make(map[string]int, len(msgs))
		for i := range msgs {
			at[msgs[i].ID] = i
		}
	}
	var byID map[string]*SummaryRecord
	type top struct {
		r    *SummaryRecord
		ids  []string
		from int
	}
	var tops []top
	for i := range st.Summaries {
		if st.Summaries[i].Parent != "" {
			continue
		}
		r := &st.Summaries[i]
		var ids []string
		cached := false
		if c != nil {
			ids, cached = c.leaves[r.ID]
		}
		if !cached {
			if byID == nil {
				byID = index(st)
			}
			ids = leaves(byID, r)
			if c != nil {
				if c.leaves == nil || len(c.leaves) > 4*len(st.Summaries)+16 {
					c.leaves = map[string][]string{}
				}
				c.leaves[r.ID] = ids
			}
		}
		t := top{r: r, ids: ids, from: -1}
		if len(t.ids) > 0 {
			if k, ok := at[t.ids[0]]; ok {
				t.from = k
			}
		}
		tops = append(tops, t)
	}
	slices.SortStableFunc(tops, func(a, b top) int { return a.from - b.from })
	var out []*SummaryRecord
	pos := 0
	for _, tp := range tops {
		t, ids := tp.r, tp.ids
		ok := len(ids) > 0 && pos+len(ids) <= len(msgs)
		// The messages of a cache only grow: a summary found at pos once
		// is there for good.
		if at, seen := c.verifiedAt(t.ID); !ok || !seen || at != pos {
			for k := 0; ok && k < len(ids); k++ {
				ok = msgs[pos+k].ID == ids[k]
			}
			if ok {
				c.verified(t.ID, pos)
			}
		}
		if ok {
			out = append(out, t)
			pos += len(ids)
			if logIt {
				p.e.bg.applies(p.in.Ref.Identity(), t.ID)
			}
			continue
		}
		if logIt && p.e.bg.firstDrop(p.in.Ref.Identity(), t.ID) {
			why := "its messages are no longer the first of the session's context"
			if len(out) > 0 {
				why = "its messages no longer follow those of " + out[len(out)-1].ID
			}
			p.e.log().Info("engine: summary dropped from the view", "session", p.in.Ref.String(), "summary", t.ID, "level", t.Level, "why", why)
		}
		if len(out) > 0 {
			// A gap: what follows no longer continues the view.
			break
		}
	}
	return out, pos
}

// index maps the ids of st's summaries to their records.
func index(st *State) map[string]*SummaryRecord {
	m := make(map[string]*SummaryRecord, len(st.Summaries))
	for i := range st.Summaries {
		m[st.Summaries[i].ID] = &st.Summaries[i]
	}
	return m
}

// leaves returns the ids of the messages r covers, in order: its entries,
// or its children's, recursively.
func leaves(byID map[string]*SummaryRecord, r *SummaryRecord) []string {
	var out []string
	var walk func(r *SummaryRecord, depth int)
	walk = func(r *SummaryRecord, depth int) {
		if depth > 64 {
			return
		}
		out = append(out, r.Entries...)
		for _, c := range r.Children {
			if cr := byID[c]; cr != nil {
				walk(cr, depth+1)
			}
		}
	}
	walk(r, 0)
	return out
}

// scale returns the calibration ratio of the state (1 before any fit).
func scale(st *State) float64 {
	if st.Calibration.Ratio > 0 {
		return st.Calibration.Ratio
	}
	return 1
}

// viewTokens returns the view's calibrated size with tops applied: the
// prompt and overhead share of in.Tokens, plus the summaries and the
// messages from pos on.
func (p *planner) viewTokens(tops []*SummaryRecord, pos int) int {
	r := scale(p.in.State)
	all := p.tokens(0, len(p.in.Msgs))
	tail := p.tokens(pos, len(p.in.Msgs))
	extra := max(p.in.Tokens-int(r*float64(all)), 0)
	return extra + int(r*float64(tail+summaryTokens(tops)))
}

// summaryTokens returns the base tokens of the summary message of tops.
func summaryTokens(tops []*SummaryRecord) int {
	n := 0
	for _, t := range tops {
		n += t.Tokens + headerTokens
	}
	return n
}

// thresholds returns the summarize and full thresholds in tokens.
func (p *planner) thresholds() (sum, full int) {
	s, w := p.e.Settings, float64(p.in.Window)
	sumPct, fullPct := s.SummarizeTriggerPercent, s.FullTriggerPercent
	if sumPct <= 0 {
		sumPct = 88
	}
	if fullPct <= 0 {
		fullPct = 95
	}
	return int(w * sumPct / 100), int(w * fullPct / 100)
}

// urgent reports whether the view is above the full threshold or the
// window with tops applied: then it cannot wait for the model.
func (p *planner) urgent(tops []*SummaryRecord, pos int) bool {
	if p.in.Window <= 0 {
		return false
	}
	t := p.viewTokens(tops, pos)
	_, full := p.thresholds()
	return t > full || t > p.in.Window
}

// keep returns how many of the newest tokens the summarize layer keeps:
// min(Settings.SummarizeKeepRecent, 30 % of the window).
func (p *planner) keep() int {
	k := p.e.Settings.SummarizeKeepRecent
	if k <= 0 {
		k = 25000
	}
	if p.in.Window > 0 {
		k = min(k, int(keepShare*float64(p.in.Window)))
	}
	return k
}

// validCuts tells, for each message, whether the kept part may start
// there (compact.ValidCuts: the one cut rule of the engine and the CLI).
func validCuts(msgs []viewMsg) []bool {
	return compact.ValidCuts(len(msgs), func(k int) compact.CutMessage {
		m := &msgs[k]
		return compact.CutMessage{ID: m.ID, Role: m.Role, CallID: m.CallID, Calls: m.Calls}
	})
}

// keepCut returns the first kept message when the newest keep tokens are
// kept and the messages before from are already summarized
// (compact.KeepCut), or -1 when nothing can be summarized.
func keepCut(msgs []viewMsg, ok []bool, from, keep int) int {
	return compact.KeepCut(ok, func(k int) int { return msgs[k].Tokens }, from, keep)
}

// lastCut returns the last valid cut after from (the full layer keeps
// only the last turn), or -1.
func lastCut(ok []bool, from int) int { return compact.LastCut(ok, from) }

// estimate is the expected size in base tokens of a summary of span base
// tokens (the deterministic summary's bound; a model's is usually
// smaller).
func estimate(span int) int {
	return (&summarize.Deterministic{}).Limit(4*span)/4 + headerTokens
}

// messageCut decides whether the messages after pos need a summary and
// where it ends: the layer ("summarize" or "full") and the first kept
// message, or "" and -1. Above the summarize threshold and below the full
// one, a summary is made only when it is worth a change of the prefix
// (see worthRewrite). With in.Force a summary is made whatever the
// thresholds say (down to the last turn when in.Target is the full layer
// or the kept part holds everything).
func (p *planner) messageCut(tops []*SummaryRecord, pos int) (string, int) {
	if p.in.Window <= 0 {
		return "", -1
	}
	sumT, fullT := p.thresholds()
	t := p.viewTokens(tops, pos)
	if t <= sumT && !p.in.Force {
		return "", -1
	}
	msgs := p.in.Msgs
	ok := validCuts(msgs)
	cut := p.protect(msgs, ok, pos, keepCut(msgs, ok, pos, p.keep()))
	if p.in.Force && p.in.Target == compact.LayerFull {
		cut = -1
	}
	if cut > pos {
		if t-p.spanCost(pos, cut) <= fullT {
			if t <= fullT && !p.in.Force && !p.worthRewrite(tops, pos, cut) {
				return "", -1 // not yet worth a change of the prefix
			}
			return layerSummarize, cut
		}
	} else if t <= fullT && !p.in.Force {
		return "", -1 // everything after the summaries is the kept part
	}
	if last := lastCut(ok, pos); last > pos {
		return layerFull, last
	}
	return "", -1
}

// worthRewrite reports whether a summary of Msgs[pos:cut] saves at least
// as many tokens as it makes the provider write to its cache again. A new
// summary changes the view from the summary message on: the summary
// message (the summaries already at the top and the new one) and the kept
// part are sent again at the cache-write price, once, while what the
// summary saves is paid back at the cache-read price on every later
// request. Below the full threshold a summary waits until it is worth
// that, so that it lasts many turns instead of taking one turn's messages
// at a time.
func (p *planner) worthRewrite(tops []*SummaryRecord, pos, cut int) bool {
	span := p.tokens(pos, cut)
	written := estimate(span)
	return span-written >= summaryTokens(tops)+written+p.tokens(cut, len(p.in.Msgs))
}

// protect pulls a summarize cut back so that, within the restore
// protection window (Policy.KeepAfterRestore), the kept part holds every
// entry the agent restored and every message since the first of those
// restores (the restore's own call and result among them): the agent asked
// for those values, and a summary must not take them out of the view at
// the next turn, whether the value comes back in place or only in the
// restore's result (an entry that lies in an older summary). The kept part
// then starts at the last valid cut at or before the first such message;
// when there is none after pos it returns -1 (no summarize cut: only the
// full layer, above its threshold, may still summarize them). A forced
// summary (/compact) is not held back.
func (p *planner) protect(msgs []viewMsg, ok []bool, pos, cut int) int {
	if cut <= pos || p.in.Force || len(p.in.State.Restored) == 0 {
		return cut
	}
	now, keep := p.e.now(), p.e.policy().KeepAfterRestore
	since := int64(-1)
	for _, at := range p.in.State.Restored {
		if now.Sub(at) < keep && (since < 0 || at.UnixMilli() < since) {
			since = at.UnixMilli()
		}
	}
	if since < 0 {
		return cut
	}
	for i := max(pos, 0); i < cut && i < len(msgs); i++ {
		at, restored := p.in.State.Restored[msgs[i].ID]
		if !(restored && now.Sub(at) < keep) && msgs[i].Timestamp < since {
			continue
		}
		for c := i; c > pos; c-- {
			if ok[c] {
				return c
			}
		}
		return -1
	}
	return cut
}

// spanCost returns by how many calibrated tokens summarizing msgs[from:to]
// shrinks the view (negative when the summary is expected to be larger).
func (p *planner) spanCost(from, to int) int {
	n := p.tokens(from, to)
	return int(scale(p.in.State) * float64(n-estimate(n)))
}

// tokens returns the sum of the Tokens of Msgs[from:to] (from the cache's
// sums when the input has them).
func (p *planner) tokens(from, to int) int {
	from, to = max(from, 0), min(to, len(p.in.Msgs))
	if from >= to {
		return 0
	}
	if c := p.in.cum; len(c) == len(p.in.Msgs) {
		n := c[to-1]
		if from > 0 {
			n -= c[from-1]
		}
		return n
	}
	n := 0
	for _, m := range p.in.Msgs[from:to] {
		n += m.Tokens
	}
	return n
}

// start starts the job the view needs next, if any: a summary of messages
// when the thresholds ask for one, else a condensation. It reports
// whether a job started.
func (p *planner) start(ctx context.Context, tops []*SummaryRecord, pos int) (bool, error) {
	var j *job
	if layer, cut := p.messageCut(tops, pos); cut > 0 {
		var err error
		if j, err = p.e.messageJob(ctx, p.in, layer, pos, cut); err != nil {
			return false, fmt.Errorf("plan summaries of %s: %w", p.in.Ref, err)
		}
	} else if run := condenseRun(tops, p.e.fanout()); run != nil {
		j = condenseJob(run)
	}
	if j == nil {
		return false, nil
	}
	p.ss.job = p.e.run(j, p.in.Ref, p.in.Focus)
	return true, nil
}

// wait waits for sj up to budget, or, when urgent, up to shortly before
// ctx's deadline (budget when ctx has none). It reports whether sj is done.
func (p *planner) wait(ctx context.Context, sj *summaryJob, urgent bool, budget time.Duration) bool {
	if sj == nil {
		return false
	}
	if urgent {
		if dl, ok := ctx.Deadline(); ok {
			left := time.Until(dl)
			budget = max(left-min(max(left/10, 50*time.Millisecond), 500*time.Millisecond), 0)
		}
	}
	select {
	case <-sj.done:
		return true
	default:
	}
	if budget <= 0 {
		return false
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-sj.done:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// harvest takes the session's finished job into the state when what it
// summarized is still where the view needs it. A job still running is
// left alone.
func (p *planner) harvest(plan *summaryPlan) {
	sj := p.ss.job
	if sj == nil {
		return
	}
	select {
	case <-sj.done:
	default:
		return
	}
	p.ss.job = nil
	j := sj.work
	if j == nil || j.abandoned || j.stopped.Load() {
		return
	}
	if sj.err != nil {
		p.e.log().Warn("engine: summary failed", "session", p.in.Ref.String(), "layer", j.rec.Layer, "err", sj.err)
		return
	}
	tops, pos := p.applied(false)
	if !fits(p.in.Msgs, tops, pos, &j.rec) {
		p.e.log().Info("engine: summary dropped: what it covers is no longer at the top of the view", "session", p.in.Ref.String(), "layer", j.rec.Layer)
		return
	}
	if id := p.restoredIn(&j.rec); id != "" {
		// Started before the agent restored one of its entries: the next
		// plan cuts before that entry (see protect).
		p.e.log().Info("engine: summary dropped: it covers an entry the agent restored since", "session", p.in.Ref.String(), "layer", j.rec.Layer, "entry", id)
		return
	}
	r := p.e.record(p.in.State, j, j.out)
	p.e.logSummary(p.in.Ref, r)
	if plan != nil && !slices.Contains(plan.Layers, r.Layer) {
		plan.Layers = append(plan.Layers, r.Layer)
	}
}

// restoredIn returns an entry of a summarize-layer record that the agent
// restored within the restore protection window, or "". The full layer
// and forced summaries are not held back (see protect).
func (p *planner) restoredIn(rec *SummaryRecord) string {
	if rec.Layer != layerSummarize || p.in.Force || len(p.in.State.Restored) == 0 {
		return ""
	}
	now, keep := p.e.now(), p.e.policy().KeepAfterRestore
	for _, id := range rec.Entries {
		if at, ok := p.in.State.Restored[id]; ok && now.Sub(at) < keep {
			return id
		}
	}
	return ""
}

// fits reports whether rec applies after tops: its messages follow them,
// or its children are consecutive among them.
func fits(msgs []viewMsg, tops []*SummaryRecord, pos int, rec *SummaryRecord) bool {
	if len(rec.Children) > 0 {
		for i := range tops {
			if tops[i].ID != rec.Children[0] || i+len(rec.Children) > len(tops) {
				continue
			}
			for k, c := range rec.Children {
				if tops[i+k].ID != c {
					return false
				}
			}
			return true
		}
		return false
	}
	if len(rec.Entries) == 0 || pos+len(rec.Entries) > len(msgs) {
		return false
	}
	for k, id := range rec.Entries {
		if msgs[pos+k].ID != id {
			return false
		}
	}
	return true
}

// fallback replaces the session's running job with the deterministic
// summary, at once: the job is cancelled and its result will be dropped.
// A running condensation is cancelled too, and the summary of messages
// the view needs is written deterministically.
func (p *planner) fallback(ctx context.Context, plan *summaryPlan) error {
	tops, pos := p.applied(false)
	var j *job
	var cur *job
	if sj := p.ss.job; sj != nil {
		cur = sj.work
	}
	if cur != nil && !cur.abandoned && len(cur.rec.Entries) > 0 && fits(p.in.Msgs, tops, pos, &cur.rec) {
		j = cur
	} else {
		layer, cut := p.messageCut(tops, pos)
		if cut < 0 {
			return nil // what is being written is not what the view needs now
		}
		nj, err := p.e.messageJob(ctx, p.in, layer, pos, cut)
		if err != nil {
			return fmt.Errorf("plan summaries of %s: %w", p.in.Ref, err)
		}
		j = nj
	}
	if cur != nil && !cur.abandoned {
		cur.abandoned = true
		cur.cancel()
	}
	var sum compact.Summary
	var err error
	if j.input == nil && j.lines != nil {
		sum, err = (&summarize.Deterministic{}).SummarizeSeq(context.WithoutCancel(ctx), j.lines, p.in.Focus)
	} else {
		sum, err = (&summarize.Deterministic{}).Summarize(context.WithoutCancel(ctx), j.input, p.in.Focus)
	}
	if err != nil {
		return fmt.Errorf("plan summaries of %s: deterministic summary: %w", p.in.Ref, err)
	}
	sum.Reason = "the model had not answered by the turn's deadline and the context is above the full threshold; the deterministic summary was used"
	// The running job may still write its own fields: copy only what it
	// never changes.
	fresh := &job{rec: j.rec, input: j.input, lines: j.lines, pinned: j.pinned}
	r := p.e.record(p.in.State, fresh, sum)
	p.e.logSummary(p.in.Ref, r)
	if !slices.Contains(plan.Layers, r.Layer) {
		plan.Layers = append(plan.Layers, r.Layer)
	}
	return nil
}

// messageJob prepares the summary of in.Msgs[from:to]: reads their raw
// lines and collects the pinned ones.
func (e *Engine) messageJob(ctx context.Context, in *summaryInput, layer string, from, to int) (*job, error) {
	span := in.Msgs[from:to]
	if c := in.cache; c != nil && len(c.raws) == len(in.Msgs) && len(c.msgs) == len(in.Msgs) {
		// The lines were read with the session in this call.
		raws := make([][]byte, 0, len(span))
		for k := from; k < to && c.raws[k] != nil; k++ {
			raws = append(raws, c.raws[k])
		}
		if len(raws) == len(span) {
			j := e.jobOf(layer, span, func(i int) []byte { return raws[i] })
			j.input = raws
			return j, nil
		}
	}
	if in.Tr == nil && in.open != nil {
		tr, err := in.open(ctx)
		if err != nil {
			return nil, err
		}
		in.Tr = tr
	}
	if e.Summarizer == nil && ascending(span) {
		// The deterministic summary is a fold: the job reads the lines
		// again as it writes, and only the pinned ones now.
		var pinned []viewMsg
		at := map[int]int{} // span's index → pinned's
		for i := range span {
			if span[i].Pinned {
				at[i] = len(pinned)
				pinned = append(pinned, span[i])
			}
		}
		praws, err := rawLines(ctx, in.Tr, pinned)
		if err != nil {
			return nil, err
		}
		j := e.jobOf(layer, span, func(i int) []byte { return praws[at[i]] })
		j.lines, err = lineSeq(ctx, in.Tr, span)
		if err != nil {
			return nil, err
		}
		return j, nil
	}
	raws, err := rawLines(ctx, in.Tr, span)
	if err != nil {
		return nil, err
	}
	j := e.jobOf(layer, span, func(i int) []byte { return raws[i] })
	j.input = raws
	return j, nil
}

// jobOf returns the summary job of span without its input: raw(i) is the
// raw line of span[i], read for the pinned ones only.
func (e *Engine) jobOf(layer string, span []viewMsg, raw func(i int) []byte) *job {
	j := &job{rec: SummaryRecord{Level: 1, Layer: layer}}
	var b strings.Builder
	for i := range span {
		j.rec.Entries = append(j.rec.Entries, span[i].ID)
		j.rec.TokensBefore += span[i].Tokens
		if span[i].Pinned {
			j.rec.Pinned = append(j.rec.Pinned, span[i].ID)
			fmt.Fprintf(&b, "\n<pinned id=%q>\n%s\n</pinned>\n", span[i].ID, raw(i))
		}
	}
	j.pinned = b.String()
	return j
}

// ascending reports whether the lines of msgs ascend strictly, so that
// reading them in the store's order reads them in the view's.
func ascending(msgs []viewMsg) bool {
	for i := 1; i < len(msgs); i++ {
		if msgs[i].Line <= msgs[i-1].Line {
			return false
		}
	}
	return true
}

// lineSeq returns the raw lines of msgs (whose lines ascend strictly), in
// their order, read through tr each time the sequence is iterated, in
// bounded chunks that are not kept: the reads are planned now (the
// sequence needs neither tr nor ctx's cancellation later) and check that
// each line is still the entry the view knew. A line that is not yields
// an error wrapping ErrChanged.
func lineSeq(ctx context.Context, tr bs.Transcript, msgs []viewMsg) (iter.Seq2[[]byte, error], error) {
	if tr == nil {
		return nil, fmt.Errorf("read the messages to summarize: no transcript: %w", bs.ErrInvalid)
	}
	want := make([]int, len(msgs))
	ids := make([]string, len(msgs))
	for i := range msgs {
		want[i], ids[i] = msgs[i].Line, msgs[i].ID
	}
	read := tr.Lines(context.WithoutCancel(ctx), want)
	ref := tr.Ref()
	return func(yield func([]byte, error) bool) {
		i := 0
		for en, err := range readAhead(read) {
			if err != nil {
				yield(nil, fmt.Errorf("read the messages to summarize from %s: %w", ref, err))
				return
			}
			if i >= len(want) || en.Line != want[i] || (ids[i] != "" && !lineHasID(en.Raw, ids[i])) {
				yield(nil, fmt.Errorf("read the messages to summarize from %s: expected line %d to be entry %s, found another: %w",
					ref, en.Line, ids[min(i, len(ids)-1)], bs.ErrChanged))
				return
			}
			i++
			if !yield(en.Raw, nil) {
				return
			}
		}
		if i < len(want) {
			yield(nil, fmt.Errorf("read the messages to summarize from %s: expected line %d (entry %s), the store did not return it: %w",
				ref, want[i], ids[i], bs.ErrChanged))
		}
	}, nil
}

// rawLines reads the raw lines of msgs through tr, in the order of msgs.
func rawLines(ctx context.Context, tr bs.Transcript, msgs []viewMsg) ([][]byte, error) {
	if tr == nil {
		return nil, fmt.Errorf("read the messages to summarize: no transcript: %w", bs.ErrInvalid)
	}
	want := make([]int, 0, len(msgs))
	for i := range msgs {
		want = append(want, msgs[i].Line)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	got := make(map[int][]byte, len(want))
	for en, err := range tr.Lines(ctx, want) {
		if err != nil {
			return nil, fmt.Errorf("read the messages to summarize from %s: %w", tr.Ref(), err)
		}
		got[en.Line] = en.Raw
	}
	out := make([][]byte, len(msgs))
	for i := range msgs {
		raw, ok := got[msgs[i].Line]
		if ok && msgs[i].ID != "" && !lineHasID(raw, msgs[i].ID) {
			return nil, fmt.Errorf("read the messages to summarize from %s: expected line %d to be entry %s, found another: %w",
				tr.Ref(), msgs[i].Line, msgs[i].ID, bs.ErrChanged)
		}
		if !ok {
			return nil, fmt.Errorf("read the messages to summarize from %s: expected line %d (entry %s), the store did not return it: %w",
				tr.Ref(), msgs[i].Line, msgs[i].ID, bs.ErrChanged)
		}
		out[i] = raw
	}
	return out, nil
}

// lineHasID reports whether the raw line names the entry id (a check
// that the line read is the one the cache knew).
func lineHasID(raw []byte, id string) bool {
	return bytes.Contains(raw, []byte(`"`+id+`"`))
}

// readAheadBytes is about how much readAhead reads ahead of its consumer
// at most, in raw bytes (twice it in flight).
const readAheadBytes = 1 << 20

// readAhead yields what read yields, read by a goroutine of its own a
// bounded stretch ahead, so that the store's reads overlap the
// consumer's work. The entries are the consumer's to keep (see
// bs.Transcript.Lines). When the consumer stops early, the goroutine ends
// before readAhead returns.
func readAhead(read iter.Seq2[*bs.Entry, error]) iter.Seq2[*bs.Entry, error] {
	type batch struct {
		entries []*bs.Entry
		err     error
	}
	return func(yield func(*bs.Entry, error) bool) {
		ch := make(chan batch, 1)
		stop := make(chan struct{})
		defer func() {
			close(stop)
			for range ch {
			}
		}()
		go func() {
			defer close(ch)
			send := func(b batch) bool {
				select {
				case ch <- b:
					return true
				case <-stop:
					return false
				}
			}
			var b []*bs.Entry
			n := 0
			for en, err := range read {
				if err != nil {
					send(batch{err: err})
					return
				}
				b = append(b, en)
				if n += len(en.Raw); n >= readAheadBytes {
					if !send(batch{entries: b}) {
						return
					}
					b, n = nil, 0
				}
			}
			if len(b) > 0 {
				send(batch{entries: b})
			}
		}()
		for b := range ch {
			for _, en := range b.entries {
				if !yield(en, nil) {
					return
				}
			}
			if b.err != nil {
				yield(nil, b.err)
				return
			}
		}
	}
}

// run starts j in the background with a bounded context of its own (the
// job outlives the request that started it) and returns its handle.
func (e *Engine) run(j *job, ref bs.SessionRef, focus string) *summaryJob {
	ctx, cancel := context.WithTimeout(context.Background(), jobTimeout)
	j.cancel = cancel
	sj := &summaryJob{done: make(chan struct{})}
	sj.work = j
	e.bg.add(sj)
	go func() {
		defer close(sj.done)
		defer e.bg.remove(sj) // before done closes: Close sees a running job or its end
		defer cancel()
		if j.input == nil && j.lines != nil {
			j.out, sj.err = e.writeLines(j.lines, focus)
			return
		}
		j.out = e.write(ctx, j.input, focus)
	}()
	e.log().Debug("engine: summary started", "session", ref.String(), "layer", j.rec.Layer, "level", j.rec.Level,
		"messages", len(j.rec.Entries), "children", len(j.rec.Children))
	return sj
}

// write writes the summary of input with the engine's summarizer: through
// summarize.Escalate for a summarizer that takes prompt variants, else by
// calling it; any failure falls back to the deterministic summary, marked
// degraded with the reason. It never fails.
func (e *Engine) write(ctx context.Context, input [][]byte, focus string) compact.Summary {
	det := func(reason string) compact.Summary {
		s, _ := (&summarize.Deterministic{}).Summarize(context.WithoutCancel(ctx), input, focus)
		s.Degraded, s.Reason = true, reason
		return s
	}
	if e.Summarizer == nil {
		return det("no summarizer is configured")
	}
	var sum compact.Summary
	var err error
	if _, ok := e.Summarizer.(summarize.VariantSummarizer); ok {
		sum, err = (&summarize.Escalate{Model: e.Summarizer, Logger: e.Logger}).Summarize(ctx, input, focus)
	} else {
		sum, err = e.Summarizer.Summarize(ctx, input, focus)
	}
	switch {
	case err != nil:
		return det("the summarizer failed, the deterministic summary was used: " + err.Error())
	case strings.TrimSpace(sum.Text) == "":
		return det("the summarizer returned an empty summary, the deterministic summary was used")
	}
	if sum.Degraded && sum.Reason == "" {
		sum.Reason = "the summary was made without a model"
	}
	return sum
}

// writeLines writes the deterministic summary of lines (the engine has
// no summarizer: see messageJob) as write does. It fails only when the
// lines can no longer be read as they were.
func (e *Engine) writeLines(lines iter.Seq2[[]byte, error], focus string) (compact.Summary, error) {
	s, err := (&summarize.Deterministic{}).SummarizeSeq(context.Background(), lines, focus)
	s.Degraded, s.Reason = true, "no summarizer is configured"
	return s, err
}

// record adds the summary j wrote to st: its id and text (with the pinned
// section), its children's parent links, and the count of summaries of
// messages. It returns the new record.
func (e *Engine) record(st *State, j *job, sum compact.Summary) *SummaryRecord {
	r := j.rec
	r.ID = newSummaryIDFrom(e.idRand, st)
	own, _ := splitPinned(sum.Text)
	r.Text = own
	if j.pinned != "" {
		r.Text = strings.TrimRight(own, "\n") + pinnedHeading + j.pinned
	}
	r.Tokens = textTokens(r.Text)
	r.Degraded, r.Reason, r.Method = sum.Degraded, sum.Reason, sum.Method
	r.CreatedAt = e.now().UTC()
	st.Summaries = append(st.Summaries, r)
	if len(r.Children) > 0 {
		byID := index(st)
		for _, c := range r.Children {
			if cr := byID[c]; cr != nil {
				cr.Parent = r.ID
			}
		}
	} else {
		st.Compactions++
	}
	return &st.Summaries[len(st.Summaries)-1]
}

// logSummary logs a summary the view now uses.
func (e *Engine) logSummary(ref bs.SessionRef, r *SummaryRecord) {
	e.log().Info("engine: summary made", "session", ref.String(), "summary", r.ID, "layer", r.Layer, "level", r.Level,
		"messages", len(r.Entries), "children", len(r.Children), "tokens", r.Tokens, "tokens_before", r.TokensBefore,
		"degraded", r.Degraded, "reason", r.Reason)
}

// render returns the view's summary message for tops, nil for none: each
// summary's header and text, oldest first.
func render(st *State, tops []*SummaryRecord) *Summary { return (*viewCache)(nil).render(st, tops) }

// render is the package's render, with the ids each summary covers and
// the last summary message taken from the cache c when it is not nil.
func (c *viewCache) render(st *State, tops []*SummaryRecord) *Summary {
	if len(tops) == 0 {
		return nil
	}
	key := ""
	if c != nil {
		var b strings.Builder
		for _, t := range tops {
			b.WriteString(t.ID)
			b.WriteByte(' ')
		}
		key = b.String()
		if c.rendered != nil && c.renderedKey == key {
			s := *c.rendered
			return &s
		}
	}
	var byID map[string]*SummaryRecord
	count := func(t *SummaryRecord) int {
		if c != nil {
			if ids, ok := c.leaves[t.ID]; ok {
				return len(ids)
			}
		}
		if byID == nil {
			byID = index(st)
		}
		return len(leaves(byID, t))
	}
	defer func() {
		if c != nil && c.rendered != nil {
			c.renderedKey = key
		}
	}()
	s := &Summary{}
	var b strings.Builder
	var newest *SummaryRecord
	for i, t := range tops {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(header(t.ID, t.Level, count(t)))
		b.WriteString("\n")
		b.WriteString(t.Text)
		s.Level = max(s.Level, t.Level)
		s.TokensBefore += t.TokensBefore
		if newest == nil || !t.CreatedAt.Before(newest.CreatedAt) {
			newest = t
		}
	}
	s.ID, s.Timestamp, s.Text = newest.ID, newest.CreatedAt.UnixMilli(), b.String()
	if c != nil {
		cp := *s
		c.rendered, c.renderedLen = &cp, 0
	}
	return s
}

// header is the first line of a rendered summary.
func header(id string, level, messages int) string {
	return fmt.Sprintf(`[BrainSurgeon summary %s: level %d, %d messages; recall_expand {"id":"%s"} returns them]`, id, level, messages, id)
}

// textTokens returns the base tokens of s: its length in UTF-16 code
// units over 4, rounded up.
func textTokens(s string) int {
	n := 0
	for _, r := range s {
		n += max(utf16.RuneLen(r), 1)
	}
	return (n + 3) / 4
}

// newSummaryID returns a summary id no summary of st has.
func newSummaryID(st *State) string { return newSummaryIDFrom(nil, st) }

// newSummaryIDFrom returns a summary id no summary of st has, of the
// random bytes of r (crypto/rand when nil).
func newSummaryIDFrom(r io.Reader, st *State) string {
	if r == nil {
		r = rand.Reader
	}
	for {
		var b [6]byte
		_, _ = io.ReadFull(r, b[:])
		id := "sum-" + hex.EncodeToString(b[:])
		if !slices.ContainsFunc(st.Summaries, func(r SummaryRecord) bool { return r.ID == id }) {
			return id
		}
	}
}
