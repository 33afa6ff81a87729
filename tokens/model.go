package tokens

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Estimate is the context size of a session's next turn.
type Estimate struct {
	// Tokens is the estimated context size in tokens.
	Tokens int `json:"tokens"`
	// Method says how Tokens was found: "usage+calibrated" (the latest
	// recorded usage plus the calibrated count of what came after it),
	// "calibrated" (overhead plus the calibrated count of the whole
	// history, when no usage is recorded since the last compaction), or
	// "<base> (no recorded usage)".
	Method string `json:"method"`
	// Anchor is the id of the assistant entry whose recorded usage Tokens
	// starts from, or "".
	Anchor string `json:"anchor"`
	// Overhead is the part of Tokens that is not in the transcript (system
	// prompt, tool definitions).
	Overhead int `json:"overhead"`
	// History is Tokens less Overhead: the transcript's part.
	History int `json:"history"`
}

// params are the choices of the calibrated model.
type params struct {
	// thinking is the weight of thinking text relative to other text.
	thinking float64
	// perMsg is the fixed cost of one message (role, framing), in tokens.
	perMsg float64
	// recent is the number of latest anchors the overhead is the median
	// of.
	recent int
	// minDelta is the least base count a pair of turns must differ by to
	// vote on the ratio.
	minDelta int
	// span, when true, takes the ratio and the overhead from the first
	// and the last turn of the latest context (since the last
	// compaction) when they differ by at least minSpan base tokens.
	span    bool
	minSpan int
}

// defaultParams are the choices measured best on the corpus (see
// TestAccuracy).
var defaultParams = params{thinking: 1, perMsg: 4, recent: 5, minDelta: 40, span: true, minSpan: 2000}

// feats are the measured totals of a set of context messages for one
// base tokenizer.
type feats struct {
	tok    [numClasses]int
	images int
	msgs   int
	chars  int
}

func (f *feats) add(m *message, b int) {
	for c := range numClasses {
		f.tok[c] += m.toks[b][c]
	}
	f.images += m.images
	f.msgs++
	f.chars += m.chars
}

func (f feats) sub(g feats) feats {
	for c := range numClasses {
		f.tok[c] -= g.tok[c]
	}
	f.images -= g.images
	f.msgs -= g.msgs
	f.chars -= g.chars
	return f
}

// x is the part of f the ratio scales.
func (p params) x(f feats) float64 {
	return float64(f.tok[classText]) + p.thinking*float64(f.tok[classThinking])
}

// fixed is the part of f the ratio does not scale.
func (p params) fixed(f feats) float64 {
	return float64(f.images) + p.perMsg*float64(f.msgs)
}

// anchor is an assistant message with recorded usage, and the context its
// request carried.
type anchor struct {
	// item is the message's index in the timeline.
	item int
	// epoch counts the compactions before the message.
	epoch int
	id    string
	// model is the provider/model that recorded the usage.
	model string
	// ctx is the recorded context size; out the recorded output.
	ctx, out int
	// saturated is true when ctx is a ceiling the provider truncated the
	// prompt to (the largest context, recorded three times or more), not
	// the context's size.
	saturated bool
	// f is, per base, the context the request carried (the message
	// itself excluded); self the message itself.
	f, self []feats
}

// compaction is a compaction on the active path.
type compaction struct {
	// item is its index in the timeline; id its entry id.
	item int
	id   string
	// before is the number of anchors recorded before it; after the index
	// of the first anchor after it, or -1.
	before, after int
}

// timeline is the active path of a transcript as the host's context saw
// it, turn by turn.
type timeline struct {
	items   []message
	anchors []anchor
	comps   []compaction
	// cur is, per base, the context as the history stands.
	cur []feats
	// epoch is the number of compactions on the path.
	epoch int
}

// scan reads the active path of tr and measures its context messages with
// each base.
func scan(ctx context.Context, tr bs.Transcript, bases []bs.Tokenizer) (*timeline, error) {
	nodes := tr.Nodes()
	path := tr.ActivePath()
	var lines []int
	for _, i := range path {
		n := &nodes[i]
		if n.IsMessage() || (n.Kind == bs.KindEntry && n.Type == "compaction") {
			lines = append(lines, n.Line)
		}
	}
	sorted := slices.Clone(lines)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	measured := make(map[int]message, len(sorted))
	for e, err := range tr.Lines(ctx, sorted) {
		if err != nil {
			return nil, fmt.Errorf("measure the context of %s: %w", tr.Ref(), err)
		}
		if m, ok := measure(e.Raw, e.Line, bases); ok {
			measured[e.Line] = m
		}
	}
	tl := &timeline{cur: make([]feats, len(bases))}
	pathPos := make(map[string]int, len(path))
	itemPos := []int{} // path position of each item
	var live []int     // items in the current context
	for k, i := range path {
		n := &nodes[i]
		if n.ID != "" {
			pathPos[n.ID] = k
		}
		m, ok := measured[n.Line]
		if !ok {
			continue
		}
		it := len(tl.items)
		tl.items = append(tl.items, m)
		itemPos = append(itemPos, k)
		if n.Type == "compaction" {
			from := -1
			if id := n.FirstKept(); id != "" {
				if p, ok := pathPos[id]; ok {
					from = p
				}
			} else if x := n.FirstKeptIndex(); x >= 0 {
				from = x
			}
			kept := []int{it}
			if from >= 0 {
				for _, j := range live {
					if itemPos[j] >= from {
						kept = append(kept, j)
					}
				}
			}
			live = kept
			for b := range tl.cur {
				tl.cur[b] = feats{}
				for _, j := range live {
					tl.cur[b].add(&tl.items[j], b)
				}
			}
			tl.comps = append(tl.comps, compaction{item: it, id: n.ID, before: len(tl.anchors), after: -1})
			tl.epoch++
			continue
		}
		if m.skip {
			continue
		}
		if m.kind == "assistant" && m.ctx > 0 {
			a := anchor{item: it, epoch: tl.epoch, id: m.id, model: m.model, ctx: m.ctx, out: m.out,
				f: slices.Clone(tl.cur), self: make([]feats, len(bases))}
			for b := range bases {
				a.self[b].add(&m, b)
			}
			if c := len(tl.comps); c > 0 && tl.comps[c-1].after < 0 && tl.comps[c-1].before <= len(tl.anchors) {
				tl.comps[c-1].after = len(tl.anchors)
			}
			tl.anchors = append(tl.anchors, a)
		}
		live = append(live, it)
		for b := range tl.cur {
			tl.cur[b].add(&m, b)
		}
	}
	markSaturated(tl.anchors)
	return tl, nil
}

// markSaturated marks the anchors whose context is the largest recorded,
// when at least three record it: a provider that truncates the prompt to
// its window (Ollama) records the window, not the context.
func markSaturated(anchors []anchor) {
	top, n := 0, 0
	for i := range anchors {
		switch c := anchors[i].ctx; {
		case c > top:
			top, n = c, 1
		case c == top:
			n++
		}
	}
	if n < 3 {
		return
	}
	for i := range anchors {
		if anchors[i].ctx == top {
			anchors[i].saturated = true
		}
	}
}

// usable returns the anchors a fit may learn from: those recorded by the
// latest anchor's model, not saturated.
func usable(anchors []anchor) []anchor {
	last := -1
	for i := len(anchors) - 1; i >= 0; i-- {
		if !anchors[i].saturated {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	model := anchors[last].model
	var out []anchor
	for i := range anchors[:last+1] {
		if a := &anchors[i]; !a.saturated && a.model == model {
			out = append(out, *a)
		}
	}
	return out
}

// fit learns the ratio of recorded tokens to base tokens and the
// overhead from anchors (in order), for base b.
//
// The ratio is the weighted median, over consecutive turns of one epoch,
// of the growth of the recorded context divided by the growth of the
// base count: the overhead cancels out of each difference. The overhead
// is the median of what the latest anchors' recorded context holds beyond
// the scaled history.
func fit(anchors []anchor, b int, p params) (ratio, overhead float64, votes int) {
	anchors = usable(anchors)
	if p.span && len(anchors) > 1 {
		last := &anchors[len(anchors)-1]
		first := len(anchors) - 1
		for first > 0 && anchors[first-1].epoch == last.epoch {
			first--
		}
		a := &anchors[first]
		d := last.f[b].sub(a.f[b])
		if dx := p.x(d); dx >= float64(p.minSpan) {
			ratio = (float64(last.ctx-a.ctx) - p.fixed(d)) / dx
			if ratio > 0 {
				overhead = max(float64(a.ctx)-ratio*p.x(a.f[b])-p.fixed(a.f[b]), 0)
				return ratio, overhead, len(anchors) - first
			}
		}
	}
	type vote struct{ r, w float64 }
	var vs []vote
	for k := 1; k < len(anchors); k++ {
		a, c := &anchors[k-1], &anchors[k]
		if a.epoch != c.epoch {
			continue
		}
		d := c.f[b].sub(a.f[b])
		dx := p.x(d)
		if dx < float64(p.minDelta) {
			continue
		}
		dy := float64(c.ctx-a.ctx) - p.fixed(d)
		vs = append(vs, vote{dy / dx, dx})
	}
	ratio = 1
	if len(vs) > 0 {
		sort.Slice(vs, func(i, j int) bool { return vs[i].r < vs[j].r })
		var total float64
		for _, v := range vs {
			total += v.w
		}
		var acc float64
		for _, v := range vs {
			acc += v.w
			if acc >= total/2 {
				ratio = v.r
				break
			}
		}
		if ratio <= 0 || math.IsNaN(ratio) {
			ratio = 1
		}
	}
	var over []float64
	for k := len(anchors) - 1; k >= 0 && len(over) < p.recent; k-- {
		a := &anchors[k]
		over = append(over, float64(a.ctx)-ratio*p.x(a.f[b])-p.fixed(a.f[b]))
	}
	if len(over) > 0 {
		slices.Sort(over)
		overhead = max(over[len(over)/2], 0)
	}
	return ratio, overhead, len(vs)
}

// Model is a transcript's calibrated token model: the ratio of the tokens
// the provider recorded to the base tokenizer's count, and the overhead
// the host sends that is not in the transcript (system prompt, tool
// definitions). A Model is immutable and safe for concurrent use.
type Model struct {
	base     bs.Tokenizer
	p        params
	ratio    float64
	overhead float64
	votes    int
	anchors  int
	cur      feats
	// last is the latest anchor since the last compaction, or nil.
	last *anchor
}

// Learn reads the active path of tr and the recorded usage of its
// assistant messages, and fits the model with base as the underlying
// count (o200k or chars/4; nil means chars/4). A transcript without
// recorded usage gives a model that counts with base alone, with no
// overhead. Learn reads the path's message lines once; it returns an
// error when they cannot be read.
func Learn(ctx context.Context, tr bs.Transcript, base bs.Tokenizer) (*Model, error) {
	if base == nil {
		base = bs.CharsPer4{}
	}
	tl, err := scan(ctx, tr, []bs.Tokenizer{base})
	if err != nil {
		return nil, err
	}
	return newModel(tl, 0, len(tl.anchors), base, defaultParams), nil
}

// newModel fits a model on the first n anchors of tl for base b.
func newModel(tl *timeline, b, n int, base bs.Tokenizer, p params) *Model {
	m := &Model{base: base, p: p, ratio: 1, anchors: n, cur: tl.cur[b]}
	if n > 0 {
		m.ratio, m.overhead, m.votes = fit(tl.anchors[:n], b, p)
		if a := &tl.anchors[n-1]; a.epoch == tl.epoch {
			m.last = a
		}
	}
	return m
}

// Ratio returns the learned number of recorded tokens per base token (1
// when nothing was learned).
func (m *Model) Ratio() float64 { return m.ratio }

// Tokenizer returns the calibrated tokenizer: the base count scaled by the
// learned ratio. Its name is "calibrated".
func (m *Model) Tokenizer() bs.Tokenizer { return calibrated{m.base, m.ratio} }

// Overhead returns the inferred number of tokens the host sends that are
// not in the transcript (system prompt, tool definitions); 0 when the
// transcript records no usage.
func (m *Model) Overhead() int { return int(math.Round(m.overhead)) }

// Current returns the context size of the next turn as the history
// stands: the latest recorded usage since the last compaction plus the
// calibrated count of the messages after it (the assistant message that
// recorded it included), or, with no such usage, the overhead plus the
// calibrated count of the whole context.
func (m *Model) Current() Estimate {
	if m.anchors == 0 {
		t := m.count(m.cur)
		return Estimate{Tokens: t, Method: m.base.Name() + " (no recorded usage)", History: t}
	}
	if a := m.last; a != nil {
		t := a.ctx + int(math.Round(m.scaled(m.cur.sub(a.f[0]))))
		o := min(m.Overhead(), t)
		return Estimate{Tokens: t, Method: "usage+calibrated", Anchor: a.id, Overhead: o, History: t - o}
	}
	h := m.count(m.cur)
	return Estimate{Tokens: m.Overhead() + h, Method: NameCalibrated, Overhead: m.Overhead(), History: h}
}

// Predict returns the context size of a turn whose context would be
// exactly messages (raw transcript lines in context order: for example a
// compaction line, whose summary the host sends wrapped as a message, and
// the kept entries after it): the overhead plus their calibrated count.
// Lines that do not reach the model (state entries, transcript-only
// assistants, failed turns) count nothing.
func (m *Model) Predict(messages [][]byte) int {
	bases := []bs.Tokenizer{m.base}
	var f feats
	for i, raw := range messages {
		msg, ok := measure(raw, i+1, bases)
		if !ok || msg.skip {
			continue
		}
		f.add(&msg, 0)
	}
	return m.Overhead() + m.count(f)
}

// scaled is the calibrated count of f.
func (m *Model) scaled(f feats) float64 { return m.ratio*m.p.x(f) + m.p.fixed(f) }

// count is the calibrated count of f, rounded.
func (m *Model) count(f feats) int { return int(math.Round(m.scaled(f))) }

// calibrated is a base tokenizer scaled by a learned ratio.
type calibrated struct {
	base  bs.Tokenizer
	ratio float64
}

// Tokens returns the base count of text times the ratio, rounded.
func (c calibrated) Tokens(text []byte) int {
	return int(math.Round(float64(c.base.Tokens(text)) * c.ratio))
}

// Name returns "calibrated".
func (calibrated) Name() string { return NameCalibrated }
