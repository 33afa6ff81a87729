package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// Overhead returns 0: a plain tokenizer knows nothing outside the
// transcript.
func (e TokenizerEstimator) Overhead() int { return 0 }

// Predict returns the sum of the tokenizer's counts of the lines.
func (e TokenizerEstimator) Predict(messages [][]byte) int {
	t := tokenizer(e.Tokenizer)
	n := 0
	for _, m := range messages {
		n += t.Tokens(m)
	}
	return n
}

// TokenizerName returns the tokenizer's name ("chars/4" for a nil one).
func (e TokenizerEstimator) TokenizerName() string { return tokenizer(e.Tokenizer).Name() }

// Choose returns the layer the thresholds of s pick for st: full above
// FullTriggerPercent, summarize above SummarizeTriggerPercent, prune above
// PruneTriggerPercent when the tool output holds more than
// PruneMinToolTokens, else LayerNone.
func Choose(st StatusReport, s Settings) Layer {
	switch {
	case st.Percent > s.FullTriggerPercent:
		return LayerFull
	case st.Percent > s.SummarizeTriggerPercent:
		return LayerSummarize
	case st.Percent > s.PruneTriggerPercent && st.ToolOutputTokens > s.PruneMinToolTokens:
		return LayerPrune
	}
	return LayerNone
}

// RiskOf grades a number of compactions on the active path: low below
// warnAt, medium from warnAt, high from hardWarnAt.
func RiskOf(compactions, warnAt, hardWarnAt int) Risk {
	switch {
	case compactions >= hardWarnAt:
		return RiskHigh
	case compactions >= warnAt:
		return RiskMedium
	}
	return RiskLow
}

// settingsOr returns s, or DefaultSettings when s is the zero value.
func settingsOr(s Settings) Settings {
	if s == (Settings{}) {
		return DefaultSettings()
	}
	return s
}

// sqliteRefusal says why a session of OpenClaw's SQLite store is not
// compacted here.
const sqliteRefusal = "the session is in OpenClaw's SQLite store, where BrainSurgeon never inserts rows (a row needs OpenClaw's identity, projection and idempotency rows); compact it with the host's own /compact"

// refusal says why the store of tr cannot take a compaction entry, or "".
func refusal(tr bs.Transcript) string {
	if tr.Ref().Backend == bs.BackendSQLite {
		return sqliteRefusal
	}
	if tr.Header().Version < 2 {
		return fmt.Sprintf("the transcript is format v%d, whose entries have no ids for firstKeptEntryId; let the host migrate it first", tr.Header().Version)
	}
	return ""
}

// pathCompactions returns the indexes (into Nodes) of the compactions on
// the active path, oldest first, and how many compaction entries are off
// the path.
func pathCompactions(tr bs.Transcript) (on []int, off int) {
	nodes := tr.Nodes()
	total := len(bs.Compactions(nodes))
	for _, i := range tr.ActivePath() {
		if nodes[i].Type == "compaction" {
			on = append(on, i)
		}
	}
	return on, total - len(on)
}

// percent returns tokens as a share of window, rounded to 0.1.
func percent(tokens, window int) float64 {
	if window <= 0 {
		return 0
	}
	return math.Round(float64(tokens)*1000/float64(window)) / 10
}

// measured is what a status report is judged from: the counts of a
// transcript's context, which do not depend on the thresholds or the
// window.
type measured struct {
	ref                        bs.SessionRef
	tokenizer, model, refusal  string
	tokens, tools, compactions int
	lastUsage                  int
	lastAt                     *time.Time
}

// measure counts the context v holds.
func measure(v *view) measured {
	tr := v.tr
	m := measured{ref: tr.Ref(), tokens: v.tokens, tokenizer: v.est.TokenizerName(), refusal: refusal(tr)}
	m.model, m.lastUsage = v.recorded()
	m.tools, _ = v.toolTokens()
	on, _ := pathCompactions(tr)
	m.compactions = len(on)
	if len(on) > 0 {
		at := tr.Nodes()[on[len(on)-1]].Timestamp
		if !at.IsZero() {
			m.lastAt = &at
		}
	}
	return m
}

// status builds the StatusReport of a loaded context.
func status(v *view, s Settings) StatusReport {
	m := measure(v)
	return judge(m, s, resolveWindow(v.window, m.ref, m.model, s))
}

// judge builds the StatusReport of m against the thresholds of s and the
// window w.
func judge(m measured, s Settings, w Window) StatusReport {
	r := StatusReport{
		Session: m.ref.String(), Backend: backendName(m.ref),
		Tokens: m.tokens, LastUsageTokens: m.lastUsage, Window: w.Tokens, Percent: percent(m.tokens, w.Tokens),
		WindowSource: w.Source, WindowFrom: w.From, Model: m.model,
		Tokenizer: m.tokenizer, ToolOutputTokens: m.tools,
		AutoEnabled: s.AutoEnabled, TriggerPercent: s.PruneTriggerPercent,
		Compactions: m.compactions,
		Warnings:    []string{}, Recommendations: []string{},
	}
	if m.lastAt != nil {
		at := *m.lastAt // the report's own: m may be cached
		r.LastCompactionAt = &at
	}
	tools := m.tools
	r.Risk = RiskOf(r.Compactions, s.WarnAt, s.HardWarnAt)
	r.Layer = Choose(r, s)
	r.Refusal = m.refusal
	r.CanCompact = r.Refusal == ""
	switch r.Risk {
	case RiskHigh:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s on the active path (hard limit %d): the history has been summarized again and again and early details are likely lost", plural.Count(r.Compactions, "compaction", "compactions"), s.HardWarnAt))
		r.Recommendations = append(r.Recommendations, "start a new session from an export (brainsurgeon context export) or a branch rather than compacting again")
	case RiskMedium:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s on the active path (soft limit %d): summaries of summaries lose detail", plural.Count(r.Compactions, "compaction", "compactions"), s.WarnAt))
	}
	switch r.Layer {
	case LayerFull:
		r.Warnings = append(r.Warnings, fmt.Sprintf("context at %.1f%% of the window, above the full-compaction threshold %.0f%%", r.Percent, s.FullTriggerPercent))
		r.Recommendations = append(r.Recommendations, "brainsurgeon compact --layer full (keeps only the last turn)")
	case LayerSummarize:
		r.Warnings = append(r.Warnings, fmt.Sprintf("context at %.1f%% of the window, above the summarize threshold %.0f%%", r.Percent, s.SummarizeTriggerPercent))
		r.Recommendations = append(r.Recommendations, "brainsurgeon compact (summarizes all but the most recent tokens)")
	case LayerPrune:
		r.Recommendations = append(r.Recommendations, fmt.Sprintf("brainsurgeon compact --layer prune (tool output holds %d tokens)", tools))
	}
	if r.Layer == LayerSummarize || r.Layer == LayerFull {
		if !r.CanCompact {
			r.Recommendations = append(r.Recommendations, "compaction is not possible here: "+r.Refusal)
		}
	}
	return r
}

// backendName returns the ref's backend, BackendJSONL when empty.
func backendName(ref bs.SessionRef) string {
	if ref.Backend == "" {
		return bs.BackendJSONL
	}
	return ref.Backend
}

// Status reports the size of tr's context against the window of the
// session's model (see TokenOptions.Window and [ModelWindow]; else
// s.ContextWindow), the compactions on its active path and the risk they
// carry. A zero s means DefaultSettings. It reads the lines of the current
// context only (see tokens.Learn); [StatusCache] remembers the result for
// each version of a transcript.
func Status(ctx context.Context, tr bs.Transcript, s Settings, tok TokenOptions) (StatusReport, error) {
	if tr == nil {
		return StatusReport{}, invalidf("compact status: no transcript")
	}
	v, err := load(ctx, tr, tok)
	if err != nil {
		return StatusReport{}, fmt.Errorf("compact status: %w", err)
	}
	return status(v, settingsOr(s)), nil
}

// Inspect reports where the tokens of tr's context are: conversation,
// tool output, the estimator's overhead, the part the summarize layer
// would keep and the part it would replace, what each layer would save,
// and the pinned entries. Savings are estimates made without running a
// summarizer: a summary is assumed to take a tenth of what it replaces,
// at most 2,000 tokens.
func Inspect(ctx context.Context, tr bs.Transcript, s Settings, tok TokenOptions) (InspectReport, error) {
	if tr == nil {
		return InspectReport{}, invalidf("compact inspect: no transcript")
	}
	s = settingsOr(s)
	v, err := load(ctx, tr, tok)
	if err != nil {
		return InspectReport{}, fmt.Errorf("compact inspect: %w", err)
	}
	r := InspectReport{StatusReport: status(v, s), Pinned: []Pinned{}}
	conv := 0
	if v.prior != nil {
		conv += v.prior.tokens
	}
	for i := range v.msgs {
		conv += v.msgs[i].tokens
		if v.msgs[i].pinned {
			r.Pinned = append(r.Pinned, Pinned{ID: v.msgs[i].id, Line: v.msgs[i].line, Tokens: v.msgs[i].tokens})
		}
	}
	r.Conversation = Conversation{Tokens: conv, Messages: v.ctx.Count()}
	r.Conversation.ToolOutputs.Tokens, r.Conversation.ToolOutputs.Count = v.toolTokens()
	r.SystemPrompt = MessageCount{Tokens: v.est.Overhead()}
	ok := validCuts(v.msgs)
	cut := keepCut(v.msgs, ok, s.SummarizeKeepRecent)
	split := func(c int) (before, after MessageCount) {
		if c < 0 {
			c = 0
		}
		for i := range v.msgs {
			if i < c {
				before.Tokens += v.msgs[i].tokens
				before.Messages++
			} else {
				after.Tokens += v.msgs[i].tokens
				after.Messages++
			}
		}
		return before, after
	}
	r.Compactable, r.Protected = split(cut)
	saving := func(replaced int) int {
		if replaced <= 0 {
			return 0
		}
		return replaced - min(replaced/10, 2000)
	}
	r.Savings.Summarize = saving(r.Compactable.Tokens)
	if fc := lastCut(ok); fc > 0 {
		full, _ := split(fc)
		r.Savings.Full = saving(full.Tokens)
	}
	// The prune layer replaces the tool output outside the protected
	// recent tokens by placeholders (about 10 tokens each).
	acc := 0
	for i := len(v.msgs) - 1; i >= 0; i-- {
		m := &v.msgs[i]
		protected := acc < s.PruneProtectRecent
		acc += m.tokens
		if protected || !m.toolResult || m.pinned || m.tokens < 125 {
			continue
		}
		r.Savings.Prune += m.tokens - 10
	}
	return r, nil
}

// History lists the compactions on tr's active path, newest first; depth
// bounds how many events are returned (0 or less: all). Compactions
// counts them all, and Risk grades the count with the default thresholds.
// It reads the compaction lines only.
func History(ctx context.Context, tr bs.Transcript, depth int) (HistoryReport, error) {
	if tr == nil {
		return HistoryReport{}, invalidf("compact history: no transcript")
	}
	on, off := pathCompactions(tr)
	def := DefaultSettings()
	r := HistoryReport{Session: tr.Ref().String(), Compactions: len(on), OffPath: off, Events: []Event{},
		Risk: RiskOf(len(on), def.WarnAt, def.HardWarnAt)}
	if depth <= 0 || depth > len(on) {
		depth = len(on)
	}
	pick := on[len(on)-depth:]
	nodes := tr.Nodes()
	lines := make([]int, len(pick))
	for i, k := range pick {
		lines[i] = nodes[k].Line
	}
	byLine := make(map[int]Event, len(pick))
	if len(lines) > 0 {
		for e, err := range tr.Lines(ctx, lines) {
			if err != nil {
				return HistoryReport{}, fmt.Errorf("compact history of %s: %w", tr.Ref(), err)
			}
			byLine[e.Line] = event(e.Raw)
		}
	}
	for i := len(pick) - 1; i >= 0; i-- {
		n := &nodes[pick[i]]
		ev := byLine[n.Line]
		ev.ID, ev.Line, ev.At = n.ID, n.Line, n.Timestamp
		r.Events = append(r.Events, ev)
	}
	return r, nil
}

// event reads one compaction line. A line that does not parse gives an
// event with only its place (filled by the caller).
func event(raw []byte) Event {
	var j compactionJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return Event{}
	}
	ev := Event{FirstKeptEntryID: j.FirstKeptEntryID, SummaryChars: utf8.RuneCountInString(j.Summary)}
	if j.TokensBefore != nil {
		ev.TokensBefore = *j.TokensBefore
	}
	if j.FromHook != nil {
		ev.FromHook = *j.FromHook
	}
	if j.Details != nil && j.Details.BrainSurgeon != nil {
		o := j.Details.BrainSurgeon
		ev.BrainSurgeon = true
		ev.Trigger, ev.Layer = o.Trigger, o.Layer
		ev.TokensAfter, ev.MessagesCompacted = o.TokensAfter, o.MessagesCompacted
		ev.Focus, ev.Degraded = o.Focus, o.Degraded
	}
	return ev
}

// quietFor returns how long ago the session was last changed: the store's
// modification time when it tells (Stat), else the newest entry
// time in the transcript.
func quietFor(ctx context.Context, st bs.Store, ref bs.SessionRef, tr bs.Transcript, now time.Time) time.Duration {
	if ss, err := st.Stat(ctx, ref); err == nil && !ss.ModTime.IsZero() {
		return now.Sub(ss.ModTime)
	}
	var last time.Time
	for _, n := range tr.Nodes() {
		if n.Timestamp.After(last) {
			last = n.Timestamp
		}
	}
	if last.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return now.Sub(last)
}
