package engine

import (
	"fmt"
	"math"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
)

// ServingWithin is how recent the last view of a session must be for the
// engine to count as serving it: the host routes the session's turns and
// its /compact through the engine. The daemon's automatic compaction
// leaves such a session to the engine over the same span
// (daemon.EngineServesWithin).
const ServingWithin = 24 * time.Hour

// CompactHint tells a user how a session the engine serves is compacted.
const CompactHint = "BrainSurgeon's context engine serves this session: it summarizes the model's view when the thresholds are crossed, " +
	"and /compact in the chat is answered by it (a summary in the model's view; the transcript is not written)"

// Serving reports whether the engine serves the session whose engine
// status is st (nil when it never served it) at time now: its last view is
// within ServingWithin.
func Serving(st *Status, now time.Time) bool {
	return st != nil && st.Active && st.View != nil && !st.View.At.IsZero() && now.Sub(st.View.At) < ServingWithin
}

// CompactLayer returns the layer a compaction through BrainSurgeon's CLI or
// API runs on the transcript of the session ref when layer is asked for
// (compact.LayerNone: the thresholds choose) and st is the engine's status
// of the session at time now. While the engine serves the session its
// summaries live in the model's view, and a compaction entry in the
// transcript as well would summarize the same history twice (the daemon's
// automatic compaction leaves such a session to the engine too): only the
// prune layer runs, so no layer asked becomes compact.LayerPrune, and
// summarize or full is refused with an error wrapping
// brainsurgeon.ErrUnsupported that names /compact in the chat as the way.
// Otherwise layer is returned as it is.
func CompactLayer(ref bs.SessionRef, layer compact.Layer, st *Status, now time.Time) (compact.Layer, error) {
	if !Serving(st, now) {
		return layer, nil
	}
	switch layer {
	case compact.LayerNone:
		return compact.LayerPrune, nil
	case compact.LayerSummarize, compact.LayerFull:
		return layer, fmt.Errorf("compact %s: layer %s refused: %s; only the prune layer runs on its transcript: use /compact in the chat to summarize it: %w",
			ref, layer, CompactHint, bs.ErrUnsupported)
	}
	return layer, nil
}

// Figures is the status of a session's context as the CLI's `context
// status`, the API and the UI show it: the stored transcript's report,
// with the engine's compactions and the size of the last view it sent
// the model when it serves the session.
type Figures struct {
	compact.StatusReport
	// TranscriptCompactions counts the compaction entries on the
	// transcript's active path and EngineCompactions the engine's
	// summaries of messages; StatusReport.Compactions is their sum, which
	// StatusReport.Risk grades.
	TranscriptCompactions int `json:"transcript_compactions"`
	EngineCompactions     int `json:"engine_compactions"`
	// EngineServes is true when the engine served a view of the session
	// within ServingWithin.
	EngineServes bool `json:"engine_serves"`
	// ViewTokens is the predicted size of the last view's first model
	// request (what the model is sent, overhead included) and
	// ViewPercent its share of the window; 0 without a view. Tokens stays
	// the stored transcript's.
	ViewTokens  int     `json:"view_tokens"`
	ViewPercent float64 `json:"view_percent"`
	// Layers are the layers a compaction through BrainSurgeon's CLI or API
	// can run on the transcript: all three; "prune" alone when the store
	// cannot take a compaction entry, or when the engine serves the
	// session (its summaries live in the model's view, and a compaction
	// entry as well would summarize the same history twice). Never nil.
	Layers []compact.Layer `json:"layers"`
	// CompactHint says how the session is compacted when not every layer
	// runs here ("" when they all do).
	CompactHint string `json:"compact_hint"`
	// Engine is the engine's status, nil when it never served the session.
	Engine *Status `json:"engine,omitempty"`
}

// Join returns the figures of a session whose stored transcript has the
// report r and whose engine status is st (nil, or not Active, when the
// engine never served it), at time now. With the engine's compactions the
// count, the risk and the warnings include the engine's summaries; while
// the engine serves the session, the recommendations to compact the
// transcript and the warnings about the transcript's size against the
// thresholds are replaced by CompactHint, since the model is sent the
// view, not the transcript.
func Join(r compact.StatusReport, st *Status, s compact.Settings, now time.Time) Figures {
	f := Figures{StatusReport: r, TranscriptCompactions: r.Compactions}
	f.Warnings = append([]string{}, r.Warnings...)
	f.Recommendations = append([]string{}, r.Recommendations...)
	if st != nil && st.Active {
		f.Engine = st
		f.EngineCompactions = st.Compactions
		f.Compactions += st.Compactions
		if s == (compact.Settings{}) {
			s = compact.DefaultSettings()
		}
		f.Risk = compact.RiskOf(f.Compactions, s.WarnAt, s.HardWarnAt)
		if st.Warning != "" {
			f.Warnings = append(f.Warnings, st.Warning)
		}
		if v := st.View; v != nil {
			f.ViewTokens = v.PredictedTokens
			if f.Window > 0 {
				f.ViewPercent = math.Round(float64(v.PredictedTokens)*1000/float64(f.Window)) / 10
			}
			f.EngineServes = Serving(st, now)
		}
	}
	switch {
	case f.EngineServes:
		f.Layers = []compact.Layer{compact.LayerPrune}
		f.CompactHint = CompactHint
		f.Warnings = dropPrefixed(f.Warnings, "context at ")
		f.Recommendations = dropPrefixed(f.Recommendations, "brainsurgeon compact (", "brainsurgeon compact --layer full", "compaction is not possible here")
		if f.Layer == compact.LayerSummarize || f.Layer == compact.LayerFull {
			f.Layer = compact.LayerNone
		}
	case !f.CanCompact:
		f.Layers = []compact.Layer{compact.LayerPrune}
		f.CompactHint = "only the prune layer runs here: " + f.Refusal
	default:
		f.Layers = []compact.Layer{compact.LayerPrune, compact.LayerSummarize, compact.LayerFull}
	}
	return f
}

// dropPrefixed returns xs without the sentences that start with one of
// the prefixes (the transcript's advice that does not hold for the view).
func dropPrefixed(xs []string, prefixes ...string) []string {
	out := xs[:0]
	for _, x := range xs {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(x, p)
		}
		if !drop {
			out = append(out, x)
		}
	}
	return out
}
