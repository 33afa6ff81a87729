package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// ViewValue is the content of one entry as the host stores it: what a
// restore of a value the view collapsed gives back.
type ViewValue struct {
	// EntryID is the entry's id.
	EntryID string `json:"entry_id"`
	// Content is the bytes of the entry's "message.content" as stored in
	// the host's row or line, exactly.
	Content json.RawMessage `json:"content"`
	// Collapsed is true when the view showed the entry collapsed until
	// this call.
	Collapsed bool `json:"collapsed"`
}

// maxWarning is the longest degradation warning, in bytes.
const maxWarning = 300

// Assemble answers one turn of the host's context engine: it opens the
// session, joins the host's messages (req.Messages) to the context
// messages of its active path, decides the collapse (layer 1) and the
// summaries (layers 2 and 3), predicts the size of the turn's first model
// request, records the turn in the session's state and returns the view.
//
// When the host's messages cannot be joined to the session's (none
// matches, or a message the view would summarize is not the session's),
// the view is a passthrough: View.Passthrough says why, and the host's
// messages are sent unchanged. That is an answer, not an error; Assemble
// returns an error only when the ids are not acceptable (wrapping
// bs.ErrInvalid), the session cannot be read (bs.ErrNotFound when it is
// unknown), or the state cannot be read.
func (e *Engine) Assemble(ctx context.Context, ref bs.SessionRef, req Request) (View, error) {
	// The time taken is the wall clock's (monotonic), never Now's.
	start := time.Now()
	name := ref.String()
	if e.Store == nil {
		return View{}, fmt.Errorf("engine assemble %s: expected an Engine with a Store, found none: %w", name, bs.ErrInvalid)
	}
	if _, err := e.statePath(ref); err != nil {
		return View{}, fmt.Errorf("engine assemble %s: %w", name, err)
	}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err := ss.resolveBase(&req); err != nil {
		return View{}, fmt.Errorf("engine assemble %s: %w", name, err)
	}
	req.batchWindow = requestWindow(ss, &req)
	st, err := e.stateFor(ss, ref)
	if err != nil {
		return View{}, fmt.Errorf("engine assemble %s: %w", name, err)
	}
	c, tr, err := e.readSession(ctx, ss, ref)
	if err != nil {
		ss.dropView()
		return View{}, fmt.Errorf("engine assemble %s: %w", name, err)
	}
	var prev *Turn
	if n := len(st.Turns); n > 0 {
		p := st.Turns[n-1]
		prev = &p
	}
	// The join kept from the last call of this kind, extended (more)
	// past its first shared messages, lets layer 1 visit only what
	// changed.
	var prevJ *join
	shared := 0
	if a := ss.acked[req.HostCall]; a != nil {
		prevJ, shared = a.j, a.jValid
	}
	j := ss.joinOf(&req, c, e.noIncremental)
	c.line = lineReader(ctx, e.Store, ref, tr)
	defer func() { c.line, c.raws = nil, nil }()
	var l *layer1
	if e.noIncremental {
		l = e.layer1(ctx, ref, c, j, &req, st)
	} else {
		l = e.layer1Inc(ctx, ref, c, j, prevJ != nil && j == prevJ, shared, &req, st)
	}
	view := View{Replace: []Replacement{}, Layers: []string{}, Matched: l.matched, Unmatched: l.unmatched}
	// sentIdx(i) reports whether host message i matched.
	sentIdx := func(i int) bool { return i < len(j.hostK) && j.hostK[i] >= 0 }
	if len(req.Messages) > 0 && l.matched == 0 {
		view.Passthrough = fmt.Sprintf("none of the host's %d messages matched a message of the session's active path (%d context messages): expected the same role, timestamp and tool-call id in order",
			len(req.Messages), len(l.st))
	}
	// The host hands a loop-hook call the messages of the view it was
	// served (the host keeps them as its own): its first message is then
	// the view's summary, which the session does not store. It stands for
	// the messages the summary covers.
	echo := len(req.Messages) > 0 && req.Messages[0].Role == "compactionSummary" && !sentIdx(0) &&
		ownSummaryAt(st, req.Messages[0].Timestamp)
	// The host's bootstrap message opens a history that starts with an
	// assistant message: never stored, it lies under the summary, which
	// then opens the view in its place.
	boot := len(req.Messages) > 0 && req.Messages[0].Bootstrap
	view.Bootstrap = boot
	if !echo {
		view.HostTrimmed = hostTrimmed(j)
	}
	var plan summaryPlan
	compactions := st.Compactions
	if view.Passthrough == "" {
		in := summaryInput{Ref: ref, Tr: tr, Msgs: l.msgs, Window: e.window(&req), State: st,
			Tokens: st.Calibration.Predict(charTokens(l.chars + req.PromptChars)), cache: c, cum: l.cum,
			open: func(ctx context.Context) (bs.Transcript, error) { return e.Store.Open(ctx, ref, nil) }}
		plan, err = e.planSummaries(ctx, in)
		if err != nil {
			e.log().Warn("engine: the view is served without its summary", "session", name, "err", err)
			plan = summaryPlan{}
		}
		if plan.Summary != nil {
			view.Summary = plan.Summary
			view.FirstKept = firstKeptIndex(l.msgs, plan.FirstKept)
			if echo || boot {
				// The summary served before, or the bootstrap.
				view.FirstKept = max(view.FirstKept, 1)
			}
			// The host's messages that matched nothing, ascending (the
			// join's list): the first in the span summarized.
			for _, i := range j.unmatched {
				if i >= view.FirstKept {
					break
				}
				if !sentIdx(i) && !((echo || boot) && i == 0) {
					view.Passthrough = fmt.Sprintf("host message %d (%s) matches no message of the session and lies in the span the summary replaces: summarizing it would lose it",
						i, req.Messages[i].Role)
					// The model never sees that summary: it must not
					// count toward the degradation warning.
					st.Compactions = compactions
					break
				}
			}
		}
	}
	// The view's size: the summary, then the host's messages from
	// FirstKept on, with the collapsed contents.
	chars := 0
	lastK := -1
	if view.Passthrough != "" {
		view.Summary, view.FirstKept = nil, 0
		chars = req.chars()
		e.log().Info("engine: the host's messages pass through unchanged", "session", name, "reason", view.Passthrough,
			"messages", len(req.Messages), "matched", l.matched)
	} else {
		for i := view.FirstKept; i < len(req.Messages); i++ {
			k := -1
			if i < len(j.hostK) {
				k = j.hostK[i]
			}
			if c, ok := l.repl.get(k); ok {
				chars += l.repl.n[k]
				view.Replace = append(view.Replace, Replacement{Index: i, Content: json.RawMessage(c)})
			} else {
				chars += req.Messages[i].Chars
			}
		}
		if view.Summary != nil {
			chars += len([]rune(view.Summary.Text))
		}
		view.Layers = append(view.Layers, l.layers...)
		for _, x := range plan.Layers {
			view.Layers = appendOnce(view.Layers, x)
		}
	}
	if j.next > 0 {
		lastK = j.next - 1 // the last matched
	}
	base := charTokens(chars + req.PromptChars)
	view.EstimatedTokens = st.Calibration.Scale(charTokens(chars))
	view.PredictedTokens = st.Calibration.Predict(base)
	view.SystemPromptAddition = e.warning(st.Compactions)

	turn := Turn{N: 1, At: e.now(), Messages: len(req.Messages), Matched: l.matched, Unmatched: l.unmatched,
		BaseTokens: base, Predicted: view.PredictedTokens, Layers: view.Layers, Passthrough: view.Passthrough,
		HostTrimmed: view.HostTrimmed, Bootstrap: view.Bootstrap, Replaced: len(view.Replace), Chars: chars}
	if view.HostTrimmed > 0 && (prev == nil || prev.HostTrimmed == 0) {
		e.log().Info("engine: the host's messages start after the oldest context messages of the session", "session", name,
			"left_out", view.HostTrimmed, "messages", len(req.Messages), "bootstrap", view.Bootstrap, "summarized", view.Summary != nil)
	}
	turn.HostChars = req.chars()
	turn.ViewMessages = len(req.Messages) - view.FirstKept
	if view.Summary != nil {
		turn.ViewMessages++
		turn.SummaryID = view.Summary.ID
		sum := sha256.Sum256([]byte(view.Summary.Text))
		turn.SummarySum = hex.EncodeToString(sum[:])
		// The entry of the first kept message, when the host's message
		// there is a stored one ("" when it is not, or when nothing is
		// kept: then the index tells).
		if view.FirstKept < len(j.hostK) {
			if k := j.hostK[view.FirstKept]; k >= 0 {
				turn.FirstKeptEntry = l.st[k].id
			}
		}
	}
	if lastK >= 0 {
		turn.LastEntry = l.st[lastK].id
	}
	if prev != nil {
		turn.N = prev.N + 1
		// A kept message shown differently from before. The previous
		// model request held it even when the previous view did not: the
		// host appends the turn's newer messages after the view it was
		// served, and a message that changes (a collapse past
		// keep_recent, a restore) is older than those.
		touched := false
		for _, k := range l.touched {
			if l.index[k] >= view.FirstKept {
				touched = true
			}
		}
		// The previous view's newest stored message left the active path:
		// the history it sent is not this one's.
		if _, on := c.byID[prev.LastEntry]; prev.LastEntry != "" && !on {
			touched = true
		}
		view.Changed = prefixChanged(prev, &turn, touched)
	}
	turn.Changed = view.Changed
	view.Turn = turn.N
	view.HostChars, view.Chars = turn.HostChars, turn.Chars
	turn.ElapsedMS = elapsedMS(time.Since(start))
	view.ElapsedMS = turn.ElapsedMS
	if view.Changed {
		st.PrefixChanges++
	}
	st.Turns = append(st.Turns, turn)
	if n := len(st.Turns); n > MaxTurns {
		st.Turns = append([]Turn(nil), st.Turns[n-MaxTurns:]...)
	}
	st.Expanded = nil
	view.Ack = ss.ack(&req)
	if err := ctx.Err(); err != nil {
		// The caller gave up waiting: the view is never sent, so the
		// decisions it made must not become the next view's baseline.
		e.log().Info("engine: the view is answered too late to be sent; its state is not saved", "session", name, "err", err)
		ss.dropView()
		return view, nil
	}
	if err := e.saveView(ss, ref, st); err != nil {
		// The view is right; only the next turn's decisions are lost.
		e.log().Warn("engine: state not saved", "session", name, "err", err)
	}
	return view, nil
}

// lineReader returns a reader of the session's lines: through tr, or a
// transcript opened on first use.
func lineReader(ctx context.Context, store bs.Store, ref bs.SessionRef, tr bs.Transcript) func(int) ([]byte, error) {
	return func(line int) ([]byte, error) {
		if tr == nil {
			t, err := store.Open(ctx, ref, nil)
			if err != nil {
				return nil, err
			}
			tr = t
		}
		en, err := tr.Entry(ctx, line)
		if err != nil {
			return nil, err
		}
		return en.Raw, nil
	}
}

// hostTrimmed returns how many context messages of the join's cache come
// before the one the host's first stored message is matched to (0 when
// none is matched).
func hostTrimmed(j *join) int {
	for _, k := range j.hostK {
		if k >= 0 {
			return k
		}
	}
	return 0
}

// elapsedMS returns d in milliseconds, to the microsecond.
func elapsedMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// firstKeptIndex maps the first kept message of a summary plan (an index
// into the view's messages) to an index into the host's messages: just
// after the last host message the summary covers, so that a host message
// between the summarized span and the kept one is kept.
func firstKeptIndex(msgs []viewMsg, firstKept int) int {
	// The join is monotone (a later stored message is matched to a later
	// host message): the last matched before firstKept holds the largest
	// index.
	for j := min(firstKept, len(msgs)) - 1; j >= 0; j-- {
		if msgs[j].Index >= 0 {
			return msgs[j].Index + 1
		}
	}
	return 0
}

// prefixChanged reports whether the view of cur changes the prefix the
// provider cached for prev:
// another summary, another first kept message, or a message of the
// previous view shown differently or a history that is not the previous
// one's (touched); a switch to or from a passthrough changes it when
// either view altered messages.
func prefixChanged(prev, cur *Turn, touched bool) bool {
	prevPass, curPass := prev.Passthrough != "", cur.Passthrough != ""
	if prevPass || curPass {
		prevAlt := !prevPass && (prev.Replaced > 0 || prev.SummaryID != "")
		curAlt := !curPass && (cur.Replaced > 0 || cur.SummaryID != "")
		return prevAlt || curAlt
	}
	if touched || prev.SummaryID != cur.SummaryID || prev.SummarySum != cur.SummarySum {
		return true
	}
	if cur.SummaryID == "" {
		return false
	}
	// A first kept message that is not stored (yet) is the same message
	// in the next view, which the host hands after it.
	return prev.FirstKeptEntry != "" && cur.FirstKeptEntry != "" && prev.FirstKeptEntry != cur.FirstKeptEntry
}

// ownSummaryAt reports whether one of the session's summaries carries the
// timestamp ms: a summary message of a view served before.
func ownSummaryAt(st *State, ms int64) bool {
	for i := range st.Summaries {
		if st.Summaries[i].CreatedAt.UnixMilli() == ms {
			return true
		}
	}
	return false
}

// onPath reports whether the entry id is one of the context messages sm.
func onPath(sm []stored, id string) bool {
	for k := range sm {
		if sm[k].id == id {
			return true
		}
	}
	return false
}

// Value returns the content of entry entryID of the session as the host
// stores it (exactly), and records a restore as RecordRestore does: the
// entry leaves State.Collapsed and enters State.Restored, so that the next
// view shows it in full and keeps it so for Policy.KeepAfterRestore, and
// every pass that reads the engine as its restore log protects it as
// long. The host's row
// or line is not written. The error wraps bs.ErrInvalid for an id that is
// not acceptable and bs.ErrNotFound when the session holds no such entry
// or the entry has no message content.
func (e *Engine) Value(ctx context.Context, ref bs.SessionRef, entryID string) (ViewValue, error) {
	name := ref.String()
	if e.Store == nil {
		return ViewValue{}, fmt.Errorf("engine value %s: expected an Engine with a Store, found none: %w", name, bs.ErrInvalid)
	}
	if err := bs.IDEntry.Check(entryID); err != nil {
		return ViewValue{}, fmt.Errorf("engine value %s: %w", name, err)
	}
	if _, err := e.statePath(ref); err != nil {
		return ViewValue{}, fmt.Errorf("engine value %s: %w", name, err)
	}
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	st, err := e.loadState(ref)
	if err != nil {
		return ViewValue{}, fmt.Errorf("engine value %s: %w", name, err)
	}
	tr, err := e.Store.Open(ctx, ref, nil)
	if err != nil {
		return ViewValue{}, fmt.Errorf("engine value %s: %w", name, err)
	}
	n, ok := tr.Node(entryID)
	if !ok {
		return ViewValue{}, fmt.Errorf("engine value %s: expected an entry %s in the session, found none: %w", name, entryID, bs.ErrNotFound)
	}
	en, err := tr.Entry(ctx, n.Line)
	if err != nil {
		return ViewValue{}, fmt.Errorf("engine value %s: entry %s: %w", name, entryID, err)
	}
	a, b, ok := jsonedit.Find(en.Raw, "/message/content")
	if !ok {
		return ViewValue{}, fmt.Errorf("engine value %s: expected entry %s (line %d) to hold message.content, found none: %w", name, entryID, n.Line, bs.ErrNotFound)
	}
	was := st.noteRestore(entryID, e.now())
	if err := e.saveState(ref, st); err != nil {
		e.log().Warn("engine: the restore of a collapsed value is not recorded", "session", name, "entry", entryID, "err", err)
	}
	return ViewValue{EntryID: entryID, Content: json.RawMessage(bytes.Clone(en.Raw[a:b])), Collapsed: was}, nil
}

// Status returns what the API, the UI and `context status` show of the
// session's engine state. It reads the state only, never the transcript.
// A session the engine never served has the zero Status with a low risk.
func (e *Engine) Status(ctx context.Context, ref bs.SessionRef) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	path, err := e.statePath(ref)
	if err != nil {
		return Status{}, fmt.Errorf("engine status %s: %w", ref, err)
	}
	// The state file is written atomically: reading it needs no lock,
	// and a Status never waits for a turn being assembled. A state file
	// that did not change since the last Status is not read again (a
	// sessions list asks for every session's).
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return e.judgeStatus(Status{}), nil
	}
	// The views served since the file was written are in its journal.
	jst, jerr := stampFile(journalPath(path))
	if err == nil && jerr == nil {
		if out, ok := statuses.get(path, fi, jst); ok {
			return e.judgeStatus(out), nil
		}
	}
	st, err := e.loadState(ref)
	if err != nil {
		return Status{}, fmt.Errorf("engine status %s: %w", ref, err)
	}
	out := statusOf(st)
	if fi != nil && jerr == nil {
		statuses.put(path, fi, jst, out)
	}
	return e.judgeStatus(out), nil
}

// judgeStatus sets the risk and the warning of st from its compactions
// and the engine's settings.
func (e *Engine) judgeStatus(st Status) Status {
	s := e.settings()
	st.Risk = compact.RiskOf(st.Compactions, s.WarnAt, s.HardWarnAt)
	st.Warning = e.warning(st.Compactions)
	return st
}

// statusOf returns the figures of a state that do not depend on the
// settings.
func statusOf(st *State) Status {
	out := Status{Active: len(st.Turns) > 0, Collapsed: len(st.Collapsed), Summaries: len(st.Summaries),
		Compactions: st.Compactions, PrefixChanges: st.PrefixChanges}
	for _, c := range st.Collapsed {
		out.CollapsedChars += c.Chars
	}
	for i := range st.Summaries {
		if st.Summaries[i].Parent == "" {
			out.TopSummaries++
		}
		out.Levels = max(out.Levels, st.Summaries[i].Level)
	}
	if n := len(st.Turns); n > 0 {
		last := st.Turns[n-1]
		out.Turns, out.Last = last.N, &last
		out.View = viewSize(st.Turns)
		out.LastViews = make([]Turn, 0, min(n, MaxLastViews))
		for i := n - 1; i >= 0 && len(out.LastViews) < MaxLastViews; i-- {
			t := st.Turns[i]
			t.Layers = append([]string(nil), t.Layers...)
			out.LastViews = append(out.LastViews, t)
		}
	}
	return out
}

// viewSize returns the size of the last of turns (not empty), with the
// newest measurement among them.
func viewSize(turns []Turn) *ViewSize {
	last := turns[len(turns)-1]
	v := &ViewSize{Turn: last.N, At: last.At, PredictedTokens: last.Predicted, Chars: last.Chars, HostChars: last.HostChars,
		Messages: last.ViewMessages, HostMessages: last.Messages, Summarized: last.SummaryID != "", Passthrough: last.Passthrough}
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Measured > 0 {
			v.MeasuredTokens, v.MeasuredTurn = turns[i].Measured, turns[i].N
			break
		}
	}
	return v
}

// Close stops the summaries this engine is writing in the background and
// waits for them to end: their model calls are cancelled and what they
// wrote is dropped (a later view starts them again), so that a shutdown is
// not held up by a slow model. The engine stays usable. The error joins
// the jobs' failures other than their cancellation.
func (e *Engine) Close() error {
	jobs := e.bg.running()
	for _, sj := range jobs {
		if sj.work != nil {
			sj.work.stopped.Store(true)
			if sj.work.cancel != nil {
				sj.work.cancel()
			}
		}
	}
	var errs []error
	for _, sj := range jobs {
		<-sj.done
		if sj.err != nil && !errors.Is(sj.err, context.Canceled) {
			errs = append(errs, sj.err)
		}
	}
	return errors.Join(errs...)
}

// sessions holds the state holder of every session any Engine of the
// process served, keyed by its state file's path: two Engine values (the
// daemon makes a new one when its configuration changes while the old one
// may still be inside a call) share one lock and one summary job per
// state file, so their calls never interleave on it.
var sessions = struct {
	mu sync.Mutex
	m  map[string]*sessionState
}{m: map[string]*sessionState{}}

// session returns the session's state holder, shared by every Engine of
// the process with the same state file and made on first use; its mu
// serialises the session's calls. The engine also keeps it in its own
// list, so that Close waits for the jobs it may have started.
func (e *Engine) session(ref bs.SessionRef) *sessionState {
	k, err := e.statePath(ref)
	if err != nil {
		// No state file (the callers refuse such a ref first): a holder
		// of the engine's own, by identity.
		k = "\x00" + e.StateDir + "\x00" + ref.Identity()
	} else if abs, err := filepath.Abs(k); err == nil {
		k = abs
	}
	sessions.mu.Lock()
	s := sessions.m[k]
	if s == nil {
		s = &sessionState{}
		sessions.m[k] = s
	}
	sessions.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions == nil {
		e.sessions = map[string]*sessionState{}
	}
	e.sessions[k] = s
	return s
}

// now returns the engine's time.
func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// log returns the engine's logger (never nil).
func (e *Engine) log() bs.Logger { return bs.LoggerOrDiscard(e.Logger) }

// settings returns the engine's Settings, or compact.DefaultSettings when
// they are the zero value (and the default warning counts when they are
// not set).
func (e *Engine) settings() compact.Settings {
	if e.Settings == (compact.Settings{}) {
		return compact.DefaultSettings()
	}
	s := e.Settings
	if s.WarnAt <= 0 || s.HardWarnAt <= 0 {
		d := compact.DefaultSettings()
		s.WarnAt, s.HardWarnAt = d.WarnAt, d.HardWarnAt
	}
	return s
}

// policy returns the engine's extraction policy with Enabled set and no
// age threshold (a placeholder in the model's view costs nothing to undo,
// so the view collapses by keep_recent, length, type, `_extractable` and
// the restore protection alone), or extract.DefaultPolicy so changed when
// it is the zero value.
func (e *Engine) policy() extract.Policy {
	p := e.Policy
	if p.Triggers == nil && p.MinValueLength == 0 && p.KeepRecent == 0 && p.AgeThreshold == 0 && p.KeepAfterRestore == 0 {
		p = extract.DefaultPolicy()
	}
	p.Enabled, p.NoReasons = true, true
	p.AgeThreshold = 0
	return p
}

// requestWindow returns the context window of req, a request of the
// session of ss (whose lock the caller holds): req.TokenBudget, except on a
// turn-start call, whose budget is what the host leaves the messages: then
// the window of the session's last request of the same model, else that
// budget plus the reserve and the prompt (a lower bound: the host's system
// prompt is left out). It remembers the window of every other request that
// names one.
func requestWindow(ss *sessionState, req *Request) int {
	if req.HostCall != CallTurnStart {
		if req.TokenBudget > 0 {
			ss.window, ss.windowModel = req.TokenBudget, req.Model
		}
		return req.TokenBudget
	}
	if ss.window > 0 && ss.windowModel == req.Model {
		return ss.window
	}
	if req.TokenBudget <= 0 {
		return 0
	}
	return req.TokenBudget + max(req.ReserveTokens, 0) + charTokens(req.PromptChars)
}

// window returns the context window of a turn: the host's token budget,
// else Settings.ContextWindow.
func (e *Engine) window(req *Request) int {
	if req != nil && req.TokenBudget > 0 {
		return req.TokenBudget
	}
	return e.settings().ContextWindow
}

// warning returns the degradation warning for a session whose history was
// summarized compactions times: "" below Settings.WarnAt, a soft warning
// from it, a hard one from HardWarnAt; never longer than maxWarning bytes.
// It names the level, not the count: the warning is part of the system
// prompt the model is sent, and a text that changed with every summary
// would make the provider write the cached prompt after it again each
// time (the count is in the engine's status).
func (e *Engine) warning(compactions int) string {
	s := e.settings()
	var w string
	switch compact.RiskOf(compactions, s.WarnAt, s.HardWarnAt) {
	case compact.RiskHigh:
		w = "BrainSurgeon: earlier parts of this conversation were summarized many times; early details are likely lost. Use recall_grep / recall_expand to get the original messages back before relying on anything from earlier turns."
	case compact.RiskMedium:
		w = "BrainSurgeon: earlier parts of this conversation were summarized several times; details may be missing. Use recall_grep / recall_expand to get the original messages back before relying on them."
	}
	if len(w) > maxWarning {
		w = w[:maxWarning]
	}
	return w
}
