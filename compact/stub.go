package compact

import (
	"context"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, bs.ErrInvalid)...)
}

// Overhead returns 0: a plain tokenizer knows nothing outside the transcript.
func (e TokenizerEstimator) Overhead() int { return 0 }

// Predict returns the sum of the tokenizer's counts of the lines.
func (e TokenizerEstimator) Predict(messages [][]byte) int {
	t := e.Tokenizer
	if t == nil {
		t = bs.CharsPer4{}
	}
	n := 0
	for _, m := range messages {
		n += t.Tokens(m)
	}
	return n
}

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

// Status reports the size of tr's context against the window, the
// compactions on its active path and the risk they carry.
func Status(ctx context.Context, tr bs.Transcript, s Settings, tok TokenOptions) (StatusReport, error) {
	return StatusReport{}, fmt.Errorf("compact.Status: not implemented yet: %w", bs.ErrUnsupported)
}

// Inspect reports where the tokens of tr's context are.
func Inspect(ctx context.Context, tr bs.Transcript, s Settings, tok TokenOptions) (InspectReport, error) {
	return InspectReport{}, fmt.Errorf("compact.Inspect: not implemented yet: %w", bs.ErrUnsupported)
}

// History lists the compactions on tr's active path, newest first; depth
// bounds how many events are returned (0 or less: all).
func History(ctx context.Context, tr bs.Transcript, depth int) (HistoryReport, error) {
	return HistoryReport{}, fmt.Errorf("compact.History: not implemented yet: %w", bs.ErrUnsupported)
}

// Compact runs one compaction layer on the session ref of st.
func Compact(ctx context.Context, st bs.Store, ref bs.SessionRef, o Options) (Result, error) {
	return Result{}, fmt.Errorf("compact.Compact: not implemented yet: %w", bs.ErrUnsupported)
}
