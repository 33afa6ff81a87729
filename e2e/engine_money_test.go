//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Prompt-cache prices relative to the input price: providers bill the prefix a request shares with a cached
// earlier request at about a tenth of the input price, and the rest, which they write to the cache, at about 1.25
// times it.
const (
	cacheReadWeight  = 0.1
	cacheWriteWeight = 1.25
	// moneyGoal is the share of the legacy engine's cache-weighted input the engine must save (issue 33).
	moneyGoal = 0.60
)

// requestCost is one model request's cache-weighted input.
type requestCost struct {
	// Bytes is the size of what a provider caches a prefix of (see [cachePrompt]); Cached the bytes of it the
	// request shares as a prefix with the previous request of the same session.
	Bytes  int `json:"bytes"`
	Cached int `json:"cached_bytes"`
	// Weighted is Cached × [cacheReadWeight] + (Bytes − Cached) × [cacheWriteWeight].
	Weighted float64 `json:"weighted"`
	// Floor is the least any context engine could make of the request (see [floorOf]).
	Floor float64 `json:"floor"`
}

// floorOf returns the least cache-weighted input any context engine could make of the request body: the host's
// own part (the JSON of the tools and of the leading system messages) read from the cache, and the messages new to
// the provider (the newest assistant message and those after it; every message but the system ones when there is
// no assistant message) written to it. An engine that sent no other history and never changed the prefix would
// cost that. A body that is not a JSON object counts whole at the write price.
func floorOf(body []byte) float64 {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return float64(len(body)) * cacheWriteWeight
	}
	host, lead, newest := len(req.Tools), 0, -1
	for i, m := range req.Messages {
		var r struct {
			Role string `json:"role"`
		}
		_ = json.Unmarshal(m, &r)
		switch {
		case r.Role == "system" && i == lead:
			host += len(m)
			lead++
		case r.Role == "assistant":
			newest = i
		}
	}
	if newest < 0 {
		newest = lead
	}
	fresh := 0
	for _, m := range req.Messages[newest:] {
		fresh += len(m)
	}
	return float64(host)*cacheReadWeight + float64(fresh)*cacheWriteWeight
}

// cachePrompt returns what a provider caches a prefix of: the JSON of the request's tools followed by the JSON of
// its messages (the system prompt is its first message), byte for byte as the model received them. A body that is
// not a JSON object is returned whole.
func cachePrompt(body []byte) []byte {
	var req struct {
		Messages json.RawMessage `json:"messages"`
		Tools    json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	out := make([]byte, 0, len(req.Tools)+len(req.Messages))
	return append(append(out, req.Tools...), req.Messages...)
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// costOf returns the cache-weighted input of the request body next, whose session's previous request was prev
// (nil for the session's first request).
func costOf(prev, next []byte) requestCost {
	p := cachePrompt(next)
	c := requestCost{Bytes: len(p)}
	if prev != nil {
		c.Cached = commonPrefix(cachePrompt(prev), p)
	}
	c.Weighted = float64(c.Cached)*cacheReadWeight + float64(c.Bytes-c.Cached)*cacheWriteWeight
	c.Floor = floorOf(next)
	return c
}

// turnCosts fills the turn's cache-weighted figures from its model requests: every request with tools (the
// agent's), each against the request before it in the session (the previous turn's last one for the turn's first),
// and the summary requests (the host's own summary calls, the daemon's summarizer), billed whole at the cache-write
// price: their prompts are one-off.
func turnCosts(rec, prev *engineTurn, summaries [][]byte) {
	var before []byte
	if prev != nil && len(prev.bodies) > 0 {
		before = prev.bodies[len(prev.bodies)-1]
	}
	for _, b := range rec.bodies {
		c := costOf(before, b)
		rec.Costs = append(rec.Costs, c)
		rec.PromptBytes += c.Bytes
		rec.CachedBytes += c.Cached
		rec.Weighted += c.Weighted
		rec.Floor += c.Floor
		before = b
	}
	for _, b := range summaries {
		n := len(cachePrompt(b))
		rec.SummaryPromptBytes += n
		rec.SummaryWeighted += float64(n) * cacheWriteWeight
	}
}

// moneyFigures are the cache-weighted sums of the engine run against the legacy run over the same script turns.
type moneyFigures struct {
	FromTurn int `json:"from_turn"`
	// Engine and Legacy sum the agent requests' weighted input; EngineAll and LegacyAll add the summary requests.
	Engine    float64 `json:"engine_weighted"`
	Legacy    float64 `json:"legacy_weighted"`
	EngineAll float64 `json:"engine_weighted_with_summaries"`
	LegacyAll float64 `json:"legacy_weighted_with_summaries"`
	// EngineBytes and LegacyBytes sum the agent requests' prompt bytes (unweighted); the Cached figures the bytes
	// served from the cache.
	EngineBytes  int `json:"engine_prompt_bytes"`
	LegacyBytes  int `json:"legacy_prompt_bytes"`
	EngineCached int `json:"engine_cached_bytes"`
	LegacyCached int `json:"legacy_cached_bytes"`
	// Reduction is 1 − Engine/Legacy; ReductionAll the same with the summary requests; ByteReduction the
	// unweighted 1 − EngineBytes/LegacyBytes.
	Reduction     float64 `json:"reduction"`
	ReductionAll  float64 `json:"reduction_with_summaries"`
	ByteReduction float64 `json:"byte_reduction"`
	// EngineFloor sums the engine requests' floors (see [floorOf]); ReductionBound is 1 − EngineFloor/Legacy, the
	// most any context engine could save on these requests.
	EngineFloor    float64 `json:"engine_floor"`
	ReductionBound float64 `json:"reduction_bound"`
}

// moneyReport sums the cache-weighted input of the script turns from turn from on (1-based) in the engine run and
// the legacy run, and logs the per-turn table and the sums.
func moneyReport(t *testing.T, version string, engineTurns, legacyTurns []engineTurn, from int) moneyFigures {
	t.Helper()
	m := moneyFigures{FromTurn: from}
	var b strings.Builder
	fmt.Fprintf(&b, "%s money: cache-weighted input per script turn (prompt: bytes of tools + messages of every agent request of the turn; cached: the bytes each shares as a prefix with the session's previous request, billed × %.2f; the rest × %.2f; sum: summary requests, billed whole × %.2f; * marks the turns summed, from turn %d, where layer 1 first acts)\n",
		version, cacheReadWeight, cacheWriteWeight, cacheWriteWeight, from)
	fmt.Fprintf(&b, "%5s | %4s %9s %9s %10s %8s | %4s %9s %9s %10s %8s | %7s\n", "turn",
		"reqs", "prompt", "cached", "weighted", "sum", "reqs", "prompt", "cached", "weighted", "sum", "eng/leg")
	for i := 0; i < len(engineTurns) && i < len(legacyTurns); i++ {
		e, l := &engineTurns[i], &legacyTurns[i]
		mark := " "
		if e.N >= from {
			mark = "*"
			m.Engine += e.Weighted
			m.Legacy += l.Weighted
			m.EngineAll += e.Weighted + e.SummaryWeighted
			m.LegacyAll += l.Weighted + l.SummaryWeighted
			m.EngineBytes += e.PromptBytes
			m.LegacyBytes += l.PromptBytes
			m.EngineCached += e.CachedBytes
			m.LegacyCached += l.CachedBytes
			m.EngineFloor += e.Floor
		}
		fmt.Fprintf(&b, "%4d%s | %4d %9d %9d %10.0f %8.0f | %4d %9d %9d %10.0f %8.0f | %6.1f%%\n", e.N, mark,
			l.Requests, l.PromptBytes, l.CachedBytes, l.Weighted, l.SummaryWeighted,
			e.Requests, e.PromptBytes, e.CachedBytes, e.Weighted, e.SummaryWeighted, 100*e.Weighted/max(l.Weighted, 1))
	}
	m.Reduction = 1 - m.Engine/max(m.Legacy, 1)
	m.ReductionAll = 1 - m.EngineAll/max(m.LegacyAll, 1)
	m.ByteReduction = 1 - float64(m.EngineBytes)/float64(max(m.LegacyBytes, 1))
	m.ReductionBound = 1 - m.EngineFloor/max(m.Legacy, 1)
	fmt.Fprintf(&b, "(columns: legacy | engine) from turn %d: legacy %.0f, engine %.0f weighted bytes: %.1f %% less (goal ≥ %.0f %%); with the summary requests legacy %.0f, engine %.0f: %.1f %% less; prompt bytes legacy %d (%d cached, %.1f %%), engine %d (%d cached, %.1f %%): %.1f %% fewer bytes; the least any context engine could cost on the engine's requests (the host's tools and system prompt read from the cache, the newest assistant message and what follows it written, no other history): %.0f, %.1f %% below legacy",
		from, m.Legacy, m.Engine, 100*m.Reduction, 100*moneyGoal, m.LegacyAll, m.EngineAll, 100*m.ReductionAll,
		m.LegacyBytes, m.LegacyCached, 100*float64(m.LegacyCached)/float64(max(m.LegacyBytes, 1)),
		m.EngineBytes, m.EngineCached, 100*float64(m.EngineCached)/float64(max(m.EngineBytes, 1)), 100*m.ByteReduction,
		m.EngineFloor, 100*m.ReductionBound)
	t.Log(b.String())
	return m
}

func TestCostOf(t *testing.T) {
	tools := `[{"function":{"name":"read"}}]`
	req := func(msgs string) []byte { return []byte(`{"model":"m","messages":` + msgs + `,"tools":` + tools + `}`) }
	a := req(`[{"role":"system","content":"s"},{"role":"user","content":"u1"}]`)
	b := req(`[{"role":"system","content":"s"},{"role":"user","content":"u1"},{"role":"assistant","content":"a"}]`)
	c := req(`[{"role":"system","content":"s"},{"role":"user","content":"u2"}]`)
	for _, tc := range []struct {
		name         string
		prev, next   []byte
		bytes, cache int
	}{
		{"first request: nothing cached", nil, a, len(tools) + len(`[{"role":"system","content":"s"},{"role":"user","content":"u1"}]`), 0},
		{"appended: the previous prompt but its closing bracket is cached", a, b, len(cachePrompt(b)), len(cachePrompt(a)) - 1},
		{"changed: cached up to the first differing byte", a, c, len(cachePrompt(c)), len(tools) + len(`[{"role":"system","content":"s"},{"role":"user","content":"u`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := costOf(tc.prev, tc.next)
			want := float64(tc.cache)*cacheReadWeight + float64(tc.bytes-tc.cache)*cacheWriteWeight
			if got.Bytes != tc.bytes || got.Cached != tc.cache || got.Weighted != want {
				t.Errorf("costOf = %+v, want bytes %d, cached %d, weighted %.2f", got, tc.bytes, tc.cache, want)
			}
		})
	}
}

func TestFloorOf(t *testing.T) {
	tools := `[{"function":{"name":"read"}}]`
	sys, u1, a1, r1, u2 := `{"role":"system","content":"s"}`, `{"role":"user","content":"u1"}`,
		`{"role":"assistant","content":"a"}`, `{"role":"tool","content":"r"}`, `{"role":"user","content":"u2"}`
	req := func(msgs ...string) []byte {
		return []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"tools":` + tools + `}`)
	}
	host := float64(len(tools)+len(sys)) * cacheReadWeight
	for _, tc := range []struct {
		name  string
		body  []byte
		fresh int
	}{
		{"no assistant message: every message but the system prompt is new", req(sys, u1), len(u1)},
		{"the newest assistant message and what follows it are new", req(sys, u1, a1, r1), len(a1) + len(r1)},
		{"older history is left out", req(sys, u1, a1, r1, a1, u2), len(a1) + len(u2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := floorOf(tc.body), host+float64(tc.fresh)*cacheWriteWeight; got != want {
				t.Errorf("floorOf = %.2f, want %.2f", got, want)
			}
		})
	}
	if got, want := floorOf([]byte("not json")), 8*cacheWriteWeight; got != want {
		t.Errorf("floorOf of a body that is not JSON = %.2f, want %.2f", got, want)
	}
}
