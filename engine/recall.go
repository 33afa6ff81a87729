package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
)

// Describe returns the record of the session's summary summaryID: its
// level, the layer that made it, the entries (or, condensed, the
// summaries) it covers, whether it is degraded, its sizes. An id that is
// not a summary id wraps bs.ErrInvalid; one the session does not have wraps
// bs.ErrNotFound.
func (e *Engine) Describe(ctx context.Context, ref bs.SessionRef, summaryID string) (SummaryRecord, error) {
	_, r, err := e.summary(ctx, ref, summaryID)
	if err != nil {
		return SummaryRecord{}, err
	}
	return *r, nil
}

// Expand returns the raw stored lines of the messages the session's
// summary summaryID covers, in order: its entries, or for a condensed
// summary its children's, recursively. The lines are the host's, byte for
// byte. A covered entry the session no longer holds fails the call with an
// error wrapping bs.ErrNotFound that names it.
func (e *Engine) Expand(ctx context.Context, ref bs.SessionRef, summaryID string) ([][]byte, error) {
	st, r, err := e.summary(ctx, ref, summaryID)
	if err != nil {
		return nil, err
	}
	if e.Store == nil {
		return nil, fmt.Errorf("expand %s of %s: the engine has no store: %w", summaryID, ref, bs.ErrInvalid)
	}
	ids := leaves(index(st), r)
	tr, err := e.Store.Open(ctx, ref, nil)
	if err != nil {
		return nil, fmt.Errorf("expand %s of %s: %w", summaryID, ref, err)
	}
	lineOf := make([]int, len(ids))
	var missing []string
	for i, id := range ids {
		n, ok := tr.Node(id)
		if !ok {
			missing = append(missing, id)
			continue
		}
		lineOf[i] = n.Line
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("expand %s of %s: expected the %d entries it covers in the session, %d are gone (%s): %w",
			summaryID, ref, len(ids), len(missing), strings.Join(missing[:min(len(missing), 5)], ", "), bs.ErrNotFound)
	}
	want := slices.Clone(lineOf)
	slices.Sort(want)
	want = slices.Compact(want)
	got := make(map[int][]byte, len(want))
	for en, err := range tr.Lines(ctx, want) {
		if err != nil {
			return nil, fmt.Errorf("expand %s of %s: %w", summaryID, ref, err)
		}
		got[en.Line] = en.Raw
	}
	out := make([][]byte, len(ids))
	for i, l := range lineOf {
		raw, ok := got[l]
		if !ok {
			return nil, fmt.Errorf("expand %s of %s: expected line %d (entry %s), the store did not return it: %w",
				summaryID, ref, l, ids[i], bs.ErrChanged)
		}
		out[i] = raw
	}
	return out, nil
}

// summary loads the session's state and finds summaryID in it.
func (e *Engine) summary(ctx context.Context, ref bs.SessionRef, summaryID string) (*State, *SummaryRecord, error) {
	if !IsSummaryID(summaryID) {
		return nil, nil, fmt.Errorf("summary of %s: expected an id of the form sum-<12 lowercase hex digits>, got %q: %w", ref, summaryID, bs.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	st, err := e.loadState(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("summary %s of %s: %w", summaryID, ref, err)
	}
	r := index(st)[summaryID]
	if r == nil {
		return nil, nil, fmt.Errorf("summary %s of %s: the session has no such summary (%s): %w", summaryID, ref, plural.Count(len(st.Summaries), "summary", "summaries"), bs.ErrNotFound)
	}
	return st, r, nil
}

// IsSummaryID reports whether s is a summary id: "sum-" and 12 lowercase
// hex digits.
func IsSummaryID(s string) bool {
	if len(s) != 16 || !strings.HasPrefix(s, "sum-") {
		return false
	}
	for _, c := range s[4:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
