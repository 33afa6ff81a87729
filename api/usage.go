package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// UsageSeries is the answer of GET /api/sessions/{agent}/{id}/usage: the
// context size of a session turn by turn, as the provider recorded it, and
// the steps that changed it.
type UsageSeries struct {
	// Session is "agent/sessionId".
	Session string `json:"session"`
	// Points has one point per recorded turn: each assistant message on
	// the active path whose recorded usage is not zero, in path order
	// (the host's delivery mirrors and failed turns are not turns:
	// tokens.Usage.Answered).
	Points []UsagePoint `json:"points"`
	// Markers are the compactions on the active path, the extraction
	// passes (from the side store) and the restores (the entries'
	// "_restored" times), in time order.
	Markers []UsageMarker `json:"markers"`
}

// UsagePoint is one recorded turn.
type UsagePoint struct {
	// Turn counts the recorded turns from 1.
	Turn int `json:"turn"`
	// EntryID is the assistant message's entry id.
	EntryID string `json:"entry_id"`
	// Timestamp is the message's time (absent when the entry has none).
	Timestamp time.Time `json:"timestamp,omitzero"`
	// Tokens is the context the request carried: the usage's input plus
	// cache reads plus cache writes (output excluded).
	Tokens int64 `json:"tokens"`
	// Output is the usage's output tokens.
	Output int64 `json:"output"`
}

// Kinds of UsageMarker.
const (
	MarkerCompaction = "compaction"
	MarkerExtraction = "extraction"
	MarkerRestore    = "restore"
)

// UsageMarker is one step that changed the session: a compaction, an
// extraction pass or a restore.
type UsageMarker struct {
	// Kind is "compaction", "extraction" or "restore".
	Kind string `json:"kind"`
	// Timestamp is when the step happened (a compaction's entry time, the
	// values' extraction time, the "_restored" time).
	Timestamp time.Time `json:"timestamp,omitzero"`
	// EntryID is the compaction's entry, or the restored entry; empty for
	// an extraction pass, which touches many.
	EntryID string `json:"entry_id,omitempty"`
	// AfterTurn is the number of recorded turns before the step: 0 before
	// the first turn, len(points) after the last. A compaction is placed
	// by its position on the path, the other steps by their time.
	AfterTurn int `json:"after_turn"`
	// Entries and Values count what an extraction pass moved out
	// (values still in the side store), and SavedBytes the bytes the
	// transcript lost by it (the values' sizes minus their placeholders').
	// For a restore, Values and SavedBytes are negative: what came back.
	Entries    int   `json:"entries,omitempty"`
	Values     int   `json:"values,omitempty"`
	SavedBytes int64 `json:"saved_bytes,omitempty"`
	// TokensBefore is a compaction's recorded context before it, and
	// TokensAfter the context after it (ours record it; else the next
	// recorded turn's); SavedTokens their difference, when both are known.
	TokensBefore int64 `json:"tokens_before,omitempty"`
	TokensAfter  int64 `json:"tokens_after,omitempty"`
	SavedTokens  int64 `json:"saved_tokens,omitempty"`
}

// usageLineInfo is what the usage series needs of one line.
type usageLineInfo struct {
	ctx, out      int64
	before, after int64 // a compaction's tokensBefore and our tokensAfter
	restored      time.Time
}

var (
	usageBytes        = []byte(`"usage"`)
	tokensBeforeBytes = []byte(`"tokensBefore"`)
)

// usage answers GET /api/sessions/{agent}/{id}/usage.
func (s *server) usage(r *http.Request) (any, error) {
	ref, err := s.findSession(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	lines := map[int]usageLineInfo{}
	v := &bs.Visitor{
		Want: func([]byte) bool { return false }, // the envelope and Raw are enough
		Visit: func(e *bs.Entry) error {
			if e.Kind != bs.KindEntry {
				return nil
			}
			var li usageLineInfo
			switch {
			case e.Type == "compaction" && bytes.Contains(e.Raw, tokensBeforeBytes):
				var c struct {
					TokensBefore int64 `json:"tokensBefore"`
					Details      struct {
						BrainSurgeon struct {
							TokensAfter int64 `json:"tokensAfter"`
						} `json:"brainsurgeon"`
					} `json:"details"`
				}
				if json.Unmarshal(e.Raw, &c) == nil {
					li.before, li.after = c.TokensBefore, c.Details.BrainSurgeon.TokensAfter
				}
			case (e.Role == "assistant" || e.Type == "assistant") && bytes.Contains(e.Raw, usageBytes):
				if u, ok := tokens.RecordedUsage(e.Raw); ok && u.Answered() {
					li.ctx, li.out = u.Context, u.Output
				}
			}
			li.restored = e.Restored
			if li != (usageLineInfo{}) {
				lines[e.Line] = li
			}
			return nil
		},
	}
	tr, err := s.set.Store.Open(ctx, ref, v)
	if err != nil {
		return nil, err
	}
	out := UsageSeries{Session: agentName(ref) + "/" + ref.ID, Points: []UsagePoint{}, Markers: []UsageMarker{}}
	nodes := tr.Nodes()
	onPath := map[string]bool{}
	var restores []UsageMarker
	var comps []int // indexes into Markers of compactions waiting for the next turn
	for _, i := range tr.ActivePath() {
		n := &nodes[i]
		if n.ID != "" {
			onPath[n.ID] = true
		}
		li := lines[n.Line]
		if n.Kind == bs.KindEntry && n.Type == "compaction" {
			m := UsageMarker{Kind: MarkerCompaction, Timestamp: n.Timestamp, EntryID: n.ID, AfterTurn: len(out.Points),
				TokensBefore: li.before, TokensAfter: li.after}
			out.Markers = append(out.Markers, m)
			if li.after == 0 {
				comps = append(comps, len(out.Markers)-1)
			}
		}
		if !li.restored.IsZero() {
			restores = append(restores, UsageMarker{Kind: MarkerRestore, Timestamp: li.restored, EntryID: n.ID})
		}
		if li.ctx <= 0 || (n.Role != "assistant" && n.Type != "assistant") {
			continue
		}
		out.Points = append(out.Points, UsagePoint{Turn: len(out.Points) + 1, EntryID: n.ID, Timestamp: n.Timestamp, Tokens: li.ctx, Output: li.out})
		for _, k := range comps {
			out.Markers[k].TokensAfter = li.ctx
		}
		comps = comps[:0]
	}
	for k := range out.Markers {
		if m := &out.Markers[k]; m.TokensBefore > 0 && m.TokensAfter > 0 {
			m.SavedTokens = m.TokensBefore - m.TokensAfter
		}
	}
	passes, stats, err := s.extractionPasses(r, ref, onPath)
	if err != nil {
		return nil, err
	}
	// A restore's size is its values' sizes, from the side record.
	for k := range restores {
		for _, v := range stats[restores[k].EntryID] {
			restores[k].Values--
			restores[k].SavedBytes -= v.saved
		}
	}
	for _, m := range append(passes, restores...) {
		m.AfterTurn = turnsBefore(out.Points, m.Timestamp)
		out.Markers = append(out.Markers, m)
	}
	sort.SliceStable(out.Markers, func(i, j int) bool {
		a, b := out.Markers[i], out.Markers[j]
		if a.AfterTurn != b.AfterTurn {
			return a.AfterTurn < b.AfterTurn
		}
		return a.Timestamp.Before(b.Timestamp)
	})
	return out, nil
}

// extractionPasses reads the session's side records and groups their
// values by extraction time: one marker per pass. Values of entries that
// are not on the active path are left out; a record that cannot be read is
// skipped (GET …/extracted reports it). It also returns the values of
// each entry, for the restore markers.
func (s *server) extractionPasses(r *http.Request, ref bs.SessionRef, onPath map[string]bool) ([]UsageMarker, map[string][]valueStat, error) {
	ctx := r.Context()
	infos, err := s.set.Side.List(ctx, ref)
	if err != nil {
		if errors.Is(err, bs.ErrNotFound) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	stats, err := s.sideStats.get(ctx, s.set.Side, ref, infos)
	if err != nil {
		return nil, nil, err
	}
	type pass struct {
		m       UsageMarker
		entries map[string]bool
	}
	by := map[time.Time]*pass{}
	for entryID, vals := range stats {
		if !onPath[entryID] {
			continue
		}
		for _, v := range vals {
			p := by[v.at]
			if p == nil {
				p = &pass{m: UsageMarker{Kind: MarkerExtraction, Timestamp: v.at}, entries: map[string]bool{}}
				by[v.at] = p
			}
			p.entries[entryID] = true
			p.m.Values++
			p.m.SavedBytes += v.saved
		}
	}
	out := make([]UsageMarker, 0, len(by))
	for _, p := range by {
		p.m.Entries = len(p.entries)
		out = append(out, p.m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Timestamp.Before(out[j].Timestamp) })
	return out, stats, nil
}

// turnsBefore counts the points recorded at or before t (points without a
// time count when an earlier point has one that is not after t).
func turnsBefore(points []UsagePoint, t time.Time) int {
	n := 0
	for i, p := range points {
		if p.Timestamp.IsZero() || !p.Timestamp.After(t) {
			n = i + 1
			continue
		}
		break
	}
	return n
}

// valueStat is what the usage series needs of one extracted value: when
// its pass ran (to the second: one pass stamps its values alike) and the
// bytes the transcript lost by it.
type valueStat struct {
	at    time.Time
	saved int64
}

// sideStatsCache keeps, per session, the valueStats of its side records,
// keyed by a fingerprint of the side store's listing (entry, size and time
// of each record): reading every record costs far more than the rest of
// GET …/usage, and the records only change when a pass, a restore or
// retention writes. At most maxSideStats sessions are kept.
type sideStatsCache struct {
	mu sync.Mutex
	m  map[string]sideStatsEntry
}

type sideStatsEntry struct {
	sig   [sha256.Size]byte
	stats map[string][]valueStat
}

const maxSideStats = 64

// get returns the valueStats of ref's side records by entry id, reading
// the records when the listing changed since the last call. A record that
// cannot be read is left out (GET …/extracted reports it).
func (c *sideStatsCache) get(ctx context.Context, side bs.SideStore, ref bs.SessionRef, infos []bs.SideInfo) (map[string][]valueStat, error) {
	h := sha256.New()
	for _, info := range infos {
		fmt.Fprintf(h, "%s\x00%d\x00%d\n", info.EntryID, info.Size, info.ModTime.UnixNano())
	}
	var sig [sha256.Size]byte
	h.Sum(sig[:0])
	key := ref.String()
	c.mu.Lock()
	if e, ok := c.m[key]; ok && e.sig == sig {
		c.mu.Unlock()
		return e.stats, nil
	}
	c.mu.Unlock()
	stats := make(map[string][]valueStat, len(infos))
	for _, info := range infos {
		rec, err := extract.LoadRecord(ctx, side, ref, info.EntryID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		for _, val := range rec.Values {
			at := val.ExtractedAt
			if at.IsZero() {
				at = rec.ExtractedAt
			}
			stats[rec.EntryID] = append(stats[rec.EntryID], valueStat{at: at.Truncate(time.Second), saved: int64(val.Size - len(val.Placeholder))})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]sideStatsEntry{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= maxSideStats {
		for k := range c.m { // drop any one: the cache only spares repeated reads
			delete(c.m, k)
			break
		}
	}
	c.m[key] = sideStatsEntry{sig: sig, stats: stats}
	return stats, nil
}
