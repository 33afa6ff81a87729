package engine

import (
	"context"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// CompactOptions are the host's compact call.
type CompactOptions struct {
	// TokenBudget is the model's context window in tokens; 0 means
	// Settings.ContextWindow.
	TokenBudget int
	// Force summarizes even below the summarize threshold (a /compact the
	// user asked for).
	Force bool
	// Focus, when not empty, says what the summary must keep (the host's
	// custom instructions).
	Focus string
	// CurrentTokens is the host's estimate of the context's size (0 when
	// unknown); when it is above the engine's own estimate it is the one
	// compared with the thresholds, except for Target TargetBudget.
	CurrentTokens int
	// Target is the host's compaction target: TargetBudget, TargetThreshold
	// or "" (unknown, treated as TargetThreshold).
	Target string
}

// The host's compaction targets. TargetBudget asks that the context fit
// the window: the host asks so before a turn and after an overflow, and
// measures its whole stored history, most of which the view does not send.
// Such a call is judged by the view's own (calibrated) size: below the
// full threshold it is "already under target" and nothing is summarized
// (the host treats that reason as a benign no-op). TargetThreshold is a
// compaction the user asked for (/compact): it summarizes whenever
// something can be summarized.
const (
	TargetBudget    = "budget"
	TargetThreshold = "threshold"
)

// CompactResult says what a compact call did.
type CompactResult struct {
	// Compacted is true when a summary was made.
	Compacted bool `json:"compacted"`
	// Reason says why nothing was made, or what was made.
	Reason string `json:"reason"`
	// Layer is "manual" (the older messages up to the kept part), "full"
	// (everything before the last turn) or "condense" (the summaries at
	// the top, when no message could be summarized); "" when nothing was
	// made.
	Layer string `json:"layer"`
	// TokensBefore and TokensAfter are the view's size before and after, in
	// calibrated tokens, the overhead included.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Summary is the summary made, nil when none was.
	Summary *SummaryRecord `json:"summary,omitempty"`
}

// Compact makes a summary of the session's view now, synchronously with
// ctx: the messages after the summaries already in the view, up to the cut
// that keeps min(Settings.SummarizeKeepRecent, 30 % of the window) tokens
// (layer "manual"), or up to the last turn when that leaves the view above
// the full threshold or keeps everything. When no message can be
// summarized it condenses the summaries at the top instead, if there are
// two or more. Without o.Force it does nothing below the summarize
// threshold. The model gets ctx's time less a margin; when it fails or
// does not answer the deterministic summary is used, marked degraded. A
// summary being written in the background is abandoned. When nothing can
// be made smaller, Compacted is false and Reason says why. The host's rows
// are only read; the state is saved. With Engine.ReadOnly nothing is made
// (a summary that is not saved could not be described or expanded):
// Compacted is false, Reason starts with "read-only", and the sizes are
// those of the view as it is.
func (e *Engine) Compact(ctx context.Context, ref bs.SessionRef, o CompactOptions) (CompactResult, error) {
	var res CompactResult
	if e.Store == nil {
		return res, fmt.Errorf("compact %s: the engine has no store: %w", ref, bs.ErrInvalid)
	}
	if o.TokenBudget < 0 || o.CurrentTokens < 0 {
		return res, fmt.Errorf("compact %s: expected a token budget and a current token count ≥ 0, got %d and %d: %w",
			ref, o.TokenBudget, o.CurrentTokens, bs.ErrInvalid)
	}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sj := ss.job; sj != nil && sj.work != nil && !sj.work.abandoned && !e.ReadOnly {
		select {
		case <-sj.done:
		default:
			// The summary being written in the background gives way: a
			// compact call is synchronous.
			sj.work.abandoned = true
			sj.work.cancel()
		}
	}
	st, err := e.loadState(ref)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", ref, err)
	}
	tr, err := e.Store.Open(ctx, ref, nil)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", ref, err)
	}
	msgs, err := e.messages(ctx, tr, nil, st)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", ref, err)
	}
	window := o.TokenBudget
	if window <= 0 {
		window = e.Settings.ContextWindow
	}
	if window <= 0 {
		window = 200000
	}
	base := 0
	for i := range msgs {
		base += msgs[i].Tokens
	}
	in := summaryInput{Ref: ref, Tr: tr, Msgs: msgs, Window: window, State: st, Force: o.Force, Focus: o.Focus,
		Tokens: st.Calibration.Overhead + int(scale(st)*float64(base))}
	p := &planner{e: e, in: &in, ss: ss}
	if !e.ReadOnly {
		p.harvest(nil)
	}
	tops, pos := p.applied(true)
	res.TokensBefore = p.viewTokens(tops, pos)
	res.TokensAfter = res.TokensBefore
	if e.ReadOnly {
		res.Reason = readOnlyReason
		return res, nil
	}
	sumT, fullT := p.thresholds()
	if o.Target == TargetBudget && res.TokensBefore <= fullT {
		res.Reason = fmt.Sprintf("already under target: the context engine's view holds %d tokens, below the full threshold of %d tokens (%.0f%% of the %d-token window); the host's count of %d tokens includes history the view does not send",
			res.TokensBefore, fullT, 100*float64(fullT)/float64(window), window, o.CurrentTokens)
		return res, e.saveCompact(ref, st)
	}
	cur := max(res.TokensBefore, o.CurrentTokens)
	if o.Target == TargetBudget {
		cur = res.TokensBefore
	}
	if !o.Force && cur <= sumT {
		res.Reason = fmt.Sprintf("nothing to compact: the context holds %d tokens, below the summarize threshold of %d tokens (%.0f%% of the %d-token window)",
			cur, sumT, 100*float64(sumT)/float64(window), window)
		return res, e.saveCompact(ref, st)
	}
	ok := validCuts(msgs)
	layer, cut := layerManual, keepCut(msgs, ok, pos, p.keep())
	if cut <= pos || cur-p.spanCost(pos, cut) > fullT {
		layer, cut = layerFull, lastCut(ok, pos)
	}
	var j *job
	switch {
	case cut > pos:
		if j, err = e.messageJob(ctx, &in, layer, pos, cut); err != nil {
			return res, fmt.Errorf("compact %s: %w", ref, err)
		}
	case len(tops) >= 2:
		layer, j = layerCondense, condenseJob(tops)
	default:
		res.Reason = fmt.Sprintf("nothing to compact: the %s after the summaries %s the last turn (no valid cut point before it), and %s %s nothing to condense",
			plural.Count(len(msgs)-pos, "message", "messages"), plural.Noun(len(msgs)-pos, "is", "are"), plural.Count(len(tops), "summary", "summaries"), plural.Noun(len(tops), "leaves", "leave"))
		return res, e.saveCompact(ref, st)
	}
	// The model gets the call's time but a margin, so that the
	// deterministic summary can still be written when it does not answer.
	mctx, cancel := modelContext(ctx)
	var sum compact.Summary
	if j.input == nil && j.lines != nil {
		sum, err = e.writeLines(j.lines, o.Focus)
	} else {
		sum = e.write(mctx, j.input, o.Focus)
	}
	cancel()
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", ref, err)
	}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("compact %s: %w", ref, err)
	}
	// A summary that would not make the view smaller is not kept.
	trial := *st
	trial.Summaries = append([]SummaryRecord(nil), st.Summaries...)
	e.record(&trial, j, sum)
	tin := in
	tin.State = &trial
	tp := &planner{e: e, in: &tin, ss: ss}
	ttops, tpos := tp.applied(false)
	after := tp.viewTokens(ttops, tpos)
	if after >= res.TokensBefore {
		res.Reason = fmt.Sprintf("nothing to compact: a summary of what can be summarized would not make the context smaller (%d tokens before, %d after)",
			res.TokensBefore, after)
		return res, e.saveCompact(ref, st)
	}
	*st = trial
	rec := st.Summaries[len(st.Summaries)-1]
	e.logSummary(ref, &rec)
	res.Compacted, res.Layer, res.TokensAfter, res.Summary = true, layer, after, &rec
	res.Reason = fmt.Sprintf("summarized %s into %s (level %d)", plural.Count(len(leaves(index(st), &rec)), "message", "messages"), rec.ID, rec.Level)
	if rec.Degraded {
		res.Reason += "; degraded: " + rec.Reason
	}
	return res, e.saveCompact(ref, st)
}

// readOnlyReason is a compact call's reason in read-only mode.
const readOnlyReason = "read-only: nothing is written"

// saveCompact saves the state a compact call changed.
func (e *Engine) saveCompact(ref bs.SessionRef, st *State) error {
	if err := e.saveState(ref, st); err != nil {
		return fmt.Errorf("compact %s: save the engine's state: %w", ref, err)
	}
	return nil
}

// modelContext returns ctx with its deadline moved earlier by a tenth of
// the time left (at least 50 ms, at most 2 s); ctx itself when it has no
// deadline.
func modelContext(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	left := time.Until(dl)
	return context.WithDeadline(ctx, dl.Add(-min(max(left/10, 50*time.Millisecond), 2*time.Second)))
}
