package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// invalidf returns an error wrapping bs.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, bs.ErrInvalid)...)
}

// Compact runs one compaction layer on the session ref of st.
//
// With Options.Layer empty the thresholds choose the layer (see Choose);
// when none is crossed nothing happens and Result.Layer is empty. The
// prune layer runs the extraction engine with the most recent
// Settings.PruneProtectRecent tokens protected. The summarize and full
// layers summarize the context from the previous compaction's
// firstKeptEntryId (the previous summary included) up to a valid cut
// point, and append a compaction entry in pi's format through the store's
// safe append.
//
// Refusals, before anything is summarized or written: a session in use
// (the store's CheckIdle; the error wraps bs.ErrBusy and says why; the store's
// quiet period, a prompt-cache rule, applies to automatic compactions only,
// see bs.ExplicitWrite), an automatic compaction within Settings.AutoQuiet
// of the session's last change (ErrBusy), a store that cannot append such an
// entry (OpenClaw's SQLite store, where BrainSurgeon never inserts rows) or
// a v1 transcript (bs.ErrUnsupported). A transcript that changed between the
// read and the append is refused with bs.ErrChanged. A summarizer error is
// returned wrapped; falling back to another summarizer is the summarizer's
// business (summarize.Escalate). A compaction that would not make the
// context smaller is not written and says so in Result.Warning.
func Compact(ctx context.Context, st bs.Store, ref bs.SessionRef, o Options) (Result, error) {
	name := ref.String()
	res := Result{Session: name, DryRun: o.DryRun, Warnings: []string{}}
	if st == nil {
		return res, invalidf("compact %s: no store", name)
	}
	s := settingsOr(o.Settings)
	trig := o.Trigger
	switch trig {
	case "":
		trig = TriggerManual
	case TriggerManual, TriggerAuto:
	default:
		return res, invalidf("compact %s: unknown trigger %q (expected manual or auto)", name, trig)
	}
	if _, err := ParseLayer(string(o.Layer)); err != nil {
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	log := bs.LoggerOrDiscard(o.Logger)
	now := bs.Now(o.Clock)
	if st.Name() == bs.BackendSQLite && (o.Layer == LayerSummarize || o.Layer == LayerFull) {
		return res, fmt.Errorf("compact %s: refused: %s: %w", name, sqliteRefusal, bs.ErrUnsupported)
	}
	// A compaction the user asks for breaks the prompt cache anyway, so the
	// store's quiet period applies to automatic ones only; a session in use
	// is refused either way.
	wctx := ctx
	if trig == TriggerManual {
		wctx = bs.ExplicitWrite(ctx)
	}
	if !o.DryRun {
		if err := st.CheckIdle(wctx, ref); err != nil {
			return res, fmt.Errorf("compact %s: refused, the session is in use: %w", name, err)
		}
	}
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	if trig == TriggerAuto {
		if q := quietFor(ctx, st, tr.Ref(), tr, now); q < s.AutoQuiet {
			return res, fmt.Errorf("compact %s: automatic compaction refused: the session changed %s ago, within the %s quiet period that keeps the prompt cache: %w",
				name, q.Round(1e9), s.AutoQuiet, bs.ErrBusy)
		}
	}
	v, err := load(ctx, tr, o.Tokens)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	stat := status(v, s)
	res.TokensBefore, res.TokensAfter = v.tokens, v.tokens
	layer := o.Layer
	if layer == LayerNone {
		layer = stat.Layer
	}
	if layer == LayerNone {
		res.Warning = fmt.Sprintf("nothing to do: the context holds %d tokens, %.1f%% of the %d-token window, below every threshold", v.tokens, stat.Percent, stat.Window)
		res.Warnings = append(res.Warnings, res.Warning)
		res.Reason = "nothing to compact: " + strings.TrimPrefix(res.Warning, "nothing to do: ")
		return res, nil
	}
	res.Layer = layer
	if layer == LayerPrune {
		return prune(wctx, st, tr.Ref(), o, s, v, res, log)
	}
	if why := refusal(tr); why != "" {
		return res, fmt.Errorf("compact %s: refused: %s: %w", name, why, bs.ErrUnsupported)
	}
	ok := validCuts(v.msgs)
	cut := lastCut(ok)
	if layer == LayerSummarize {
		cut = keepCut(v.msgs, ok, s.SummarizeKeepRecent)
		if trig == TriggerAuto && cut > 0 {
			// The agent asked for those values: an automatic summary must
			// not take them out of the context within the protection
			// window (one the user asks for is not held back).
			restored, err := restoredTimes(ctx, o.Restores, tr.Ref(), v.msgs)
			if err != nil {
				return res, fmt.Errorf("compact %s: read the restore log: %w", name, err)
			}
			if c := keepRestored(v.msgs, ok, cut, restored, now, keepAfterRestore(o.Policy)); c != cut {
				log.Debug("compaction: the cut keeps entries restored within keep_after_restore_seconds", "session", name, "cut", cut, "kept_from", c)
				if c < 1 {
					res.Warning = "nothing to compact: the agent restored a value within keep_after_restore_seconds and no valid cut point lies before it"
					res.Warnings = append(res.Warnings, res.Warning)
					res.Reason = res.Warning
					return res, nil
				}
				cut = c
			}
		}
	}
	if cut < 1 {
		res.Warning = fmt.Sprintf("nothing to compact: the context's %s no valid cut point with anything before it (layer %s)", plural.Count(len(v.msgs), "message leaves", "messages leave"), layer)
		res.Warnings = append(res.Warnings, res.Warning)
		res.Reason = res.Warning
		return res, nil
	}
	if o.Summarizer == nil {
		return res, invalidf("compact %s: the %s layer needs a summarizer (Options.Summarizer is nil)", name, layer)
	}
	span := v.msgs[:cut]
	input := make([][]byte, 0, len(span)+1)
	if v.prior != nil {
		input = append(input, v.prior.raw)
	}
	for i := range span {
		input = append(input, span[i].raw)
	}
	sum, err := o.Summarizer.Summarize(ctx, input, o.Focus)
	if err != nil {
		return res, fmt.Errorf("compact %s: summarizer failed: %w", name, err)
	}
	text := sum.Text
	if strings.TrimSpace(text) == "" {
		return res, fmt.Errorf("compact %s: the summarizer returned an empty summary: %w", name, bs.ErrInvalid)
	}
	if sum.Degraded {
		res.Degraded = true
		res.DegradedReason = sum.Reason
		if res.DegradedReason == "" {
			res.DegradedReason = "the summary was made without a model"
		}
	}
	summary, pinned := withPinned(text, v.prior, span)
	res.Pinned = len(pinned)
	read, modified := fileLists(v.prior, span)
	id, err := bs.NewEntryID(func(id string) bool { _, taken := tr.Node(id); return taken })
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	var parent *string
	if path := tr.ActivePath(); len(path) > 0 {
		p := tr.Nodes()[path[len(path)-1]].ID
		parent = &p
	}
	e := entryJSON{Type: "compaction", ID: id, ParentID: parent, Timestamp: bs.FormatTimestamp(now),
		Summary: summary, FirstKeptEntryID: v.msgs[cut].id, TokensBefore: int64(v.tokens), FromHook: true,
		Details: entry.CompactionDetails[ours]{ReadFiles: read, ModifiedFiles: modified, BrainSurgeon: ours{
			Layer: layer, Trigger: trig, MessagesCompacted: cut, Focus: o.Focus,
			Degraded: res.Degraded, DegradedReason: res.DegradedReason, Summarizer: summarizerName(o.Summarizer, sum),
			Covers: []string{}, Pinned: pinned,
		}}}
	if v.prior != nil {
		e.Details.BrainSurgeon.Covers = []string{v.prior.id}
		e.Details.BrainSurgeon.Level = v.prior.level + 1
	}
	// tokensAfter is predicted from the entry as it will be written, and
	// the count is stored in the entry: predict until the number agrees
	// with the line that holds it.
	after := func(line []byte) int {
		lines := make([][]byte, 0, len(v.msgs)-cut+1)
		lines = append(lines, line)
		for i := cut; i < len(v.msgs); i++ {
			lines = append(lines, v.msgs[i].raw)
		}
		return v.est.Predict(lines)
	}
	e.Details.BrainSurgeon.TokensAfter = v.tokens
	var line []byte
	for range 4 { // the number's width settles in two or three rounds
		if line, err = marshalEntry(&e); err != nil {
			return res, fmt.Errorf("compact %s: %w", name, err)
		}
		n := after(line)
		if n == e.Details.BrainSurgeon.TokensAfter {
			break
		}
		e.Details.BrainSurgeon.TokensAfter = n
	}
	if line, err = marshalEntry(&e); err != nil {
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	res.TokensAfter = e.Details.BrainSurgeon.TokensAfter
	res.MessagesCompacted = cut
	res.FirstKeptEntryID = e.FirstKeptEntryID
	res.Summary = summary
	if res.Details, err = entry.Marshal(e.Details); err != nil {
		return res, fmt.Errorf("compact %s: encode the details: %w", name, err)
	}
	res.warn(layer, stat.Compactions+1, s)
	if res.TokensAfter >= res.TokensBefore {
		res.Warning = fmt.Sprintf("not written: the compaction would not make the context smaller (%d tokens before, %d after)", res.TokensBefore, res.TokensAfter)
		res.Warnings = append([]string{res.Warning}, res.Warnings...)
		res.Reason = res.Warning
		return res, nil
	}
	if o.DryRun {
		res.Reason = "dry run: nothing was written"
		return res, nil
	}
	// The version is compared under the store's locks.
	if err := st.AppendAt(wctx, tr.Ref(), tr.Version(), [][]byte{line}); err != nil {
		if errors.Is(err, bs.ErrUnsupported) {
			return res, fmt.Errorf("compact %s: refused: the store cannot append a compaction entry: %w", name, err)
		}
		if errors.Is(err, bs.ErrChanged) {
			return res, fmt.Errorf("compact %s: the transcript changed while the summary was written; nothing was appended, run it again: %w", name, err)
		}
		return res, fmt.Errorf("compact %s: %w", name, err)
	}
	res.EntryID = id
	log.Info("compaction", "session", name, "layer", layer, "trigger", trig, "entry", id,
		"first_kept", res.FirstKeptEntryID, "tokens_before", res.TokensBefore, "tokens_after", res.TokensAfter,
		"messages_compacted", cut, "degraded", res.Degraded)
	return res, nil
}

// warn fills the warnings of a summarize or full compaction that makes
// the count-th compaction on the active path.
func (r *Result) warn(layer Layer, count int, s Settings) {
	var ws []string
	if layer == LayerFull {
		ws = append(ws, "full compaction: only the last turn is kept verbatim, everything before it is now a summary")
	}
	if r.Degraded {
		ws = append(ws, "degraded summary: "+r.DegradedReason)
	}
	switch RiskOf(count, s.WarnAt, s.HardWarnAt) {
	case RiskHigh:
		ws = append(ws, fmt.Sprintf("this is compaction %d on the active path (hard limit %d): early details are likely lost; consider a new session from an export", count, s.HardWarnAt))
	case RiskMedium:
		ws = append(ws, fmt.Sprintf("this is compaction %d on the active path (soft limit %d): summaries of summaries lose detail", count, s.WarnAt))
	}
	r.Warnings = append(r.Warnings, ws...)
	if len(ws) > 0 && r.Warning == "" {
		r.Warning = ws[0]
	}
}

// summarizerName names what wrote sum in details.brainsurgeon: the
// summary's Method, else the summarizer's type.
func summarizerName(s Summarizer, sum Summary) string {
	if sum.Method != "" {
		return sum.Method
	}
	return fmt.Sprintf("%T", s)
}

// keepAfterRestore is the restore protection window of policy p, or
// extract.DefaultPolicy's when p is the zero value.
func keepAfterRestore(p extract.Policy) time.Duration {
	if !p.Enabled && p.KeepAfterRestore == 0 {
		return extract.DefaultPolicy().KeepAfterRestore
	}
	return p.KeepAfterRestore
}

// prune runs the prune layer: the extraction engine, with the most recent
// Settings.PruneProtectRecent tokens protected.
func prune(ctx context.Context, st bs.Store, ref bs.SessionRef, o Options, s Settings, v *view, res Result, log bs.Logger) (Result, error) {
	pol := o.Policy
	if !pol.Enabled {
		pol = extract.DefaultPolicy()
		pol.KeepRecent = 0
		pol.AgeThreshold = 0
		if o.Policy.KeepAfterRestore > 0 {
			// The configured restore protection holds also where the rest
			// of the policy is the default.
			pol.KeepAfterRestore = o.Policy.KeepAfterRestore
		}
	}
	if pol.ProtectRecentTokens == 0 {
		pol.ProtectRecentTokens = s.PruneProtectRecent
	}
	if o.Side == nil && !o.DryRun {
		return res, invalidf("compact %s: the prune layer needs a side store (Options.Side is nil)", res.Session)
	}
	x := extract.Extractor{Policy: pol, Store: st, Side: o.Side, Tokenizer: v.tok, Logger: log, Clock: o.Clock, DryRun: o.DryRun,
		Restores: o.Restores}
	r, err := x.Run(ctx, ref)
	res.Prune = r
	if r != nil {
		res.MessagesCompacted = r.Entries
		res.TokensAfter = res.TokensBefore - int(tokens.OfBytes(v.tok, r.BytesSaved))
		if r.Skipped != "" && r.SkipCode != extract.SkipDryRun {
			res.Warning = "prune: " + r.Skipped
			res.Warnings = append(res.Warnings, res.Warning)
		}
		switch {
		case r.SkipCode == extract.SkipDryRun:
			res.Reason = "dry run: nothing was written"
		case !r.Written:
			res.Reason = "prune: " + r.Skipped
		}
	}
	if err != nil {
		return res, fmt.Errorf("compact %s: prune: %w", res.Session, err)
	}
	return res, nil
}
