package extract_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/atonce"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/oracle"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/sidetest"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// allTypes is a policy that extracts every trigger type from every old
// enough value, with no age or saving thresholds.
func allTypes(minLen, keepRecent int) extract.Policy {
	return extract.Policy{Enabled: true, KeepRecent: keepRecent, MinValueLength: minLen, Triggers: bs.TriggerTypes()}
}

func setup(t testing.TB, src string) (bs.SessionRef, *session.Store) {
	t.Helper()
	root, path := testcorpus.Copy(t, src, "s1")
	st := session.NewStore(root)
	st.Writer.Quiet = 0 // no quiet period
	ref, err := st.Resolve(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return ref, st
}

func run(t testing.TB, ref bs.SessionRef, st *session.Store, p extract.Policy) *extract.Result {
	t.Helper()
	x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st), Clock: fixedClock{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}}
	res, err := x.Run(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// unextract rebuilds the original transcript from an extracted one and its
// side records, independently of the restore package: every value whose
// current bytes at its path equal the recorded placeholder is spliced back.
func unextract(t testing.TB, path, sideDir string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	r := session.NewReader(f)
	for r.Next() {
		e := r.Entry()
		line := append([]byte(nil), r.Raw()...)
		if e.Kind == bs.KindEntry && e.ID != "" {
			rec, _, err := sidetest.ReadRecord(sideDir, e.ID)
			if err == nil {
				spans := map[string][2]int{}
				for _, v := range e.Strings {
					spans[v.Pointer] = [2]int{v.Start, v.End}
				}
				for _, b := range e.Blocks {
					prefix := "/message/content/"
					if e.Type == "custom_message" {
						prefix = "/content/"
					}
					spans[prefix+strconv.Itoa(b.Index)] = [2]int{b.Start, b.End}
				}
				// Splice from the end so earlier offsets stay valid.
				type sp struct {
					s, e int
					b    []byte
				}
				var list []sp
				for _, v := range rec.Values {
					span, ok := spans[v.Path]
					if !ok || string(line[span[0]:span[1]]) != v.Placeholder {
						continue
					}
					b, err := v.Bytes()
					if err != nil {
						t.Fatalf("%s entry %s %s: %v", path, e.ID, v.Path, err)
					}
					list = append(list, sp{span[0], span[1], b})
				}
				for i := 1; i < len(list); i++ {
					for j := i; j > 0 && list[j].s > list[j-1].s; j-- {
						list[j], list[j-1] = list[j-1], list[j]
					}
				}
				for _, s := range list {
					line = append(line[:s.s:s.s], append(append([]byte(nil), s.b...), line[s.e:]...)...)
				}
			}
		}
		out.Write(line)
		if r.Terminated() {
			out.WriteByte('\n')
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out.Bytes()
}

// TestExtractCorpusLossless extracts with every trigger type at several
// minimum lengths on every corpus transcript and checks that the side store
// gives every byte back.
func TestExtractCorpusLossless(t *testing.T) {
	// under the race detector a sample: the extraction runs the same goroutines on every file, and the run
	// without -race checks every file
	// Each case has its own dir: four at a time, the fsyncs of one overlap
	// the work of another.
	var cases []atonce.Case
	for _, f := range testcorpus.RaceSample(t, testcorpus.Transcripts(t)) {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, minLen := range []int{1, 500, 5000} {
			cases = append(cases, atonce.Case{Name: fmt.Sprintf("%s/min%d", testcorpus.Name(f), minLen), Run: func(t *testing.T) {
				ref, st := setup(t, f)
				res := run(t, ref, st, allTypes(minLen, 0))
				after, _ := os.ReadFile(ref.Path)
				hasIDs := bytes.Contains(orig, []byte(`"parentId"`))
				if hasIDs && minLen <= 500 && !res.Written {
					t.Fatalf("nothing extracted: %+v", res)
				}
				if res.Written && int64(len(after)) != res.BytesAfter {
					t.Fatalf("bytes after = %d, reported %d", len(after), res.BytesAfter)
				}
				back := unextract(t, ref.Path, sidetest.Dir(ref.Path, ref.ID))
				if sha256.Sum256(back) != sha256.Sum256(orig) {
					t.Fatalf("un-extracting does not give the original back (%d vs %d bytes)", len(back), len(orig))
				}
			}})
		}
	}
	atonce.Run(t, 4, cases)
}

// TestExtractGeneratedLossless is the same property on generated
// transcripts (both formats) with random policies.
func TestExtractGeneratedLossless(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		o := synth.Options{
			Size:        int64(rapid.IntRange(2_000, 120_000).Draw(rt, "size")),
			Seed:        rapid.Uint64Range(1, 1<<40).Draw(rt, "seed"),
			MinResult:   rapid.IntRange(1, 3000).Draw(rt, "minResult"),
			MinThinking: rapid.IntRange(1, 2000).Draw(rt, "minThinking"),
			ImageEvery:  rapid.IntRange(0, 3).Draw(rt, "imageEvery"),
			Flat:        rapid.Bool().Draw(rt, "flat"),
		}
		o.MaxResult = o.MinResult + 3000
		o.MaxThinking = o.MinThinking + 2000
		dir := filepath.Join(t.TempDir(), "agents", "main", "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			rt.Fatal(err)
		}
		path := filepath.Join(dir, "g1.jsonl")
		var buf bytes.Buffer
		if _, err := synth.Generate(&buf, o); err != nil {
			rt.Fatal(err)
		}
		orig := buf.Bytes()
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			rt.Fatal(err)
		}
		st := session.NewStore(filepath.Dir(filepath.Dir(dir)))
		st.Writer.Quiet = 0 // no quiet period
		ref, err := st.Resolve(context.Background(), path)
		if err != nil {
			rt.Fatal(err)
		}
		p := allTypes(rapid.IntRange(1, 5000).Draw(rt, "minLen"), rapid.IntRange(0, 5).Draw(rt, "keepRecent"))
		p.PreviewChars = rapid.IntRange(0, 40).Draw(rt, "preview")
		var trig []bs.TriggerType
		for _, tt := range bs.TriggerTypes() {
			if rapid.Bool().Draw(rt, "trigger-"+string(tt)) {
				trig = append(trig, tt)
			}
		}
		p.Triggers = trig
		// Records sent before the keep window is known (a small hold-back)
		// may be orphans; the transcript must come back whole either way.
		hold := rapid.SampledFrom([]int64{0, 1 << 10, 16 << 10, 4 << 20}).Draw(rt, "holdBack")
		defer extract.SetHoldBack(extract.SetHoldBack(hold))
		batch := rapid.SampledFrom([]int64{0, 4 << 10, 128 << 10}).Draw(rt, "batch")
		defer extract.SetBatchTarget(extract.SetBatchTarget(batch))
		x := &extract.Extractor{Policy: p, Store: st, Side: sidedir.New(st)}
		if _, err := x.Run(context.Background(), ref); err != nil {
			rt.Fatal(err)
		}
		back := unextract(t, path, sidetest.Dir(path, ref.ID))
		if !bytes.Equal(back, orig) {
			rt.Fatalf("un-extracting does not give the original back")
		}
		// The restore package gives everything back too: RestoreAll with
		// pristine returns the file byte for byte.
		if _, err := sidetest.Restorer(st, st.Root).RestoreAll(context.Background(), ref, true); err != nil {
			rt.Fatal(err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
			rt.Fatalf("restore --all --pristine does not give the original back")
		}
	})
}

// TestExtractOracle loads every extracted v2/v3 corpus transcript with the
// real pi SessionManager: same entries, leaf and context-message count, and
// the differing context messages are exactly those of extracted entries.
func TestExtractOracle(t *testing.T) {
	oracle.Require(t)
	ctx := context.Background()
	for _, f := range v23(t) {
		t.Run(testcorpus.Name(f), func(t *testing.T) {
			ref, st := setup(t, f)
			tr, err := session.Open(ctx, ref.Path, ref, nil)
			if err != nil {
				t.Fatal(err)
			}
			res := run(t, ref, st, allTypes(500, 3))
			inContext := map[int]bool{}
			for _, i := range tr.Context().Messages {
				inContext[tr.Nodes()[i].Line] = true
			}
			want := 0
			for _, d := range res.Details {
				if inContext[d.Line] {
					want++
				}
			}
			cmp, err := oracle.Compare(ctx, f, ref.Path)
			if err != nil {
				t.Fatal(err)
			}
			if cmp.EntryCount[0] != cmp.EntryCount[1] || !cmp.SameLeaf || cmp.ContextMessageCount[0] != cmp.ContextMessageCount[1] ||
				len(cmp.MissingIDsInAfter) > 0 || len(cmp.NewIDsInAfter) > 0 {
				t.Fatalf("pi sees a different session: %+v", cmp)
			}
			if cmp.DifferingMessages != want {
				t.Fatalf("%d context messages differ, want %d (the extracted entries in context)", cmp.DifferingMessages, want)
			}
			for _, d := range cmp.Diffs {
				if d.Before == nil || d.After == nil || d.Before.Role != d.After.Role || d.After.Bytes >= d.Before.Bytes {
					t.Fatalf("unexpected diff: %+v", d)
				}
			}
		})
	}
}

// TestExtractCacheAware: a second pass right after the first writes
// nothing, placeholders never change bytes, and a pass saving less than
// min_saving_tokens writes nothing.
func TestExtractCacheAware(t *testing.T) {
	f := testcorpus.RealOrSelfMade(t, "d27ecd5a-45f9-41a3-bad1-ddef6a3c79fc.jsonl", "v3-openclaw.jsonl")
	ref, st := setup(t, f)
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	first := run(t, ref, st, p)
	if !first.Written {
		t.Fatalf("first pass wrote nothing: %+v", first)
	}
	fi1, _ := os.Stat(ref.Path)
	b1, _ := os.ReadFile(ref.Path)
	p2 := p
	p2.PreviewChars = 30 // a different placeholder style must not touch old ones
	p2.MinSavingTokens = 0
	second := run(t, ref, st, p2)
	fi2, _ := os.Stat(ref.Path)
	b2, _ := os.ReadFile(ref.Path)
	if second.Written || second.Entries != 0 || !os.SameFile(fi1, fi2) || !bytes.Equal(b1, b2) {
		t.Fatalf("second pass changed the file: %+v", second)
	}
	ref2, st2 := setup(t, f)
	p3 := p
	p3.MinSavingTokens = 1 << 30
	res := run(t, ref2, st2, p3)
	orig, _ := os.ReadFile(f)
	now, _ := os.ReadFile(ref2.Path)
	if res.Written || !bytes.Equal(orig, now) || res.Skipped == "" {
		t.Fatalf("a pass below min_saving_tokens wrote: %+v", res)
	}
	if entries, _ := os.ReadDir(sidetest.Dir(ref2.Path, ref2.ID)); len(entries) != 0 {
		t.Fatalf("a skipped pass wrote %d side files", len(entries))
	}
}

// v23 returns the v2/v3 corpus transcripts. v1 files have no entry ids, so
// nothing in them is ever extracted, and pi migrates them with fresh random
// ids, which leaves nothing to compare.
func v23(t testing.TB) []string {
	var out []string
	// under the race detector a sample (see testcorpus.RaceSample); the run without -race takes every file
	for _, f := range testcorpus.RaceSample(t, testcorpus.Transcripts(t)) {
		tr, err := session.Open(context.Background(), f, bs.SessionRef{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Header().Version >= 2 {
			out = append(out, f)
		}
	}
	if want := map[bool]int{true: 14, false: 6}[testcorpus.HasReal(out)]; len(out) < want {
		t.Fatalf("%d v2/v3 transcripts, want at least %d", len(out), want)
	}
	return out
}

// TestExtractPayoff measures what extraction saves on the corpus, with the
// defaults and with every trigger type: transcript bytes, side-store bytes
// and the model context (pi's context bytes / 4). The tool-heavy anuo file
// must lose at least 75% of its context with all types, and on every file
// the context shrinks by exactly the extracted values' bytes minus their
// placeholders.
func TestExtractPayoff(t *testing.T) {
	oracle.Require(t)
	ctx := context.Background()
	def := extract.DefaultPolicy()
	def.MinSavingTokens = 0
	all := allTypes(500, 3)
	var tot [2]struct{ before, after, side, ctxBefore, ctxAfter int64 }
	for _, f := range v23(t) {
		for k, p := range []extract.Policy{def, all} {
			name := []string{"defaults", "alltypes"}[k]
			t.Run(testcorpus.Name(f)+"/"+name, func(t *testing.T) {
				ref, st := setup(t, f)
				tr, err := session.Open(ctx, ref.Path, ref, nil)
				if err != nil {
					t.Fatal(err)
				}
				inContext := map[int]bool{}
				for _, i := range tr.Context().Messages {
					inContext[tr.Nodes()[i].Line] = true
				}
				res := run(t, ref, st, p)
				var want int64
				for _, d := range res.Details {
					if inContext[d.Line] {
						want += d.BytesSaved
					}
				}
				cmp, err := oracle.Compare(ctx, f, ref.Path)
				if err != nil {
					t.Fatal(err)
				}
				got := int64(cmp.ContextBytes[0] - cmp.ContextBytes[1])
				if got != want {
					t.Errorf("context shrank by %d bytes, the extracted values minus placeholders make %d", got, want)
				}
				shrink := float64(got) / float64(cmp.ContextBytes[0])
				t.Logf("%s: transcript %d → %d bytes, side store %d bytes, context %d → %d tokens (chars/4), -%.1f%%",
					name, res.BytesBefore, res.BytesAfter, res.SideBytes, cmp.ContextBytes[0]/4, cmp.ContextBytes[1]/4, 100*shrink)
				tot[k].before += res.BytesBefore
				tot[k].after += res.BytesAfter
				tot[k].side += res.SideBytes
				tot[k].ctxBefore += int64(cmp.ContextBytes[0])
				tot[k].ctxAfter += int64(cmp.ContextBytes[1])
				if k == 1 && filepath.Base(f) == "0139686e-bbb1-4d89-8ef1-936bb36dd277.jsonl" && shrink < 0.75 {
					t.Errorf("anuo context shrank by %.1f%% with all types, want at least 75%%", 100*shrink)
				}
			})
		}
	}
	for k, name := range []string{"defaults", "alltypes"} {
		x := tot[k]
		t.Logf("TOTAL %s: transcripts %d → %d bytes, side store %d bytes, context %d → %d tokens (-%.1f%%)",
			name, x.before, x.after, x.side, x.ctxBefore/4, x.ctxAfter/4, 100*float64(x.ctxBefore-x.ctxAfter)/float64(x.ctxBefore))
	}
}

// TestRunSkipped checks that a pass that writes nothing says why, with
// the matching SkipCode, and reports zero entries, values and bytes
// written (Planned keeps what qualified).
func TestRunSkipped(t *testing.T) {
	// A v1 pi transcript (no header version, no entry ids) and a v3 one.
	v1 := testcorpus.RealOrSelfMade(t, "badlogic__pi-mono/session.jsonl", "v1-pi.jsonl")
	v3 := testcorpus.RealOrSelfMade(t, "1f979e30-12ad-4b66-80ac-bcbb53b985ff.jsonl", "v3-openclaw.jsonl")
	below := allTypes(200, 0)
	below.MinSavingTokens = 1 << 30
	disabled := allTypes(200, 0)
	disabled.Enabled = false
	for _, tt := range []struct {
		name    string
		src     string
		policy  extract.Policy
		dryRun  bool
		code    extract.Skip
		say     string
		planned bool
		idless  bool
	}{
		{name: "Disabled", src: v3, policy: disabled, code: extract.SkipDisabled, say: "pruning is disabled"},
		{name: "V1NoIDs", src: v1, policy: allTypes(200, 0), code: extract.SkipNoIDs, say: "have no ids (a v1 transcript): nothing can be extracted", idless: true},
		{name: "BelowMinSaving", src: v3, policy: below, code: extract.SkipBelowMinSaving, say: "below min_saving_tokens", planned: true},
		{name: "BelowMinSavingDryRun", src: v3, policy: below, dryRun: true, code: extract.SkipBelowMinSaving, say: "below min_saving_tokens", planned: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ref, st := setup(t, tt.src)
			orig, _ := os.ReadFile(ref.Path)
			x := &extract.Extractor{Policy: tt.policy, Store: st, Side: sidedir.New(st), DryRun: tt.dryRun}
			res, err := x.Run(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			if res.SkipCode != tt.code || !strings.Contains(res.Skipped, tt.say) {
				t.Fatalf("skip %q %q, want %q containing %q", res.SkipCode, res.Skipped, tt.code, tt.say)
			}
			if res.Written || res.Entries != 0 || res.Values != 0 || res.BytesSaved != 0 {
				t.Fatalf("a skipped pass reports %d entries, %d values, %d bytes written", res.Entries, res.Values, res.BytesSaved)
			}
			if got := res.Planned.Entries > 0; got != tt.planned {
				t.Fatalf("planned %+v, want some: %v", res.Planned, tt.planned)
			}
			if got := res.IDLessEntries > 0 && res.IDLessBytes > 0; got != tt.idless {
				t.Fatalf("id-less %d entries, %d bytes; want some: %v", res.IDLessEntries, res.IDLessBytes, tt.idless)
			}
			if now, _ := os.ReadFile(ref.Path); !bytes.Equal(orig, now) {
				t.Fatal("a skipped pass changed the transcript")
			}
		})
	}
}
