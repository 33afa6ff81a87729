package tokens

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

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
	// images is the weight of the images' estimated cost.
	images float64
	// perMsg is the fixed cost of one message (role, framing), in tokens.
	perMsg float64
	// recent is the number of latest anchors the overhead is the median
	// of.
	recent int
	// minDelta is the least base count a pair of turns must differ by to
	// vote on the ratio.
	minDelta int
	// span, when true, takes the ratio from the first and the last turn
	// of the latest context (the turns since a compaction) whose history
	// grew by at least minSpan base tokens.
	span    bool
	minSpan int
}

// defaultParams are the choices measured best on the corpus (see
// TestAccuracy).
var defaultParams = params{thinking: 1, images: 1, perMsg: 4, recent: 5, minDelta: 40, span: true, minSpan: 2000}

// feats are the measured totals of a set of context messages for one
// base tokenizer.
type feats struct {
	tok    [numClasses]int
	images int
	msgs   int
}

func (f *feats) add(m *message, b int) {
	for c := range numClasses {
		f.tok[c] += m.toks[b][c]
	}
	f.images += m.images
	f.msgs++
}

func (f feats) sub(g feats) feats {
	for c := range numClasses {
		f.tok[c] -= g.tok[c]
	}
	f.images -= g.images
	f.msgs -= g.msgs
	return f
}

// x is the part of f the ratio scales.
func (p params) x(f feats) float64 {
	return float64(f.tok[classText]) + p.thinking*float64(f.tok[classThinking])
}

// fixed is the part of f the ratio does not scale.
func (p params) fixed(f feats) float64 {
	return p.images*float64(f.images) + p.perMsg*float64(f.msgs)
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
	// prompt to (a context the model recorded three times or more), not
	// the context's size.
	saturated bool
	// partial is true when f counts only part of the context the request
	// carried (a turn before the latest compaction, scanned from the
	// compaction's first kept entry on): its growth against the turn
	// before it is right, its overhead is not.
	partial bool
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
	// live are the items of the context as the history stands (a
	// compaction first, when there is one).
	live []int
}

// scan reads the active path of tr and measures its context messages with
// each base.
func scan(ctx context.Context, tr bs.Transcript, bases []Tokenizer) (*timeline, error) {
	return scanLines(ctx, tr, bases, nil)
}

// scanContext reads only the current context of tr (the latest compaction
// on the active path and the messages the host sends with it) and
// measures it with each base. The turns before the compaction are marked
// partial. It returns nil when the context holds no usable recorded usage
// after its compaction: the whole path must be scanned then.
func scanContext(ctx context.Context, tr bs.Transcript, bases []Tokenizer) (*timeline, error) {
	c := tr.Context()
	if c.Compaction < 0 {
		return scan(ctx, tr, bases) // the context is the whole path
	}
	nodes := tr.Nodes()
	keep := make(map[int]bool, len(c.Messages)+1)
	keep[nodes[c.Compaction].Line] = true
	for _, i := range c.Messages {
		keep[nodes[i].Line] = true
	}
	tl, err := scanLines(ctx, tr, bases, keep)
	if err != nil {
		return nil, err
	}
	current := false
	for i := range tl.anchors {
		a := &tl.anchors[i]
		a.partial = a.epoch < tl.epoch
		current = current || (!a.partial && !a.saturated)
	}
	if !current {
		return nil, nil
	}
	return tl, nil
}

// scanLines is scan over the path's lines in keep (nil: all of them).
func scanLines(ctx context.Context, tr bs.Transcript, bases []Tokenizer, keep map[int]bool) (*timeline, error) {
	nodes := tr.Nodes()
	path := tr.ActivePath()
	var lines []int
	for _, i := range path {
		n := &nodes[i]
		if keep != nil && !keep[n.Line] {
			continue
		}
		if n.IsMessage() || (n.Kind == bs.KindEntry && n.Type == "compaction") {
			lines = append(lines, n.Line)
		}
	}
	sorted := slices.Clone(lines)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	measured, err := measureLines(ctx, tr, sorted, bases)
	if err != nil {
		return nil, err
	}
	tl := &timeline{cur: make([]feats, len(bases))}
	var v1Index []int // for v1: the index of each line in pi's entries array
	if tr.Header().Version < 2 {
		v1Index = make([]int, len(nodes))
		k := 0
		for j := range nodes {
			v1Index[j] = k
			if nodes[j].Kind == bs.KindEntry || nodes[j].Kind == bs.KindHeader {
				k++
			}
		}
	}
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
			// As pi's buildSessionContext: the summary, then the path's
			// messages from firstKeptEntryId (a v1 compaction's
			// firstKeptEntryIndex counts the header and entry lines) up
			// to the compaction, whatever earlier compactions cut.
			from := len(path)
			if id := n.FirstKept(); id != "" {
				if p, ok := pathPos[id]; ok {
					from = p
				}
			} else if x := n.FirstKeptIndex(); x >= 0 && v1Index != nil {
				for q, pi := range path[:k] {
					if v1Index[pi] >= x {
						from = q
						break
					}
				}
			}
			live = append(live[:0], it)
			for j := range it {
				if itemPos[j] >= from && !tl.items[j].skip && tl.items[j].kind != "compactionSummary" {
					live = append(live, j)
				}
			}
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
			if c := len(tl.comps); c > 0 && tl.comps[c-1].after < 0 {
				tl.comps[c-1].after = len(tl.anchors)
			}
			tl.anchors = append(tl.anchors, a)
		}
		live = append(live, it)
		for b := range tl.cur {
			tl.cur[b].add(&m, b)
		}
	}
	tl.live = live
	markSaturated(tl.anchors)
	return tl, nil
}

// measureLines reads and measures lines of tr (ascending). When every base
// is one of this module's tokenizers, which are safe for concurrent use,
// the lines are measured on all processors while the next ones are read.
func measureLines(ctx context.Context, tr bs.Transcript, lines []int, bases []Tokenizer) (map[int]message, error) {
	measured := make(map[int]message, len(lines))
	workers := runtime.GOMAXPROCS(0)
	for _, b := range bases {
		switch b.(type) {
		case o200k, CharsPer4, calibrated:
		default:
			workers = 1
		}
	}
	if workers <= 1 {
		for e, err := range tr.Lines(ctx, lines) {
			if err != nil {
				return nil, fmt.Errorf("measure the context of %s: %w", tr.Ref(), err)
			}
			if m, ok := measure(e.Raw, e.Line, bases); ok {
				measured[e.Line] = m
			}
		}
		return measured, nil
	}
	// Batches of about batchBytes keep the workers busy without holding
	// the transcript in memory.
	const batchBytes = 1 << 20
	type line struct {
		n   int
		raw []byte
	}
	batches := make(chan []line, workers)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for batch := range batches {
				out := make([]message, 0, len(batch))
				for _, l := range batch {
					if m, ok := measure(l.raw, l.n, bases); ok {
						out = append(out, m)
					}
				}
				mu.Lock()
				for _, m := range out {
					measured[m.line] = m
				}
				mu.Unlock()
			}
		})
	}
	var (
		batch []line
		size  int
		rerr  error
	)
	for e, err := range tr.Lines(ctx, lines) {
		if err != nil {
			rerr = fmt.Errorf("measure the context of %s: %w", tr.Ref(), err)
			break
		}
		batch = append(batch, line{e.Line, e.Raw})
		if size += len(e.Raw); size >= batchBytes {
			batches <- batch
			batch, size = nil, 0
		}
	}
	if len(batch) > 0 && rerr == nil {
		batches <- batch
	}
	close(batches)
	wg.Wait()
	if rerr != nil {
		return nil, rerr
	}
	return measured, nil
}

// markSaturated marks the anchors whose context a model recorded three
// times or more: a provider that truncates the prompt to its window
// (Ollama) records the window, not the context, turn after turn, while a
// real context grows with every turn.
func markSaturated(anchors []anchor) {
	type key struct {
		model string
		ctx   int
	}
	seen := map[key]int{}
	for i := range anchors {
		seen[key{anchors[i].model, anchors[i].ctx}]++
	}
	for i := range anchors {
		if seen[key{anchors[i].model, anchors[i].ctx}] >= 3 {
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

// fitted is a learned model: its choices, ratio and overhead.
type fitted struct {
	p        params
	ratio    float64
	overhead float64
	// turns is the number of usage records the fit used.
	turns int
}

// predict returns the context size of a history f counts as h.
func (f *fitted) predict(h feats) float64 {
	return f.overhead + f.ratio*f.p.x(h) + f.p.fixed(h)
}

// learn fits anchors for base b, choosing whether thinking text and
// images count: a provider that drops earlier turns' thinking from the
// request (OpenAI-compatible ones do) records none of it, and a model
// without vision gets no images. Of the fits with each choice, the one
// that predicts each turn from the one before best wins; a kind of
// content the history does not hold counts.
func learn(anchors []anchor, b int, p params) fitted {
	anchors = usable(anchors)
	var thinks, sees bool
	for i := range anchors {
		thinks = thinks || anchors[i].f[b].tok[classThinking] > 0
		sees = sees || anchors[i].f[b].images > 0
	}
	p.thinking, p.images = 1, 1
	best := fit(anchors, b, p)
	if !thinks && !sees {
		return best
	}
	bestErr := stepError(anchors, b, best)
	for _, w := range [][2]float64{{0, 1}, {1, 0}, {0, 0}} {
		if (w[0] == 0 && !thinks) || (w[1] == 0 && !sees) {
			continue
		}
		p.thinking, p.images = w[0], w[1]
		f := fit(anchors, b, p)
		if e := stepError(anchors, b, f); e < bestErr {
			best, bestErr = f, e
		}
	}
	return best
}

// stepError is the mean absolute error of predicting each of the latest
// turns from the turn before it in the same context, with f.
func stepError(anchors []anchor, b int, f fitted) float64 {
	const window = 200
	var sum float64
	n := 0
	for k := len(anchors) - 1; k > 0 && n < window; k-- {
		a, c := &anchors[k-1], &anchors[k]
		if a.epoch != c.epoch {
			continue
		}
		d := c.f[b].sub(a.f[b])
		sum += math.Abs(float64(a.ctx) + f.ratio*f.p.x(d) + f.p.fixed(d) - float64(c.ctx))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// fit learns the ratio of recorded tokens to base tokens and the
// overhead from usable anchors (in order), for base b.
//
// The ratio is the slope between the first and the last turn of the
// latest context (epoch) whose history grew by at least minSpan base
// tokens: the overhead cancels out of the difference, and the slope
// averages over the history's mix of prose, code and tool output, which
// is what a compaction removes. When no epoch grew that much it is the
// weighted median, over consecutive turns, of the growth of the recorded
// context divided by the growth of the base count. The overhead is the
// median of what the latest turns recorded beyond their scaled history.
func fit(anchors []anchor, b int, p params) fitted {
	f := fitted{p: p, ratio: 1, turns: len(anchors)}
	if len(anchors) == 0 {
		return f
	}
	spanned := false
	if p.span {
		for end := len(anchors) - 1; end > 0 && !spanned; {
			first := end
			for first > 0 && anchors[first-1].epoch == anchors[end].epoch {
				first--
			}
			a, z := &anchors[first], &anchors[end]
			d := z.f[b].sub(a.f[b])
			if dx := p.x(d); dx >= float64(p.minSpan) {
				if r := (float64(z.ctx-a.ctx) - p.fixed(d)) / dx; r > 0 {
					f.ratio, spanned = r, true
				}
			}
			end = first - 1
		}
	}
	if !spanned {
		f.ratio = medianRatio(anchors, b, p)
	}
	var over []float64
	for k := len(anchors) - 1; k >= 0 && len(over) < p.recent; k-- {
		a := &anchors[k]
		if a.partial {
			continue
		}
		over = append(over, float64(a.ctx)-f.ratio*p.x(a.f[b])-p.fixed(a.f[b]))
	}
	if len(over) == 0 {
		return f
	}
	slices.Sort(over)
	f.overhead = max(over[len(over)/2], 0)
	return f
}

// medianRatio is the weighted median, over consecutive turns of one
// epoch, of the growth of the recorded context divided by the growth of
// the base count; 1 when no pair of turns grew by minDelta.
func medianRatio(anchors []anchor, b int, p params) float64 {
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
		vs = append(vs, vote{(float64(c.ctx-a.ctx) - p.fixed(d)) / dx, dx})
	}
	if len(vs) == 0 {
		return 1
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].r < vs[j].r })
	var total float64
	for _, v := range vs {
		total += v.w
	}
	var acc float64
	for _, v := range vs {
		acc += v.w
		if acc >= total/2 {
			if v.r <= 0 || math.IsNaN(v.r) {
				return 1
			}
			return v.r
		}
	}
	return 1
}

// Model is a transcript's calibrated token model: the ratio of the tokens
// the provider recorded to the base tokenizer's count, and the overhead
// the host sends that is not in the transcript (system prompt, tool
// definitions). A Model is immutable and safe for concurrent use.
type Model struct {
	base     Tokenizer
	p        params
	ratio    float64
	overhead float64
	// turns is the number of recorded usages the model learned from.
	turns int
	cur   feats
	// last is the latest usable anchor since the last compaction (its
	// context for the model's base only), or nil.
	last *anchor
}

// Learn reads the current context of tr (the latest compaction on the
// active path and the messages the host sends with it) and the recorded
// usage of its assistant messages, and fits the model with base as the
// underlying count (o200k or chars/4; nil means chars/4). When the
// context records no usage since its compaction, Learn reads the whole
// active path instead, so that the overhead is learned from the turns
// before the compaction. A transcript without recorded usage gives a
// model that counts with base alone, with no overhead. Learn reads each
// line it needs once; it returns an error when they cannot be read.
//
// Reading the current context only keeps the cost of Learn bounded by
// the context's size, not the transcript's: a long-running session of
// 100 MB whose context is a few hundred kilobytes is measured in
// milliseconds.
func Learn(ctx context.Context, tr bs.Transcript, base Tokenizer) (*Model, error) {
	if base == nil {
		base = CharsPer4{}
	}
	bases := []Tokenizer{base}
	tl, err := scanContext(ctx, tr, bases)
	if err != nil {
		return nil, err
	}
	if tl == nil {
		if tl, err = scan(ctx, tr, bases); err != nil {
			return nil, err
		}
	}
	return newModel(tl, 0, len(tl.anchors), base, defaultParams), nil
}

// newModel fits a model on the first n anchors of tl for base b.
func newModel(tl *timeline, b, n int, base Tokenizer, p params) *Model {
	m := &Model{base: base, p: p, ratio: 1, cur: tl.cur[b]}
	if n == 0 {
		return m
	}
	f := learn(tl.anchors[:n], b, p)
	m.p, m.ratio, m.overhead, m.turns = f.p, f.ratio, f.overhead, f.turns
	for k := n - 1; k >= 0 && tl.anchors[k].epoch == tl.epoch; k-- {
		if a := tl.anchors[k]; !a.saturated {
			// A copy, so that the model does not keep the timeline.
			a.f, a.self = []feats{a.f[b]}, nil
			m.last = &a
			break
		}
	}
	return m
}

// Ratio returns the learned number of recorded tokens per base token (1
// when nothing was learned).
func (m *Model) Ratio() float64 { return m.ratio }

// Tokenizer returns the calibrated tokenizer: the base count scaled by the
// learned ratio. Its name is "calibrated".
func (m *Model) Tokenizer() Tokenizer { return calibrated{m.base, m.ratio} }

// TokenizerName names the counting method: the calibrated tokenizer's
// name, "calibrated".
func (m *Model) TokenizerName() string { return m.Tokenizer().Name() }

// Overhead returns the inferred number of tokens the host sends that are
// not in the transcript (system prompt, tool definitions); 0 when the
// transcript records no usage.
func (m *Model) Overhead() int { return int(math.Round(m.overhead)) }

// Current returns the context size of the next turn as the history
// stands: the latest recorded usage since the last compaction (a
// provider's truncation ceiling left out) plus the
// calibrated count of the messages after it (the assistant message that
// recorded it included), or, with no such usage, the overhead plus the
// calibrated count of the whole context.
func (m *Model) Current() Estimate {
	if m.turns == 0 {
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
	bases := []Tokenizer{m.base}
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
	base  Tokenizer
	ratio float64
}

// Tokens returns the base count of text times the ratio, rounded.
func (c calibrated) Tokens(text []byte) int {
	return int(math.Round(float64(c.base.Tokens(text)) * c.ratio))
}

// Name returns "calibrated".
func (calibrated) Name() string { return NameCalibrated }
