// Package synth generates synthetic OpenClaw-shaped transcripts for tests
// and benchmarks. Output is deterministic for a given Options value.
package synth

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Options shape a generated transcript. Zero fields get the defaults noted.
type Options struct {
	// Size is the target size in bytes (default 1 MB). Generation stops
	// after the first turn that reaches it.
	Size int64
	// Seed makes the output reproducible (default 1).
	Seed uint64
	// MinResult and MaxResult bound tool result text sizes in bytes
	// (defaults 5,000 and 50,000).
	MinResult, MaxResult int
	// MinThinking and MaxThinking bound thinking text sizes in bytes
	// (defaults 500 and 4,000).
	MinThinking, MaxThinking int
	// ImageEvery puts an image into every n-th tool result (0 = never).
	ImageEvery int
	// Flat writes the flat entry shape
	// ({"__id":…,"type":"tool_result","output":…}) instead of pi messages.
	Flat bool
	// Start is the time of the first entry (default 2026-03-01T00:00:00Z);
	// entries are one minute apart.
	Start time.Time
	// GrowingUsage makes each assistant message record the usage of a
	// context that grows with the transcript (a 3,000-token system prompt
	// and tools, plus a token per 4 bytes written so far, mostly cache
	// reads) instead of the same usage every turn, so that a chart of the
	// usage shows the session growing.
	GrowingUsage bool
	// Density selects how tool results and thinking are sized:
	// DensityToday (the zero value) draws them uniformly from the bounds
	// above; DensityReal follows the corpus and ignores those bounds.
	Density Density
}

// Density selects the value-size distribution of a generated transcript.
type Density int

const (
	// DensityToday draws tool results and thinking uniformly between
	// Options' bounds; one of each per turn. With the 5–50 KB bounds of
	// the extract benchmarks, a pass extracts about 6,700 entries per
	// 100 MB.
	DensityToday Density = iota
	// DensityReal draws tool results and thinking of 500–5,000 bytes in
	// the proportions measured on the OpenClaw corpus
	// (shared/corpus/openclaw, 18 transcripts, 16.9 MB): tool results
	// 38% 500–1,000 bytes, 38% 1–2 KB, 14% 2–3 KB, 10% 3–5 KB; thinking
	// 53%, 34%, 10%, 3%. Not every turn thinks (the corpus has one
	// thinking value of 500 bytes or more per eleven tool results: 10% of
	// turns here) and some tool results are short (10% under 500 bytes),
	// so a pass with the default policy extracts about 20,000 entries per
	// 100 MB, the anuo transcript's density (582 from 2.8 MB).
	DensityReal
)

// sizeBucket is a range of value sizes and its weight in a distribution.
type sizeBucket struct{ lo, hi, weight int }

var (
	realResults  = []sizeBucket{{500, 999, 38}, {1000, 1999, 38}, {2000, 2999, 14}, {3000, 5000, 10}}
	realThinking = []sizeBucket{{500, 999, 53}, {1000, 1999, 34}, {2000, 2999, 10}, {3000, 5000, 3}}
)

// realThinkingPercent is the share of DensityReal turns with a thinking
// block of 500 bytes or more (the others think in fewer), and
// realShortResultPercent the share of tool results under 500 bytes.
const (
	realThinkingPercent    = 10
	realShortResultPercent = 10
)

// draw picks a size from a distribution.
func (g *gen) draw(d []sizeBucket) int {
	total := 0
	for _, b := range d {
		total += b.weight
	}
	r := g.rng.IntN(total)
	for _, b := range d {
		if r < b.weight {
			return g.between(b.lo, b.hi)
		}
		r -= b.weight
	}
	return d[len(d)-1].hi
}

// resultSize and thinkingSize return the next value sizes.
func (g *gen) resultSize() int {
	if g.o.Density == DensityReal {
		if g.rng.IntN(100) < realShortResultPercent {
			return g.between(40, 400)
		}
		return g.draw(realResults)
	}
	return g.between(g.o.MinResult, g.o.MaxResult)
}

func (g *gen) thinkingSize() int {
	if g.o.Density == DensityReal {
		if g.rng.IntN(100) >= realThinkingPercent {
			return g.between(40, 400)
		}
		return g.draw(realThinking)
	}
	return g.between(g.o.MinThinking, g.o.MaxThinking)
}

// Stats reports what was generated.
type Stats struct {
	Bytes, Lines, Turns int64
}

// Generate writes a transcript to w.
func Generate(w io.Writer, o Options) (Stats, error) {
	if o.Size <= 0 {
		o.Size = 1 << 20
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MinResult <= 0 {
		o.MinResult = 5000
	}
	if o.MaxResult < o.MinResult {
		o.MaxResult = 50000
	}
	if o.MinThinking <= 0 {
		o.MinThinking = 500
	}
	if o.MaxThinking < o.MinThinking {
		o.MaxThinking = 4000
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	}
	g := &gen{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15)), bw: bufio.NewWriterSize(w, 1<<20), t: o.Start}
	g.line(fmt.Sprintf(`{"type":"session","version":3,"id":"%s","timestamp":%q,"cwd":"/home/u/.openclaw/workspace"}`, "00000000-0000-4000-8000-"+fmt.Sprintf("%012x", o.Seed), g.ts()))
	if !o.Flat {
		g.entry("model_change", `"provider":"anthropic","modelId":"claude-sonnet-4-6"`)
		g.entry("thinking_level_change", `"thinkingLevel":"low"`)
	}
	for g.st.Bytes < o.Size && g.err == nil {
		g.turn()
	}
	if g.err == nil {
		g.err = g.bw.Flush()
	}
	return g.st, g.err
}

type gen struct {
	o      Options
	rng    *rand.Rand
	bw     *bufio.Writer
	st     Stats
	err    error
	n      int
	parent string
	t      time.Time
	sb     strings.Builder
}

func (g *gen) ts() string {
	s := g.t.Format(bs.TimestampLayout)
	g.t = g.t.Add(time.Minute)
	return s
}

func (g *gen) id() string {
	g.n++
	return fmt.Sprintf("%08x", uint32(g.n)*2654435761)
}

func (g *gen) line(s string) {
	if g.err != nil {
		return
	}
	n, err := g.bw.WriteString(s)
	if err == nil {
		err = g.bw.WriteByte('\n')
	}
	g.st.Bytes += int64(n) + 1
	g.st.Lines++
	g.err = err
}

// entry writes a pi entry with envelope members and the given body.
func (g *gen) entry(typ, body string) string {
	id := g.id()
	parent := "null"
	if g.parent != "" {
		parent = strconv.Quote(g.parent)
	}
	g.line(fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":%q,%s}`, typ, id, parent, g.ts(), body))
	g.parent = id
	return id
}

// lineTemplates look like real tool output: directory listings, source
// code, logs, JSON, diffs, prose, with the escapes and non-ASCII text that
// real outputs carry. %d is replaced by a random number.
var lineTemplates = []string{
	"-rw-r--r--  1 user staff %d Mar  1 09:00 internal/session/reader.go",
	"drwxr-xr-x  5 user staff %d Mar  1 09:00 cmd/brainsurgeon",
	"func (r *Reader) Next() bool { // line %d",
	"\tif err != nil {\n\t\treturn fmt.Errorf(\"read %s: %w\", path, err)\n\t}",
	"2026-03-01T09:00:%d.123Z INFO  gateway: session agent:main:main run started (runId=%d)",
	"{\"id\": %d, \"name\": \"item-%d\", \"tags\": [\"a\", \"b\"], \"ok\": true}",
	"@@ -%d,7 +%d,8 @@ func main() {",
	"+\tlog.Printf(\"processed %d entries in %dms\", n, ms)",
	"The quick brown fox jumps over the lazy dog %d times; café ✓ 🚀 日本語 <b>&amp;</b>",
	"    at Object.<anonymous> (/home/u/project/src/index.ts:%d:17)",
	"| %d | thinking | tool_result | 500 | keep_recent |",
	"Let me check the configuration first, then run the tests (attempt %d).",
}

// text returns a JSON string literal (with quotes) of about n bytes of raw
// text with escapes.
func (g *gen) text(n int) string {
	g.sb.Reset()
	for g.sb.Len() < n {
		t := lineTemplates[g.rng.IntN(len(lineTemplates))]
		num := strconv.Itoa(g.rng.IntN(100000))
		g.sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "%d", num), "%s", "x"))
		g.sb.WriteByte('\n')
	}
	return strconv.Quote(g.sb.String())
}

func (g *gen) between(lo, hi int) int { return lo + g.rng.IntN(hi-lo+1) }

func (g *gen) turn() {
	g.st.Turns++
	ms := g.t.UnixMilli()
	if g.o.Flat {
		g.flatTurn()
		return
	}
	g.entry("message", fmt.Sprintf(`"message":{"role":"user","content":[{"type":"text","text":%s}],"timestamp":%d}`, g.text(g.between(20, 400)), ms))
	callID := fmt.Sprintf("toolu_%012d", g.n)
	g.entry("message", fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"thinking","thinking":%s,"thinkingSignature":"%s"},{"type":"toolCall","id":%q,"name":"exec","arguments":{"command":%s}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-6",%s,"stopReason":"toolUse","timestamp":%d}`,
		g.text(g.thinkingSize()), base64.StdEncoding.EncodeToString([]byte(strings.Repeat("sig", 40))), callID, g.text(g.between(10, 200)), g.usage(40, usageToolUse), ms))
	img := ""
	if g.o.ImageEvery > 0 && g.st.Turns%int64(g.o.ImageEvery) == 0 {
		img = fmt.Sprintf(`,{"type":"image","data":"%s","mimeType":"image/png"}`, base64.StdEncoding.EncodeToString(make([]byte, g.between(3000, 30000))))
	}
	g.entry("message", fmt.Sprintf(`"message":{"role":"toolResult","toolCallId":%q,"toolName":"exec","content":[{"type":"text","text":%s}%s],"details":{"exitCode":0},"isError":false,"timestamp":%d}`,
		callID, g.text(g.resultSize()), img, ms))
	g.entry("message", fmt.Sprintf(`"message":{"role":"assistant","content":[{"type":"text","text":%s}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-6",%s,"stopReason":"stop","timestamp":%d}`,
		g.text(g.between(50, 1500)), g.usage(80, usageStop), ms))
}

// The usage the assistant messages record without Options.GrowingUsage.
const (
	usageToolUse = `"usage":{"input":1200,"output":40,"cacheRead":0,"cacheWrite":1100,"totalTokens":2340,"cost":{"input":0.0036,"output":0.0006,"cacheRead":0,"cacheWrite":0.004125,"total":0.008325}}`
	usageStop    = `"usage":{"input":1300,"output":80,"cacheRead":1100,"cacheWrite":0,"totalTokens":2480,"cost":{"input":0.0039,"output":0.0012,"cacheRead":0.00033,"cacheWrite":0,"total":0.00543}}`
)

// usage returns the "usage" member of the next assistant message: fixed
// unless Options.GrowingUsage, then the context written so far (a
// 3,000-token overhead and a token per 4 bytes) with output tokens, the
// newest 1,200 tokens as input, the rest read from the cache.
func (g *gen) usage(output int64, fixed string) string {
	if !g.o.GrowingUsage {
		return fixed
	}
	ctx := 3000 + g.st.Bytes/4
	in := min(ctx, 1200)
	return fmt.Sprintf(`"usage":{"input":%d,"output":%d,"cacheRead":%d,"cacheWrite":0,"totalTokens":%d,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`,
		in, output, ctx-in, ctx+output)
}

func (g *gen) flatTurn() {
	for _, typ := range []string{"thinking", "tool_result"} {
		id := fmt.Sprintf("ent_%06d", g.n)
		g.n++
		field, size := "thinking", g.thinkingSize()
		if typ == "tool_result" {
			field, size = "output", g.resultSize()
		}
		g.line(fmt.Sprintf(`{"__id":%q,"type":%q,"timestamp":%q,%q:%s}`, id, typ, g.ts(), field, g.text(size)))
	}
}
