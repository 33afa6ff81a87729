package engine

// Temporary stand-ins for the engine's API, with the contract's
// signatures, so that the daemon side builds before the engine is merged.
// The lead deletes this file at merge.

import (
	"context"
	"encoding/json"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// ViewValue is the content of one entry as stored in the host's row.
type ViewValue struct {
	EntryID   string
	Content   json.RawMessage
	Collapsed bool
}

// CompactOptions are the parameters of a compact call.
type CompactOptions struct {
	TokenBudget   int
	Force         bool
	Focus         string
	CurrentTokens int
}

// CompactResult is the outcome of a compact call.
type CompactResult struct {
	Compacted                 bool
	Reason                    string
	Layer                     string
	TokensBefore, TokensAfter int
	Summary                   *SummaryRecord
}

var errTmp = fmt.Errorf("the context engine is not built into this binary yet: %w", bs.ErrUnsupported)

// Assemble is a stand-in.
func (e *Engine) Assemble(ctx context.Context, ref bs.SessionRef, req Request) (View, error) {
	return View{}, errTmp
}

// Value is a stand-in.
func (e *Engine) Value(ctx context.Context, ref bs.SessionRef, entryID string) (ViewValue, error) {
	return ViewValue{}, errTmp
}

// Status is a stand-in.
func (e *Engine) Status(ctx context.Context, ref bs.SessionRef) (Status, error) {
	return Status{}, errTmp
}

// Close is a stand-in.
func (e *Engine) Close() error { return nil }

// Compact is a stand-in.
func (e *Engine) Compact(ctx context.Context, ref bs.SessionRef, o CompactOptions) (CompactResult, error) {
	return CompactResult{}, errTmp
}

// Describe is a stand-in.
func (e *Engine) Describe(ctx context.Context, ref bs.SessionRef, summaryID string) (SummaryRecord, error) {
	return SummaryRecord{}, errTmp
}

// Expand is a stand-in.
func (e *Engine) Expand(ctx context.Context, ref bs.SessionRef, summaryID string) ([][]byte, error) {
	return nil, errTmp
}

// IsSummaryID reports whether s is "sum-" and 12 lowercase hex digits.
func IsSummaryID(s string) bool {
	if len(s) != 16 || s[:4] != "sum-" {
		return false
	}
	for _, c := range s[4:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
