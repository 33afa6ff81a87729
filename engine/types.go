package engine

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// Message is the skeleton of one message the host hands the context engine:
// enough to match it to the session's stored entry, never its content.
type Message struct {
	// Role is the message's role ("user", "assistant", "toolResult",
	// "compactionSummary", …).
	Role string `json:"role"`
	// Timestamp is the message's timestamp in Unix milliseconds (0 when it
	// has none).
	Timestamp int64 `json:"timestamp"`
	// ToolCallID is a tool result's toolCallId.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolCallIDs are the ids of an assistant message's tool calls, in
	// order.
	ToolCallIDs []string `json:"tool_call_ids,omitempty"`
	// Chars is the length, in UTF-16 code units, of the JSON of the
	// message's content (its summary for a compactionSummary).
	Chars int `json:"chars"`
	// Bootstrap is true for the user message the host makes up to open a
	// history that starts with an assistant message (OpenClaw's
	// "(session bootstrap)", which it adds with the time of day each time
	// it loads the history, and never stores). It joins no stored
	// message; as the host's first message it falls under the view's
	// summary, and is kept as the host gave it when the view has none.
	// The plugin sends its Timestamp as 0.
	Bootstrap bool `json:"bootstrap,omitempty"`
}

// Request is one turn's assemble call.
type Request struct {
	// Messages are the host's messages, in order: at a turn's start the
	// history before the turn; before each later model request of the turn,
	// the view the host was served followed by the turn's new messages
	// (some not stored yet).
	Messages []Message
	// TokenBudget is the model's context window in tokens as the host
	// resolved it; 0 means the configured window. On a turn-start call
	// (HostCall) it is what the host leaves the messages: the batch rule of
	// layer 1 then measures against the session's last window instead
	// (see CallTurnStart); the summary layers use TokenBudget as given.
	TokenBudget int
	// PromptChars is the length of the turn's incoming prompt.
	PromptChars int
	// Model names the model of the turn ("" when unknown).
	Model string
	// HostCall says which of the host's assemble calls this is: CallTurnStart,
	// CallModelRequest, or "" when the host's plugin does not say (an older
	// plugin).
	HostCall string
	// ReserveTokens is, on the turn-start call, the tokens the host keeps
	// for the answer (its runtimeSettings.limits.maxOutputTokens).
	ReserveTokens int
	// Base, when not 0, says that Messages are only the host's messages
	// after its first Base, and that those are the first Base messages of
	// the list the engine acknowledged for the session's calls of this
	// HostCall (View.Ack), whose chain fingerprint is BaseFingerprint.
	// When the engine does not hold them, Assemble fails with an error
	// wrapping ErrNeedFull.
	Base            int
	BaseFingerprint string

	// batchWindow is the window the batch rule measures against (see
	// requestWindow); 0 means the window of TokenBudget.
	batchWindow int
	// sums, when not nil, are the sums of Messages' Chars: sums[i] of
	// the first i+1 (see chars).
	sums []int
}

// chars returns the sum of the Chars of the request's messages.
func (r *Request) chars() int {
	if len(r.sums) == len(r.Messages) && len(r.sums) > 0 {
		return r.sums[len(r.sums)-1]
	}
	n := 0
	for i := range r.Messages {
		n += r.Messages[i].Chars
	}
	return n
}

// The host's assemble calls (Request.HostCall). OpenClaw (2026.7 and
// 2026.9) calls the context engine twice before a turn's first model
// request. The turn-start call hands the history as the host rebuilt it
// from the transcript, and as its TokenBudget what the host leaves the
// messages (the window less the reserve, the system prompt and the
// prompt). The model-request call, made before each model request of the
// turn, hands the messages the model is sent: the view the engine served,
// after the host's own pruning of old tool results, and the turn's new
// messages; its TokenBudget is the window.
const (
	CallTurnStart    = "turn_start"
	CallModelRequest = "model_request"
)

// Summary is the summary message of a view: the rendered text of every
// summary at the top of the session's summary tree, oldest first.
type Summary struct {
	// ID is the newest summary's id ("sum-" and 12 hex digits).
	ID string `json:"id"`
	// Level is the highest level among them (1: a summary of messages).
	Level int `json:"level"`
	// Text is the text the model reads.
	Text string `json:"text"`
	// TokensBefore is how many tokens the summarized messages held.
	TokensBefore int `json:"tokens_before"`
	// Timestamp is the Unix milliseconds the summary message carries (the
	// newest summary's creation time).
	Timestamp int64 `json:"timestamp"`
}

// Replacement replaces the content of one of the host's messages.
type Replacement struct {
	// Index is the message's index in Request.Messages.
	Index int `json:"index"`
	// Content is the message's new content (a JSON array of blocks).
	Content json.RawMessage `json:"content"`
}

// View is what the model is sent this turn: the summary (if any), then the
// host's messages from FirstKept on, with Replace applied.
type View struct {
	// Summary is the summary message, nil when nothing is summarized.
	Summary *Summary `json:"summary"`
	// FirstKept is the index (into Request.Messages) of the first message
	// kept after the summary; 0 without a summary.
	FirstKept int `json:"first_kept"`
	// Replace lists the messages whose content changes, by ascending index.
	Replace []Replacement `json:"replace"`
	// SystemPromptAddition is a short text for the system prompt ("" for
	// none): the degradation warning.
	SystemPromptAddition string `json:"system_prompt_addition"`
	// EstimatedTokens is the view's size in calibrated tokens, overhead
	// excluded.
	EstimatedTokens int `json:"estimated_tokens"`
	// PredictedTokens is the predicted size of the turn's first model
	// request: the view, the prompt and the overhead (system prompt, tool
	// definitions) learned from the recorded usage.
	PredictedTokens int `json:"predicted_tokens"`
	// Matched and Unmatched count the host's messages matched to stored
	// entries and not.
	Matched   int `json:"matched"`
	Unmatched int `json:"unmatched"`
	// Passthrough, when not empty, says why the host's messages are sent
	// unchanged (then Summary is nil and Replace empty).
	Passthrough string `json:"passthrough,omitempty"`
	// HostTrimmed is how many of the oldest context messages of the
	// session's active path come before the first of the host's messages
	// that is stored: the host loaded only the newer part of a long
	// history (OpenClaw 2026.9.6 bounds what it loads) or replays only the
	// latest turns. It is 0 when the host's list starts with the oldest
	// one, or with the summary of a view served before (which stands for
	// the messages it covers). The view is made all the same: a summary
	// covers those messages too, and without one they are not sent.
	HostTrimmed int `json:"host_trimmed,omitempty"`
	// Bootstrap is true when the host's first message is its bootstrap
	// message (Message.Bootstrap); then FirstKept is at least 1 when the
	// view has a summary, which leads the view in its place.
	Bootstrap bool `json:"bootstrap,omitempty"`
	// Layers names what changed the view this turn ("collapse",
	// "summarize", "full", "condense", "restore").
	Layers []string `json:"layers"`
	// Changed is true when the view differs from the previous turn's
	// beyond the messages appended since: the provider's cached prefix
	// breaks.
	Changed bool `json:"prefix_changed"`
	// Turn counts the views served for the session, from 1.
	Turn int `json:"turn"`
	// HostChars is the length of the host's messages and Chars that of
	// the view's message contents (the summary's text, the kept messages
	// with their replacements), in the units of Message.Chars; both leave
	// out the prompt, the system prompt and the tool definitions.
	HostChars int `json:"host_chars"`
	Chars     int `json:"view_chars"`
	// ElapsedMS is the time Assemble took to make the view, in
	// milliseconds (Turn.ElapsedMS).
	ElapsedMS float64 `json:"elapsed_ms"`
	// Ack is the list of the host's messages the engine now holds for
	// the session's calls of this Request.HostCall: the next such call
	// may send only the messages after it (Request.Base).
	Ack *Ack `json:"ack,omitempty"`
}

// State is one session's decisions, kept between turns.
type State struct {
	// Version is the state format (1).
	Version int `json:"version"`
	// Collapsed are the entries whose values the view shows as
	// placeholders, by entry id.
	Collapsed map[string]Collapsed `json:"collapsed,omitempty"`
	// Restored are the entries the agent restored, by entry id, with the
	// time of the restore: the view shows them in full.
	Restored map[string]time.Time `json:"restored,omitempty"`
	// Summaries are every summary made, oldest first.
	Summaries []SummaryRecord `json:"summaries,omitempty"`
	// Compactions counts the summaries made of messages (layers 2 and 3,
	// and compact calls), which is what the degradation warnings count.
	Compactions int `json:"compactions"`
	// Turns are the latest views served (at most MaxTurns).
	Turns []Turn `json:"turns,omitempty"`
	// Calibration is the fit of recorded usage to the views' sizes.
	Calibration Calibration `json:"calibration"`
	// PrefixChanges counts the views served that changed the cached
	// prefix (Turns keeps only the latest).
	PrefixChanges int `json:"prefix_changes"`
	// Expanded are the entries a restore took out of Collapsed since the
	// last view: the next view shows them in full again, which changes
	// its prefix when the previous view held them.
	Expanded []string `json:"expanded,omitempty"`
	// HostSizes are the tool results the host sends smaller than the
	// session stores them (its own pruning of old tool results, which only
	// its model-request calls show), by entry id: the batch rule counts
	// them at that size on a turn-start call too, which carries them in
	// full.
	HostSizes map[string]HostSize `json:"host_sizes,omitempty"`
	// PutBack are the entries the last view served showed with their
	// values put back while the host's row held their placeholders (a
	// restore whose write-back is queued, a tool result stored at the
	// source): a view that starts or stops doing so for one of them
	// changes its prefix.
	PutBack []string `json:"put_back,omitempty"`
	// Journal names the journal of this state file: the records of the
	// views served since it was written, appended to
	// <sessionId>.journal, apply to it only when they carry this name
	// (a state file written later starts another journal).
	Journal string `json:"journal,omitempty"`

	// track records the changes since the state was last written or read
	// (nil when they are not tracked); mirror is the cache that mirrors
	// Collapsed (see viewCache.mirrorOf).
	track  *stateTrack
	mirror *viewCache
}

// HostSize is the size the host sends one stored message at.
type HostSize struct {
	// Stored is the length of the message's stored content when the host
	// sent it at Chars (both in the units of Message.Chars): the size
	// holds only while the stored content has that length.
	Stored int `json:"stored_chars"`
	Chars  int `json:"chars"`
}

// MaxTurns is how many turns State keeps.
const MaxTurns = 500

// Collapsed is one entry whose values the view shows as placeholders.
type Collapsed struct {
	// At is when the view first collapsed it.
	At time.Time `json:"at"`
	// Chars is how many characters the view no longer carries.
	Chars int `json:"chars"`
}

// SummaryRecord is one summary in the session's summary tree.
type SummaryRecord struct {
	// ID is "sum-" and 12 hex digits.
	ID string `json:"id"`
	// Level is 1 for a summary of messages, n+1 for one that condenses
	// summaries of level n.
	Level int `json:"level"`
	// Layer says what made it: "summarize", "full", "manual" (a compact
	// call) or "condense".
	Layer string `json:"layer"`
	// Entries are the ids of the messages a level-1 summary covers, in
	// order.
	Entries []string `json:"entries,omitempty"`
	// Children are the ids of the summaries a condensed summary covers, in
	// order.
	Children []string `json:"children,omitempty"`
	// Parent is the id of the summary that condensed this one ("" while it
	// is at the top).
	Parent string `json:"parent,omitempty"`
	// Text is the summary.
	Text string `json:"text"`
	// Tokens is the size of Text; TokensBefore the size of what it covers.
	Tokens       int `json:"tokens"`
	TokensBefore int `json:"tokens_before"`
	// Pinned are the ids of pinned entries carried verbatim in Text.
	Pinned []string `json:"pinned,omitempty"`
	// Degraded, Reason and Method say how Text was written (compact.Summary).
	Degraded bool   `json:"degraded"`
	Reason   string `json:"reason,omitempty"`
	Method   string `json:"method,omitempty"`
	// CreatedAt is when it was made.
	CreatedAt time.Time `json:"created_at"`
}

// Turn is one view served.
type Turn struct {
	// N counts the views served, from 1.
	N int `json:"turn"`
	// At is when it was served.
	At time.Time `json:"at"`
	// Messages is how many messages the host sent; ViewMessages how many
	// the view holds (the summary message included).
	Messages     int `json:"messages"`
	ViewMessages int `json:"view_messages"`
	// Matched and Unmatched are the view's.
	Matched   int `json:"matched"`
	Unmatched int `json:"unmatched"`
	// BaseTokens is the uncalibrated size of the view and the prompt;
	// Predicted the predicted size of the first model request.
	BaseTokens int `json:"base_tokens"`
	Predicted  int `json:"predicted_tokens"`
	// Measured is the size the model's provider recorded for that request
	// (the usage of the turn's first assistant message), 0 until a later
	// turn shows it.
	Measured int `json:"measured_tokens,omitempty"`
	// Chars is the length of the view's message contents (the summary's
	// text, the kept messages with their replacements), in the units of
	// Message.Chars; HostChars is the length of the host's messages as
	// the host handed them (what the model would be sent without the
	// engine). Both leave out the prompt, the system prompt and the tool
	// definitions; 0 in a state written before they were kept.
	Chars     int `json:"view_chars,omitempty"`
	HostChars int `json:"host_chars,omitempty"`
	// Layers and Changed are the view's.
	Layers  []string `json:"layers,omitempty"`
	Changed bool     `json:"prefix_changed"`
	// Passthrough, HostTrimmed and Bootstrap are the view's.
	Passthrough string `json:"passthrough,omitempty"`
	HostTrimmed int    `json:"host_trimmed,omitempty"`
	Bootstrap   bool   `json:"bootstrap,omitempty"`
	// LastEntry is the id of the newest stored message the view held, so
	// that a later turn finds the first assistant message after it.
	LastEntry string `json:"last_entry,omitempty"`
	// SummaryID is the id of the view's summary ("" for none),
	// FirstKeptEntry the entry id of the first message kept after it, and
	// Replaced how many messages the view replaced: what the next turn
	// compares to tell whether the prefix changed.
	SummaryID      string `json:"summary_id,omitempty"`
	FirstKeptEntry string `json:"first_kept_entry,omitempty"`
	Replaced       int    `json:"replaced"`
	// SummarySum is the sha256 (hex) of the summary message's text: a
	// condensation can change the text while the newest summary, whose id
	// SummaryID is, stays the same.
	SummarySum string `json:"summary_sha256,omitempty"`
	// ElapsedMS is the time the engine took to make the view, in
	// milliseconds (microsecond resolution): from the start of Assemble
	// to the view's decisions, the state's save left out; 0 in a state
	// written before it was kept.
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Calibration fits the sizes providers recorded for the views the engine
// served: measured = Overhead + Ratio × base tokens (tokens.FitSamples).
type Calibration = tokens.Calibration

// Status is what the API, the UI and `context status` show of a session's
// engine state.
type Status struct {
	// Active is true when the engine has served the session.
	Active bool `json:"active"`
	// Collapsed counts the collapsed entries; CollapsedChars the
	// characters they no longer send.
	Collapsed      int `json:"collapsed"`
	CollapsedChars int `json:"collapsed_chars"`
	// Summaries counts every summary; TopSummaries those at the top of
	// the tree; Levels the highest level.
	Summaries    int `json:"summaries"`
	TopSummaries int `json:"top_summaries"`
	Levels       int `json:"levels"`
	// Compactions, Risk and Warning are the degradation signal: a soft
	// warning from Settings.WarnAt compactions, a hard one from
	// HardWarnAt.
	Compactions int          `json:"compactions"`
	Risk        compact.Risk `json:"risk"`
	Warning     string       `json:"warning,omitempty"`
	// Turns counts the views served; PrefixChanges those that changed the
	// cached prefix.
	Turns         int `json:"turns"`
	PrefixChanges int `json:"prefix_changes"`
	// Last is the newest turn, nil before the first.
	Last *Turn `json:"last,omitempty"`
	// View is the size of the last view served, nil before the first.
	View *ViewSize `json:"view,omitempty"`
	// LastViews are the latest views served, newest first, at most
	// MaxLastViews (none before the first).
	LastViews []Turn `json:"last_views,omitempty"`
}

// MaxLastViews is how many views Status.LastViews holds at most.
const MaxLastViews = 10

// ViewSize is the size of the last view the engine served: what the
// model was sent, beside what the host would have sent.
type ViewSize struct {
	// Turn is the view's number (Status.Turns) and At when it was served.
	Turn int       `json:"turn"`
	At   time.Time `json:"at"`
	// PredictedTokens is the predicted size of the view's first model
	// request: the view, the prompt and the overhead (system prompt, tool
	// definitions).
	PredictedTokens int `json:"predicted_tokens"`
	// MeasuredTokens is the size the provider recorded for the first model
	// request of view MeasuredTurn, the newest view whose request a later
	// turn has shown (the last view's is known only after the model
	// answered it); both 0 when no view is measured yet.
	MeasuredTokens int `json:"measured_tokens"`
	MeasuredTurn   int `json:"measured_turn"`
	// Chars is the length of the view's message contents and HostChars
	// that of the host's messages (see Turn.Chars); 0 when the state
	// predates them.
	Chars     int `json:"chars"`
	HostChars int `json:"host_chars"`
	// Messages is how many messages the view holds (its summary message
	// included), HostMessages how many the host handed.
	Messages     int `json:"messages"`
	HostMessages int `json:"host_messages"`
	// Summarized is true when the view starts with the engine's summary.
	Summarized bool `json:"summarized"`
	// Passthrough, when not empty, says why the host's messages were sent
	// unchanged.
	Passthrough string `json:"passthrough,omitempty"`
}

// Engine serves the views of the sessions of one installation. Its zero
// value is not usable: set Store and StateDir. It is safe for concurrent
// use; the calls of one session are serialised.
type Engine struct {
	// Store reads the sessions; the engine never writes them.
	Store bs.Store
	// StateDir is the directory that holds the engine's state (under it,
	// engine/<agent>/<sessionId>.json).
	StateDir string
	// Policy decides which values collapse. Its Enabled and AgeThreshold
	// are ignored: the engine runs when the host selected it, and a
	// collapse in the view is undone by a restore at no cost.
	Policy extract.Policy
	// Settings are the layers' thresholds and warning counts.
	Settings compact.Settings
	// Summarizer writes the summaries of layers 2 and 3; nil means the
	// deterministic summary (marked degraded).
	Summarizer compact.Summarizer
	// SummaryWait is how long Assemble waits for a summary it started
	// before serving the view without it (default 2 s); the next turn
	// picks it up.
	SummaryWait time.Duration
	// CondenseFanout is how many summaries of one level condense into one
	// of the next (default 4).
	CondenseFanout int
	// Side, when not nil, is read (never written) for the values of the
	// tool results the agent restored while the host's row still holds
	// their placeholders: the view shows those with their values put
	// back, byte for byte, for Policy.KeepAfterRestore. Nil shows the
	// row's placeholders.
	Side bs.SideStore
	// Logger receives what the engine decides and why; nil discards.
	Logger bs.Logger
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// ReadOnly serves views but saves no state: the decisions of a turn
	// are not kept for the next (the daemon's read-only mode), and layers
	// 2 and 3 make no summary (those the saved state holds are served).
	ReadOnly bool
	// bg is this engine's running summary jobs and logged stale
	// summaries.
	bg background

	mu       sync.Mutex
	sessions map[string]*sessionState
	// noIncremental makes every call read the whole session and the state
	// file (the tests' reference for the incremental path).
	noIncremental bool
	// idRand, when set, gives the random bytes of summary ids (the tests
	// make them reproducible); nil is crypto/rand.
	idRand io.Reader
}

// sessionState serialises one session's calls and tracks its summary job.
type sessionState struct {
	mu  sync.Mutex
	job *summaryJob
	// window and windowModel are the context window of the session's
	// last request that named one (not a turn-start call) and its model.
	window      int
	windowModel string
	// acked is the list of the host's messages last served, by
	// Request.HostCall (see Ack).
	acked map[string]*ackedList
	// vc is the session's cache (nil when it holds none), lastUse when it
	// was last used (see touchCache).
	vc      *viewCache
	lastUse atomic.Uint64
	// st is the session's state as last read or written, at the stamps
	// of its files (see stateFor); nil when none is held.
	st    *State
	stamp stateStamp
	// saved is what the state file and its journal hold of st, for the
	// next save's journal record.
	saved *savedState
}

// viewMsg is one context message of the session's active path as the view
// sees it.
type viewMsg struct {
	// Index is the message's index in Request.Messages, -1 when the host
	// did not send it.
	Index int
	// Line is the 1-based line of its entry in the transcript; ID the
	// entry's id.
	Line int
	ID   string
	// Role, Timestamp, CallID (a tool result's) and Calls (an assistant's
	// tool-call ids) are the message's.
	Role      string
	Timestamp int64
	CallID    string
	Calls     []string
	// Tokens is its size as the view sends it (after collapse), in base
	// tokens.
	Tokens int
	// Pinned is true for an entry marked `_extractable: false`.
	Pinned bool
}

// summaryInput is what the summary layers plan over.
type summaryInput struct {
	Ref bs.SessionRef
	Tr  bs.Transcript
	// Msgs are the view's messages in order.
	Msgs []viewMsg
	// Window is the model's context window in tokens.
	Window int
	// Tokens is the view's size after collapse, in calibrated tokens,
	// overhead and prompt included: what the thresholds compare.
	Tokens int
	// State is the session's state; the plan may add summaries to it.
	State *State
	// Force makes a summary now (a compact call), down to Target.
	Force  bool
	Target compact.Layer
	Focus  string
	// Wait is how long to wait for a summary being written.
	Wait time.Duration
	// cache, when set, is the session's cache Msgs are the messages of
	// (its byID gives their positions); open opens the transcript when
	// Tr is nil and a summary needs its lines.
	cache *viewCache
	open  func(context.Context) (bs.Transcript, error)
	// cum, when as long as Msgs, are the sums of their Tokens: cum[i] of
	// the first i+1.
	cum []int
}

// summaryPlan is the summary part of a view.
type summaryPlan struct {
	// Summary is the summary message, nil for none.
	Summary *Summary
	// FirstKept is the index into summaryInput.Msgs of the first message
	// kept after the summary (0 without one).
	FirstKept int
	// Layers names what changed this turn ("summarize", "full",
	// "condense").
	Layers []string
}

// summaryJob is a summary being written in the background.
type summaryJob struct {
	done chan struct{}
	err  error
	// work is what the job writes and, once done is closed, what it
	// wrote.
	work *job
}
