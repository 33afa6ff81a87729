package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/internal/agenttext"
	"github.com/brainsurgeon/brainsurgeon/recall"
)

// Search searches the session ref for pattern, as recall_grep and
// `purge_control grep` do: each hit goes to each as it is found, and the
// report says how many there were (collect keeps the hits in it too). A
// pattern that is not a valid regular expression, or Tools without a
// Store, wraps brainsurgeon.ErrInvalid.
func (t *Tools) Search(ctx context.Context, ref bs.SessionRef, pattern string, o recall.GrepOptions, collect bool, each func(recall.Hit)) (recall.Report, error) {
	if t.Store == nil {
		return recall.Report{}, fmt.Errorf("agenttools: Search needs Tools with a Store, found none: %w", bs.ErrInvalid)
	}
	tr, err := t.Store.Open(ctx, ref, nil)
	if err != nil {
		return recall.Report{}, err
	}
	return recall.Search(ctx, tr, t.Side, pattern, o, collect, each)
}

// recallGrep runs recall_grep, as `brainsurgeon context grep`.
func (t *Tools) recallGrep(ctx context.Context, ref bs.SessionRef, c call) (Result, error) {
	var p struct {
		Pattern    string          `json:"pattern"`
		Regex      bool            `json:"regex"`
		IgnoreCase bool            `json:"ignore_case"`
		Max        *int            `json:"max"`
		In         json.RawMessage `json:"in"`
	}
	if err := c.decode(&p); err != nil {
		return Result{}, err
	}
	if p.Pattern == "" {
		return Result{}, errors.New(`recall_grep: expected a non-empty "pattern", found none`)
	}
	if len(p.Pattern) > MaxGrepPattern {
		return Result{}, fmt.Errorf("recall_grep: pattern: expected at most %d bytes, found %d", MaxGrepPattern, len(p.Pattern))
	}
	max := recall.DefaultMaxHits
	if p.Max != nil {
		if *p.Max < 1 || *p.Max > MaxGrepHits {
			return Result{}, fmt.Errorf("recall_grep: max: expected 1 to %d, found %d", MaxGrepHits, *p.Max)
		}
		max = *p.Max
	}
	ins, err := stringList(p.In)
	if err != nil {
		return Result{}, fmt.Errorf("recall_grep: in: %w", err)
	}
	var where []recall.Where
	for _, w := range ins {
		switch w := recall.Where(strings.TrimSpace(w)); w {
		case recall.Active, recall.Compacted, recall.OffPath, recall.Extracted:
			where = append(where, w)
		case "":
		default:
			return Result{}, fmt.Errorf("recall_grep: in %q: expected active, compacted, off_path or extracted", w)
		}
	}
	o := recall.GrepOptions{Regexp: p.Regex, IgnoreCase: p.IgnoreCase, MaxHits: max, In: where, Logger: t.Logger}
	var b strings.Builder
	out, err := t.Search(ctx, ref, p.Pattern, o, true, func(h recall.Hit) {
		b.WriteString(agenttext.GrepHit(h))
		b.WriteByte('\n')
	})
	if errors.Is(err, bs.ErrInvalid) {
		return Result{}, fmt.Errorf("recall_grep: bad regex pattern %q: %v", p.Pattern, err)
	}
	if err != nil {
		return Result{}, err
	}
	agenttext.GrepSummary(&b, out, p.Pattern, max)
	return textResult(b.String(), map[string]any{"count": out.Count, "truncated": out.Truncated}), nil
}

// recallDescribe runs recall_describe, as `brainsurgeon context describe`.
func (t *Tools) recallDescribe(ctx context.Context, ref bs.SessionRef, c call) (Result, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := c.decode(&p); err != nil {
		return Result{}, err
	}
	if p.ID == "" {
		return Result{}, errors.New(`recall_describe: expected "id", an entry id or a summary id (sum-…), found none`)
	}
	if engine.IsSummaryID(p.ID) {
		return t.describeSummary(ctx, ref, p.ID)
	}
	tr, err := t.Store.Open(ctx, ref, nil)
	if err != nil {
		return Result{}, err
	}
	d, err := recall.Describe(ctx, tr, p.ID)
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	agenttext.Description(&b, d)
	return textResult(b.String(), map[string]any{"entry_id": d.EntryID, "line": d.Line, "type": d.Type, "role": d.Role,
		"where": d.Where, "bytes": d.Bytes, "extracted": d.Extracted, "compaction": d.Compaction != nil}), nil
}

// recallExpand runs recall_expand, as `brainsurgeon context expand`.
func (t *Tools) recallExpand(ctx context.Context, ref bs.SessionRef, c call) (Result, error) {
	var p struct {
		ID      string `json:"id"`
		Resolve bool   `json:"resolve"`
		Max     int    `json:"max"`
	}
	if err := c.decode(&p); err != nil {
		return Result{}, err
	}
	if p.ID == "" {
		return Result{}, errors.New(`recall_expand: expected "id", a compaction entry id or a summary id (sum-…), found none`)
	}
	if p.Max < 0 {
		return Result{}, fmt.Errorf("recall_expand: max: expected 0 (all) or more, found %d", p.Max)
	}
	if engine.IsSummaryID(p.ID) {
		return t.expandSummary(ctx, ref, p.ID, p.Max)
	}
	tr, err := t.Store.Open(ctx, ref, nil)
	if err != nil {
		return Result{}, err
	}
	x, err := recall.Expand(ctx, tr, p.ID, recall.ExpandOptions{Resolve: p.Resolve, Side: t.Side, MaxEntries: p.Max, Logger: t.Logger})
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	b.WriteString(agenttext.ExpansionHeader(x, p.Max))
	b.WriteByte('\n')
	agenttext.ExpansionBody(&b, x, func(id string) string { return `recall_expand {"id":"` + id + `"}` })
	covers := make([]string, len(x.Covers))
	for i, c := range x.Covers {
		covers[i] = c.ID
	}
	return textResult(b.String(), map[string]any{"total": x.Total, "entries": len(x.Entries), "truncated": x.Truncated, "covers": covers}), nil
}

// describeSummary answers recall_describe of a summary id (engine.IsSummaryID).
func (t *Tools) describeSummary(ctx context.Context, ref bs.SessionRef, id string) (Result, error) {
	if t.Engine == nil {
		return Result{}, fmt.Errorf("recall_describe %s: summary ids come from the context engine, which this server does not run", id)
	}
	rec, err := t.Engine.Describe(ctx, ref, id)
	if err != nil {
		return Result{}, fmt.Errorf("recall_describe %s: %w", id, err)
	}
	var b strings.Builder
	agenttext.SummaryDescription(&b, rec)
	return textResult(b.String(), map[string]any{"id": rec.ID, "level": rec.Level, "layer": rec.Layer, "entries": rec.Entries,
		"children": rec.Children, "parent": rec.Parent, "degraded": rec.Degraded, "tokens": rec.Tokens,
		"tokens_before": rec.TokensBefore, "pinned": rec.Pinned}), nil
}

// expandSummary answers recall_expand of a summary id: the original
// messages it covers, as the host's rows store them, at most max of them
// (0: all), like the expansion of a compaction entry.
func (t *Tools) expandSummary(ctx context.Context, ref bs.SessionRef, id string, max int) (Result, error) {
	if t.Engine == nil {
		return Result{}, fmt.Errorf("recall_expand %s: summary ids come from the context engine, which this server does not run", id)
	}
	lines, err := t.Engine.Expand(ctx, ref, id)
	if err != nil {
		return Result{}, fmt.Errorf("recall_expand %s: %w", id, err)
	}
	total := len(lines)
	shown := lines
	if max > 0 && len(shown) > max {
		shown = shown[:max]
	}
	var b strings.Builder
	b.WriteString(agenttext.SummaryExpansionHeader(id, total, len(shown), max))
	b.WriteByte('\n')
	agenttext.SummaryExpansionBody(&b, shown)
	return textResult(b.String(), map[string]any{"id": id, "total": total, "entries": len(shown), "truncated": len(shown) < total}), nil
}
