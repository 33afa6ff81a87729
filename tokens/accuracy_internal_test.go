package tokens

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
)

var (
	accuracyJSON  = flag.String("accuracy-json", "", "write TestAccuracy's table as JSON to this file")
	accuracyDebug = flag.String("accuracy-debug", "", "write TestAccuracy's cases (numbers only) to this file")
)

// The bases of the accuracy measurement.
const (
	baseChars = 0
	baseO200k = 1
)

// accuracyRow is one line of the accuracy table.
type accuracyRow struct {
	Case      string  `json:"case"`
	Tokenizer string  `json:"tokenizer"`
	N         int     `json:"n"`
	Median    float64 `json:"median_abs_rel_error"`
	P90       float64 `json:"p90_abs_rel_error"`
}

// accuracyCase is one predicted turn.
type accuracyCase struct {
	file, kind, key string
	actual          int
	preds           map[string]float64
}

// predictors name the rows of the table in order: calibrated on the
// o200k and on the chars/4 base, the raw o200k and chars/4 counts of the
// history (what the host sends beyond it is not counted), and pi's own
// estimate (the latest usage plus chars/4 of the later messages in case
// (a); with no usage since the change, chars/4 of the history).
var predictors = []string{"calibrated", "calibrated/chars4", "o200k", "chars/4", "pi"}

// predictLag is how many turns before the predicted one the model of
// case (p) is learned.
const predictLag = 10

// corpusTimeline is one corpus transcript measured with both bases.
type corpusTimeline struct {
	name string
	tl   *timeline
}

var (
	corpusOnce  sync.Once
	corpusLines []corpusTimeline
)

// corpusTimelines scans every transcript of the real corpus once per test
// binary; t is skipped without the shared directory.
func corpusTimelines(t *testing.T) []corpusTimeline {
	t.Helper()
	// The usage the host recorded is what is measured against: the real
	// corpus only (the self-made corpus's usage is made up).
	files := testcorpus.Real(t)
	corpusOnce.Do(func() {
		ctx := context.Background()
		o, err := O200k()
		if err != nil {
			t.Fatal(err)
		}
		bases := []Tokenizer{CharsPer4{}, o}
		for _, file := range files {
			tr, err := session.Open(ctx, file, bs.SessionRef{}, nil)
			if err != nil {
				t.Fatalf("%s: %v", testcorpus.Name(file), err)
			}
			tl, err := scan(ctx, tr, bases)
			if err != nil {
				t.Fatalf("%s: %v", testcorpus.Name(file), err)
			}
			corpusLines = append(corpusLines, corpusTimeline{testcorpus.Name(file), tl})
		}
	})
	if corpusLines == nil {
		t.Fatal("corpus not measured")
	}
	return corpusLines
}

// accuracyCases measures every transcript of the corpus: case (a), each
// turn predicted from the turn before it in the same context, and case
// (b), the first turn after each compaction predicted from what was
// recorded before it. Turns whose recorded context is a provider's
// truncation ceiling, and turns of another model than the one learned
// from, are counted in skipped and not measured: their recorded usage
// says nothing about the context we predict.
func accuracyCases(t *testing.T, p params) (out []accuracyCase, skipped map[string]int) {
	t.Helper()
	skipped = map[string]int{}
	seen := map[string]bool{}
	raw := func(f feats) float64 { return float64(f.tok[classText]+f.tok[classThinking]) + float64(f.images) }
	for _, ct := range corpusTimelines(t) {
		tl := ct.tl
		for k := 1; k < len(tl.anchors); k++ {
			a, c := &tl.anchors[k-1], &tl.anchors[k]
			if a.epoch != c.epoch {
				continue
			}
			key := fmt.Sprintf("a/%s/%d", c.id, c.ctx)
			if seen[key] {
				continue
			}
			seen[key] = true
			if a.saturated || c.saturated {
				skipped["a: provider-truncated"]++
				continue
			}
			if a.model != c.model {
				skipped["a: model changed"]++
				continue
			}
			pr := map[string]float64{}
			for name, b := range map[string]int{"calibrated": baseO200k, "calibrated/chars4": baseChars} {
				f := learn(tl.anchors[:k], b, p)
				d := c.f[b].sub(a.f[b])
				pr[name] = float64(a.ctx) + f.ratio*f.p.x(d) + f.p.fixed(d)
			}
			pr["o200k"] = raw(c.f[baseO200k])
			pr["chars/4"] = raw(c.f[baseChars])
			after := c.f[baseChars].sub(a.f[baseChars]).sub(a.self[baseChars])
			pr["pi"] = float64(a.ctx+a.out) + raw(after)
			out = append(out, accuracyCase{ct.name, "a", key, c.ctx, pr})
		}
		// Case (p): the whole context of a turn predicted by Predict's
		// formula (overhead plus calibrated history, no usage anchor) from
		// a model learned at least predictLag turns earlier in the same
		// context.
		for k := predictLag; k < len(tl.anchors); k++ {
			a, c := &tl.anchors[k-predictLag], &tl.anchors[k]
			if a.epoch != c.epoch || c.saturated || a.model != c.model {
				continue
			}
			key := fmt.Sprintf("p/%s/%d", c.id, c.ctx)
			if seen[key] {
				continue
			}
			seen[key] = true
			pr := map[string]float64{}
			for name, b := range map[string]int{"calibrated": baseO200k, "calibrated/chars4": baseChars} {
				f := learn(tl.anchors[:k-predictLag+1], b, p)
				pr[name] = f.predict(c.f[b])
			}
			pr["o200k"] = raw(c.f[baseO200k])
			pr["chars/4"] = raw(c.f[baseChars])
			pr["pi"] = raw(c.f[baseChars])
			out = append(out, accuracyCase{ct.name, "p", key, c.ctx, pr})
		}
		for i, cp := range tl.comps {
			if cp.after < 0 || cp.before == 0 {
				continue
			}
			c := &tl.anchors[cp.after]
			id := cp.id
			if id == "" {
				id = fmt.Sprintf("%s#%d", ct.name, i)
			}
			key := fmt.Sprintf("b/%s/%s/%d", id, c.id, c.ctx)
			if seen[key] {
				continue
			}
			seen[key] = true
			learned := usable(tl.anchors[:cp.before])
			switch {
			case c.saturated:
				skipped["b: provider-truncated"]++
				continue
			case len(learned) == 0:
				skipped["b: no usable usage before"]++
				continue
			case learned[len(learned)-1].model != c.model:
				skipped["b: model changed"]++
				continue
			}
			pr := map[string]float64{}
			for name, b := range map[string]int{"calibrated": baseO200k, "calibrated/chars4": baseChars} {
				f := learn(tl.anchors[:cp.before], b, p)
				pr[name] = f.predict(c.f[b])
			}
			pr["o200k"] = raw(c.f[baseO200k])
			pr["chars/4"] = raw(c.f[baseChars])
			pr["pi"] = raw(c.f[baseChars])
			out = append(out, accuracyCase{ct.name, "b", key, c.ctx, pr})
		}
	}
	return out, skipped
}

// quantile returns the q-quantile of sorted xs (nearest rank).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

func accuracyTable(cases []accuracyCase) []accuracyRow {
	var rows []accuracyRow
	for _, kind := range []string{"a", "b", "p"} {
		for _, name := range predictors {
			var errs []float64
			for _, c := range cases {
				if c.kind == kind {
					errs = append(errs, math.Abs(c.preds[name]-float64(c.actual))/float64(c.actual))
				}
			}
			slices.Sort(errs)
			rows = append(rows, accuracyRow{Case: kind, Tokenizer: name, N: len(errs), Median: quantile(errs, 0.5), P90: quantile(errs, 0.9)})
		}
	}
	return rows
}

// TestAccuracy measures the context estimates against the usage the
// corpus recorded, using only what was recorded before each predicted
// turn: (a) the next turn of an unchanged history (Current: the previous
// turn's usage plus what was added), (b) the first turn after each
// compaction (Predict: overhead and ratio learned before the compaction,
// applied to the summary, the kept entries and what was added until that
// turn), (p) any turn's whole context by Predict's formula, from a model
// learned ten turns earlier. The error is |estimate − recorded| / recorded;
// the table gives its median and 90th percentile. Run with -v to see the
// table, -args -accuracy-json=FILE to get it as JSON (-accuracy-debug=FILE
// lists every case, numbers only).
func TestAccuracy(t *testing.T) {
	cases, skipped := accuracyCases(t, defaultParams)
	rows := accuracyTable(cases)
	var b strings.Builder
	fmt.Fprintf(&b, "\ncase  %-18s %5s %8s %8s\n", "tokenizer", "n", "median", "p90")
	for _, r := range rows {
		fmt.Fprintf(&b, "(%s)   %-18s %5d %7.2f%% %7.2f%%\n", r.Case, r.Tokenizer, r.N, 100*r.Median, 100*r.P90)
	}
	for _, k := range slices.Sorted(maps.Keys(skipped)) {
		fmt.Fprintf(&b, "not measured: %s %d\n", k, skipped[k])
	}
	t.Log(b.String())
	if *accuracyJSON != "" {
		notMeasured := map[string]int{}
		for k, n := range skipped {
			notMeasured[strings.NewReplacer(": ", "_", "-", "_", " ", "_").Replace(k)] = n
		}
		j, err := json.MarshalIndent(struct {
			Rows        []accuracyRow  `json:"rows"`
			NotMeasured map[string]int `json:"not_measured"`
		}{rows, notMeasured}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*accuracyJSON, append(j, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Loose bounds that hold on the corpus with a margin (the measured
	// values are in the log): (a) and (p) have thousands of cases, (b)
	// only the corpus's few compactions.
	for _, r := range rows {
		if r.Tokenizer != "calibrated" {
			continue
		}
		lim := map[string][2]float64{"a": {0.01, 0.03}, "b": {0.05, 0.30}, "p": {0.02, 0.08}}[r.Case]
		if r.N < map[string]int{"a": 1000, "b": 5, "p": 1000}[r.Case] {
			t.Errorf("case (%s): %d cases measured, fewer than the corpus holds", r.Case, r.N)
		}
		if r.Median > lim[0] || r.P90 > lim[1] {
			t.Errorf("case (%s) calibrated: median %.2f%%, p90 %.2f%%; want at most %.0f%% and %.0f%%", r.Case, 100*r.Median, 100*r.P90, 100*lim[0], 100*lim[1])
		}
	}
	if *accuracyDebug != "" {
		var d strings.Builder
		for _, c := range cases {
			fmt.Fprintf(&d, "%s\t%s\t%s\t%d", c.kind, c.file, c.key, c.actual)
			for _, name := range predictors {
				fmt.Fprintf(&d, "\t%.0f", c.preds[name])
			}
			d.WriteByte('\n')
		}
		if err := os.WriteFile(*accuracyDebug, []byte(d.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
