package compact

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// Layer names a compaction layer.
type Layer string

// The layers, from the lightest to the heaviest. LayerNone means nothing is
// needed (or, in Options, "choose by the thresholds").
const (
	LayerNone      Layer = ""
	LayerPrune     Layer = "prune"
	LayerSummarize Layer = "summarize"
	LayerFull      Layer = "full"
)

// Layers returns the layers a caller may ask for, from the lightest to
// the heaviest (LayerNone left out). It is the one list the command
// line's --layer, the API's layer and ParseLayer accept.
func Layers() []Layer { return []Layer{LayerPrune, LayerSummarize, LayerFull} }

// ParseLayer returns the layer named s ("" is LayerNone), or an error
// wrapping bs.ErrInvalid that lists the known names.
func ParseLayer(s string) (Layer, error) {
	if s == "" {
		return LayerNone, nil
	}
	names := make([]string, 0, 3)
	for _, l := range Layers() {
		if string(l) == s {
			return l, nil
		}
		names = append(names, string(l))
	}
	return "", invalidf("unknown layer %q (expected %s or %s)", s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// Trigger says who asked for a compaction.
type Trigger string

// The triggers. An automatic compaction also waits for the quiet period
// (Settings.AutoQuiet) because it breaks the provider's prompt cache; a
// manual one breaks it anyway.
const (
	TriggerManual Trigger = "manual"
	TriggerAuto   Trigger = "auto"
)

// Risk grades how much a session's history has been condensed.
type Risk string

// The risk levels: low below Settings.WarnAt compactions on the active
// path, medium from WarnAt (a soft warning), high from HardWarnAt (a hard
// warning).
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Settings are the thresholds of the layers. Percents are of ContextWindow;
// token counts are in the estimator's tokens.
type Settings struct {
	// ContextWindow is the model's context window in tokens (200000).
	ContextWindow int
	// AutoEnabled turns automatic compaction on (false by default); it is
	// reported by Status and read by the daemon.
	AutoEnabled bool
	// PruneTriggerPercent (80) and PruneMinToolTokens (50000): the prune
	// layer runs when the context is above this share of the window and
	// its tool output holds more than this many tokens.
	PruneTriggerPercent float64
	PruneMinToolTokens  int
	// PruneProtectRecent is how many of the most recent tokens of the
	// context the prune layer never touches (40000).
	PruneProtectRecent int
	// SummarizeTriggerPercent (88): above it, the summarize layer runs.
	SummarizeTriggerPercent float64
	// SummarizeKeepRecent is how many of the most recent tokens the
	// summarize layer keeps verbatim (25000).
	SummarizeKeepRecent int
	// FullTriggerPercent (95): above it, the full layer runs; it keeps
	// only the last turn (the cut is the last valid cut point).
	FullTriggerPercent float64
	// WarnAt (3) and HardWarnAt (5) are the compaction counts on the
	// active path from which Status warns softly and hard.
	WarnAt     int
	HardWarnAt int
	// AutoQuiet is how long a session must have been left alone before an
	// automatic compaction (300 s, the usual prompt-cache lifetime).
	AutoQuiet time.Duration
}

// DefaultSettings returns the defaults, the config's own
// (config.DefaultCompaction): a 200K window, prune at 80 % protecting the
// newest 40K tokens, summarize at 88 % keeping 25K, full at 95 %, warnings
// at 3 and 5 compactions, a 300 s quiet period for automatic compaction.
func DefaultSettings() Settings { return FromConfig(config.DefaultCompaction()) }

// FromConfig returns the Settings of the config's "compaction" object.
func FromConfig(c config.Compaction) Settings {
	return Settings{
		ContextWindow:           c.ContextWindow,
		AutoEnabled:             c.AutoEnabled,
		PruneTriggerPercent:     c.PruneTriggerPercent,
		PruneMinToolTokens:      c.PruneMinToolTokens,
		PruneProtectRecent:      c.PruneProtectRecent,
		SummarizeTriggerPercent: c.SummarizeTriggerPercent,
		SummarizeKeepRecent:     c.SummarizeKeepRecent,
		FullTriggerPercent:      c.FullTriggerPercent,
		WarnAt:                  c.WarnAt,
		HardWarnAt:              c.HardWarnAt,
		AutoQuiet:               time.Duration(c.AutoQuietSeconds) * time.Second,
	}
}

// Summary is what a Summarizer wrote and how.
type Summary struct {
	// Text is the summary.
	Text string
	// Degraded is true when the summary was made without a model.
	Degraded bool
	// Reason says why the summary is degraded ("" when it is not, or when
	// the summarizer cannot tell).
	Reason string
	// Method names what wrote Text ("openai:<model>", "deterministic");
	// "" when the summarizer does not say.
	Method string
}

// Summarizer writes the summary of a stretch of conversation for a
// compaction.
type Summarizer interface {
	// Summarize summarizes messages (raw transcript lines). focus, when
	// not empty, says what the summary must keep.
	Summarize(ctx context.Context, messages [][]byte, focus string) (Summary, error)
}

// Estimator predicts the size of a context in tokens. A tokens.Model
// (usage-calibrated) satisfies it; [TokenizerEstimator] builds one on a
// plain tokens.Tokenizer.
type Estimator interface {
	// Overhead returns the tokens the model sees that are not in the
	// transcript (system prompt, tool definitions).
	Overhead() int
	// Predict returns the context size, overhead included, if the context
	// were exactly these raw transcript lines (a compaction line stands for
	// its summary).
	Predict(messages [][]byte) int
	// TokenizerName names the counting method, as a status report shows
	// it ("chars/4", "o200k", "calibrated").
	TokenizerName() string
}

// TokenOptions say how tokens are counted.
type TokenOptions struct {
	// Tokenizer counts the tokens of single values (tool output, pinned
	// entries, cut-point accumulation). Nil means tokens.CharsPer4.
	Tokenizer tokens.Tokenizer
	// Estimator, when not nil, builds the context-size model of a
	// transcript (tokens.Learn fits). Nil means TokenizerEstimator over
	// Tokenizer, with no overhead.
	Estimator func(ctx context.Context, tr bs.Transcript) (Estimator, error)
	// Window, when not nil, names the context window of the model a
	// session uses (for example from the host's config); when it is nil
	// or knows none, the window comes from [ModelWindow], else from
	// Settings.ContextWindow.
	Window WindowFunc
}

// Calibrated returns the token options of the default method: the context
// size calibrated by the transcript's own recorded usage (tokens.Learn)
// over base, nil meaning chars/4. Over chars/4 it reads about 70 MB/s;
// over o200k it is a little more accurate and about ten times slower (see
// package tokens).
func Calibrated(base tokens.Tokenizer) TokenOptions {
	if base == nil {
		base = tokens.CharsPer4{}
	}
	return TokenOptions{Tokenizer: base, Estimator: func(ctx context.Context, tr bs.Transcript) (Estimator, error) {
		m, err := tokens.Learn(ctx, tr, base)
		if err != nil {
			return nil, err
		}
		return m, nil
	}}
}

// TokenizerEstimator is the Estimator that counts a context with a plain
// Tokenizer: no overhead, each line counted as the host would send it.
type TokenizerEstimator struct {
	// Tokenizer counts; nil means tokens.CharsPer4.
	Tokenizer tokens.Tokenizer
}

// StatusReport is what `brainsurgeon context status` shows.
type StatusReport struct {
	// Session is the session's "agent/id".
	Session string `json:"session"`
	// Backend is the store's name ("jsonl", "sqlite").
	Backend string `json:"backend"`
	// Tokens is the predicted size of the next turn's context, overhead
	// included; Window the context window; Percent Tokens as a share of
	// Window (0–100+).
	Tokens int `json:"tokens"`
	// LastUsageTokens is the usage the latest assistant message of the
	// context recorded (not zero): the context of the last turn as the
	// provider counted it, before the messages after it; 0 when none is
	// recorded.
	LastUsageTokens int     `json:"last_usage_tokens"`
	Window          int     `json:"window"`
	Percent         float64 `json:"percent"`
	// WindowSource says where Window comes from: "host_config" (the
	// host's configuration names the window of the session's model),
	// "model_table" (the window of the model the transcript records, from
	// [ModelWindow]) or "config" (our config's compaction.context_window);
	// WindowFrom says it for people.
	WindowSource string `json:"window_source"`
	WindowFrom   string `json:"window_from"`
	// Model is the "provider/model" the latest assistant message of the
	// context records, or "" when none does.
	Model string `json:"model"`
	// Tokenizer names the counting method ("calibrated", "o200k",
	// "chars/4").
	Tokenizer string `json:"tokenizer"`
	// ToolOutputTokens is the part of Tokens held by tool output (the
	// prune layer's trigger).
	ToolOutputTokens int `json:"tool_output_tokens"`
	// AutoEnabled tells whether automatic compaction is on.
	AutoEnabled bool `json:"auto_enabled"`
	// TriggerPercent is the lowest threshold (the prune layer's).
	TriggerPercent float64 `json:"trigger_percent"`
	// Layer is the layer the thresholds choose now, or "" for none.
	Layer Layer `json:"layer"`
	// Compactions counts the compaction entries on the active path;
	// LastCompactionAt is the newest one's time, or nil.
	Compactions      int        `json:"compactions"`
	LastCompactionAt *time.Time `json:"last_compaction_at"`
	// Risk grades the count against WarnAt and HardWarnAt.
	Risk Risk `json:"risk"`
	// CanCompact is false when the store cannot write a compaction;
	// Refusal then says why.
	CanCompact bool   `json:"can_compact"`
	Refusal    string `json:"refusal,omitempty"`
	// Warnings and Recommendations are sentences for people; never nil.
	Warnings        []string `json:"warnings"`
	Recommendations []string `json:"recommendations"`
}

// Count is a number of tokens in a number of items.
type Count struct {
	Tokens int `json:"tokens"`
	Count  int `json:"count"`
}

// Conversation is the messages of a context: their tokens and number, and
// the part of them that tool results are.
type Conversation struct {
	Tokens   int `json:"tokens"`
	Messages int `json:"messages"`
	// ToolOutputs are the tool results among the messages: a part of
	// Tokens and Messages, not an addition to them.
	ToolOutputs Count `json:"tool_outputs"`
}

// MessageCount is a number of tokens in a number of messages.
type MessageCount struct {
	Tokens   int `json:"tokens"`
	Messages int `json:"messages"`
}

// Savings are the tokens each layer would save now.
type Savings struct {
	Prune     int `json:"prune"`
	Summarize int `json:"summarize"`
	Full      int `json:"full"`
}

// Pinned is one entry marked `_extractable: false` in the context.
type Pinned struct {
	ID     string `json:"id"`
	Line   int    `json:"line"`
	Tokens int    `json:"tokens"`
}

// InspectReport is what `brainsurgeon context inspect` shows: where the
// context's tokens are.
type InspectReport struct {
	StatusReport
	// Conversation is every context message (the compaction summary
	// included), with the tool results among them.
	Conversation Conversation `json:"conversation"`
	// SystemPrompt is the estimator's overhead: tokens the model sees
	// that the transcript does not hold.
	SystemPrompt MessageCount `json:"system_prompt"`
	// Protected is the recent part the summarize layer keeps;
	// Compactable the part before it that a summary would replace.
	Protected   MessageCount `json:"protected"`
	Compactable MessageCount `json:"compactable"`
	// Savings estimates each layer's saving.
	Savings Savings `json:"savings"`
	// Pinned lists the pinned entries in the context; never nil.
	Pinned []Pinned `json:"pinned"`
}

// Event is one compaction on the active path.
type Event struct {
	// ID is the compaction entry's id; Line its line number.
	ID   string `json:"id"`
	Line int    `json:"line"`
	// At is the entry's timestamp.
	At time.Time `json:"at"`
	// Trigger and Layer come from details.brainsurgeon, or are "" for a
	// compaction the host made itself.
	Trigger Trigger `json:"trigger"`
	Layer   Layer   `json:"layer"`
	// BrainSurgeon is true when the entry carries details.brainsurgeon.
	BrainSurgeon bool `json:"brainsurgeon"`
	// FromHook is the entry's fromHook.
	FromHook bool `json:"from_hook"`
	// TokensBefore is the entry's tokensBefore; TokensAfter,
	// MessagesCompacted, Focus and Degraded come from
	// details.brainsurgeon (0, "", false when absent).
	TokensBefore      int    `json:"tokens_before"`
	TokensAfter       int    `json:"tokens_after"`
	MessagesCompacted int    `json:"messages_compacted"`
	Focus             string `json:"focus"`
	Degraded          bool   `json:"degraded"`
	// SummaryChars is the summary's length in characters.
	SummaryChars int `json:"summary_chars"`
	// FirstKeptEntryID is the entry's firstKeptEntryId.
	FirstKeptEntryID string `json:"first_kept_entry_id"`
}

// HistoryReport lists the compactions on the active path, newest first.
type HistoryReport struct {
	Session string `json:"session"`
	// Compactions counts every compaction on the active path; Events holds
	// at most the requested depth of them, newest first; never nil.
	Compactions int     `json:"compactions"`
	Events      []Event `json:"events"`
	// OffPath counts compaction entries that are not on the active path.
	OffPath int `json:"off_path"`
	// Risk grades Compactions with the default thresholds.
	Risk Risk `json:"risk"`
}

// Options configure one Compact call.
type Options struct {
	// Layer forces a layer; LayerNone chooses by the thresholds (and does
	// nothing when none is crossed).
	Layer Layer
	// Focus tells the summarizer what to keep ("--focus").
	Focus string
	// Trigger is TriggerManual (the default when empty) or TriggerAuto.
	Trigger Trigger
	// DryRun computes everything and writes nothing.
	DryRun bool
	// Summarizer writes the summary of the summarized span; nil is an
	// error for the summarize and full layers. The Summary's Reason
	// explains why it degraded; its Method names what wrote it in
	// details.brainsurgeon.summarizer.
	Summarizer Summarizer
	// Settings are the thresholds; the zero value means DefaultSettings.
	Settings Settings
	// Tokens say how tokens are counted.
	Tokens TokenOptions
	// Side and Policy drive the prune layer (package extract): the side
	// store for the extracted values and the extraction policy. A zero
	// Policy means extract.DefaultPolicy with every message eligible, the
	// recent ones protected by Settings.PruneProtectRecent tokens; a
	// Policy that is not Enabled gives only its KeepAfterRestore (when
	// set), the restore protection window.
	Side   bs.SideStore
	Policy extract.Policy
	// Restores is the log of the values the agent restored by any path
	// (see bs.RestoreLog); nil means none. The prune layer protects what
	// it holds for the policy's KeepAfterRestore, as it protects an entry's
	// "_restored" (extract.Extractor.Restores), and an automatic summarize
	// layer keeps those entries out of the summary (see Compact).
	Restores bs.RestoreLog
	// Clock tells the time (nil: the system clock); Logger receives the
	// log (nil: discard).
	Clock  bs.Clock
	Logger bs.Logger
}

// Result is what Compact did (or, with DryRun, would do).
type Result struct {
	Session string `json:"session"`
	// Layer is the layer that ran, or "" when none was needed.
	Layer Layer `json:"layer"`
	// TokensBefore and TokensAfter are the context sizes before and after.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// MessagesCompacted counts the context messages the summary replaces
	// (for prune: the entries extracted).
	MessagesCompacted int `json:"messages_compacted"`
	// FirstKeptEntryID is the new compaction's firstKeptEntryId; EntryID
	// the compaction entry's id ("" for prune).
	FirstKeptEntryID string `json:"first_kept_entry_id"`
	EntryID          string `json:"entry_id"`
	// Degraded is true when the summary was made without a model;
	// DegradedReason says why when the summarizer tells.
	Degraded       bool   `json:"degraded"`
	DegradedReason string `json:"degraded_reason"`
	// Warning is the most important warning (the full layer, a degraded
	// summary, many compactions); Warnings lists them all; never nil.
	Warning  string   `json:"warning"`
	Warnings []string `json:"warnings"`
	// DryRun is true when nothing was written.
	DryRun bool `json:"dry_run"`
	// Reason says why nothing was written to the session, when nothing
	// was: below every threshold, no valid cut point, a compaction that
	// would not make the context smaller, nothing the prune layer could
	// extract, or a dry run. It is empty when the session was written.
	Reason string `json:"reason,omitempty"`
	// Summary is the summary text written (or that would be written).
	Summary string `json:"summary"`
	// Details is the compaction entry's "details" object as written (or
	// as it would be): pi's readFiles and modifiedFiles and BrainSurgeon's
	// own record. A host that writes the entry itself (pi's
	// session_before_compact) stores it as it is. Nil for prune.
	Details json.RawMessage `json:"details,omitempty"`
	// Pinned counts the pinned entries carried into the summary.
	Pinned int `json:"pinned"`
	// Prune is the extraction result of the prune layer, or nil.
	Prune *extract.Result `json:"prune,omitempty"`
}

// ensure the signatures below stay what the CLI and API build against.
var (
	_ func(context.Context, bs.Transcript, Settings, TokenOptions) (StatusReport, error)  = Status
	_ func(context.Context, bs.Transcript, Settings, TokenOptions) (InspectReport, error) = Inspect
	_ func(context.Context, bs.Transcript, int) (HistoryReport, error)                    = History
	_ func(context.Context, bs.Store, bs.SessionRef, Options) (Result, error)             = Compact
)
