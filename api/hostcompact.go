package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/compact"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/compactwire"
)

// hostCompactionRequest is the body of POST /api/plugin/v1/compaction.
type hostCompactionRequest struct {
	pluginSessionRequest
	// CustomInstructions tells the summarizer what to keep (the host's
	// /compact argument).
	CustomInstructions string `json:"custom_instructions"`
	// Layer is "summarize" (the default) or "full".
	Layer string `json:"layer"`
}

// HostCompaction is the answer of POST /api/plugin/v1/compaction: the
// compaction BrainSurgeon's layers make of the session, for a host that
// writes the entry itself (pi's session_before_compact). Summary is ""
// when there is nothing to compact (Reason says why): the host then
// compacts as it would without BrainSurgeon.
type HostCompaction struct {
	OK bool `json:"ok"`
	// Layer is the layer that made it ("summarize" or "full"), "" when
	// none.
	Layer string `json:"layer"`
	// Summary, FirstKeptEntryID, TokensBefore and Details are the
	// compaction entry's summary, firstKeptEntryId, tokensBefore and
	// details.
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"first_kept_entry_id"`
	TokensBefore     int             `json:"tokens_before"`
	TokensAfter      int             `json:"tokens_after"`
	Details          json.RawMessage `json:"details,omitempty"`
	// Degraded is true when the summary was made without a model.
	Degraded bool     `json:"degraded"`
	Reason   string   `json:"reason,omitempty"`
	Warnings []string `json:"warnings"`
}

// hostCompaction answers POST /api/plugin/v1/compaction: the summarize
// (or full) layer's compaction of the session as compact.Compact makes it
// in a dry run (the same cut, pinned entries and summarizer as `brainsurgeon
// compact`), nothing written: the host appends the entry, in its own
// format, under its own lock. Read-only mode answers it too (it writes
// nothing).
func (s *server) hostCompaction(r *http.Request) (any, error) {
	var q hostCompactionRequest
	if err := decodePlugin(r, &q); err != nil {
		return nil, err
	}
	if len(q.CustomInstructions) > MaxCompactInstructions {
		return nil, fmt.Errorf("custom_instructions: expected at most %d bytes, found %d: %w", MaxCompactInstructions, len(q.CustomInstructions), bs.ErrInvalid)
	}
	if !utf8.ValidString(q.CustomInstructions) {
		return nil, fmt.Errorf("custom_instructions: expected valid UTF-8: %w", bs.ErrInvalid)
	}
	layer := compact.LayerSummarize
	switch q.Layer {
	case "", string(compact.LayerSummarize):
	case string(compact.LayerFull):
		layer = compact.LayerFull
	default:
		return nil, fmt.Errorf("layer: expected %q, %q or none, found %.40q: %w", compact.LayerSummarize, compact.LayerFull, q.Layer, bs.ErrInvalid)
	}
	ref, err := s.resolve(r.Context(), q.pluginSessionRequest)
	if err != nil {
		return nil, err
	}
	cp, err := s.compaction(r.Context())
	if err != nil {
		return nil, err
	}
	var sum compact.Summarizer
	if cp.Summarizer != nil {
		sum = cp.Summarizer()
	}
	if sum == nil {
		sum = compactwire.Deterministic()
	}
	ctx, cancel := context.WithTimeout(r.Context(), CompactDeadline)
	defer cancel()
	res, err := compact.Compact(ctx, s.set.Store, ref, compact.Options{Layer: layer, Focus: q.CustomInstructions,
		Trigger: compact.TriggerManual, DryRun: true, Summarizer: sum, Settings: cp.Settings, Tokens: cp.Tokens,
		Side: s.set.Side, Logger: s.opts.Logger, Restores: s.restoreLog(),
		Policy: extract.Policy{KeepAfterRestore: cp.KeepAfterRestore}})
	if err != nil {
		return nil, err
	}
	out := HostCompaction{OK: true, Layer: string(res.Layer), TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
		Degraded: res.Degraded, Warnings: res.Warnings}
	if res.Summary == "" || res.TokensAfter >= res.TokensBefore {
		out.Layer = ""
		out.Reason = res.Reason
		return out, nil
	}
	out.Summary, out.FirstKeptEntryID, out.Details = res.Summary, res.FirstKeptEntryID, res.Details
	s.log.Info("compaction for the host", "session", ref.String(), "layer", res.Layer, "first_kept", res.FirstKeptEntryID,
		"tokens_before", res.TokensBefore, "tokens_after", res.TokensAfter, "degraded", res.Degraded)
	return out, nil
}
