package entry

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/synth"
	"github.com/brainsurgeon/brainsurgeon/internal/testkit/testcorpus"
)

// diffEntry compares the fast parser's entry with the reference's: Err by
// text and by errors.Is(bs.ErrMalformed), everything else with
// reflect.DeepEqual. It returns "" when they are the same.
func diffEntry(got, want *bs.Entry) string {
	if (got.Err == nil) != (want.Err == nil) {
		return fmt.Sprintf("Err = %v, reference %v", got.Err, want.Err)
	}
	if got.Err != nil {
		if got.Err.Error() != want.Err.Error() {
			return fmt.Sprintf("Err = %q, reference %q", got.Err, want.Err)
		}
		if errors.Is(got.Err, bs.ErrMalformed) != errors.Is(want.Err, bs.ErrMalformed) {
			return fmt.Sprintf("errors.Is(Err, ErrMalformed) = %v, reference %v",
				errors.Is(got.Err, bs.ErrMalformed), errors.Is(want.Err, bs.ErrMalformed))
		}
	}
	g, w := *got, *want
	g.Err, w.Err = nil, nil
	if reflect.DeepEqual(g, w) {
		return ""
	}
	return fmt.Sprintf("entry = %+v\nreference %+v", g, w)
}

// checkLine parses raw with Parse and ParseLite and compares both with the
// reference parser.
func checkLine(t *testing.T, raw []byte, line int, offset int64) {
	t.Helper()
	for _, withStrings := range []bool{true, false} {
		var got *bs.Entry
		if withStrings {
			got = Parse(raw, line, offset)
		} else {
			got = ParseLite(raw, line, offset)
		}
		want := parseReference(raw, line, offset, withStrings)
		if d := diffEntry(got, want); d != "" {
			t.Fatalf("line %d (%d bytes), strings %v: %s", line, len(raw), withStrings, d)
		}
	}
}

// checkTranscript compares every line of a transcript.
func checkTranscript(t *testing.T, data []byte) {
	t.Helper()
	var off int64
	for n := 1; len(data) > 0; n++ {
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		checkLine(t, raw, n, off)
		// Every valid line of a transcript is the fast scanner's own.
		if len(bytes.TrimSpace(raw)) > 0 && parseReference(raw, n, off, true).Kind != bs.KindMalformed &&
			scanLine(raw, n, off, true) == nil {
			t.Fatalf("line %d (%d bytes): valid, but the fast scanner leaves it to the reference", n, len(raw))
		}
		off += int64(len(raw)) + 1
	}
}

var (
	synthOnce  sync.Once
	synthFiles map[string][]byte
)

// synthTranscripts returns generated transcripts of both densities (and
// the flat shape), generated once per test binary.
func synthTranscripts(tb testing.TB) map[string][]byte {
	tb.Helper()
	synthOnce.Do(func() {
		synthFiles = map[string][]byte{}
		for name, o := range map[string]synth.Options{
			"real":  {Size: 3 << 20, Density: synth.DensityReal},
			"today": {Size: 3 << 20, MinResult: 5000, MaxResult: 50000, MinThinking: 5000, MaxThinking: 50000, ImageEvery: 20},
			"flat":  {Size: 1 << 20, Flat: true, ImageEvery: 5},
		} {
			var b bytes.Buffer
			if _, err := synth.Generate(&b, o); err != nil {
				panic(err)
			}
			synthFiles[name] = b.Bytes()
		}
	})
	return synthFiles
}

func TestParseMatchesReference(t *testing.T) {
	for _, f := range testcorpus.Transcripts(t) {
		t.Run(testcorpus.Name(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			checkTranscript(t, data)
		})
	}
	for name, data := range synthTranscripts(t) {
		t.Run("synth/"+name, func(t *testing.T) { checkTranscript(t, data) })
	}
}

// trickyLines are lines at the edges of the JSON grammar and of the parsed
// view. fast says whether the fast scanner reads the line itself (the others
// go to the reference parser).
var trickyLines = []struct {
	name string
	line string
	fast bool
}{
	{"empty object", `{}`, true},
	{"empty members", `{"a":{},"b":[],"c":[{}],"d":""}`, true},
	{"envelope", `{"type":"message","id":"a1","parentId":"p0","timestamp":"2026-03-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`, true},
	{"dunder id first", `{"__id":"x","id":"y","type":"tool_result","output":"o"}`, true},
	{"dunder id last", `{"id":"y","__id":"x"}`, true},
	{"top role then message role", `{"role":"a","message":{"role":"b"}}`, true},
	{"message role then top role", `{"message":{"role":"b"},"role":"a"}`, true},
	{"empty top role", `{"role":"","role":"x"}`, true},
	{"escaped top role", `{"role":"\u0075ser"}`, true},
	{"time priorities", `{"time":1700000000,"__ts":"2026-01-01T00:00:00Z","timestamp":"bad","message":{"created_at":1700000000000}}`, true},
	{"time seconds number", `{"time":1.7e9}`, true},
	{"time ms string", `{"timestamp":"1700000000000"}`, true},
	{"time space layout", `{"timestamp":"2026-01-02 03:04:05"}`, true},
	{"time leap day", `{"timestamp":"2024-02-29T23:59:59.999Z","_restored":"2023-02-29T00:00:00.000Z"}`, true},
	{"time out of range", `{"timestamp":"2026-13-01T24:00:60.000Z","__ts":"2026-04-31T00:00:00.000Z","time":"0999-01-01T00:00:00.000Z"}`, true},
	{"time odd forms", `{"timestamp":"2026-01-01T00:00:00.000+00:00","__ts":"2026-01-01t00:00:00.000Z","time":"2026-01-01T00:00:00.00Z"}`, true},
	{"restored", `{"_restored":"2026-01-02T03:04:05.5+02:00","_extractable":true}`, true},
	{"extractable number", `{"_extractable":-12.5e+3}`, true},
	{"extractable object", `{"_extractable":{"a":1}}`, true},
	{"extractable null", `{"_extractable":null}`, true},
	{"custom", `{"type":"custom_message","customType":"x\ty","content":[{"type":"text","text":"t"}],"appendMode":"side"}`, true},
	{"content blocks top", `{"content":[{"type":"text","text":"a"},"s",{"x":[{"type":"no"}],"type":"image"},[{"type":"n"}]]}`, true},
	{"content blocks message", `{"message":{"content":[{"type":"thinking","thinking":"t","nested":[[1,[2,{"a":"b"}]]]},{"type":"toolCall","arguments":{"type":"x","l":["a",{"b":"c"}]}}]}}`, true},
	{"block without type", `{"message":{"content":[{"text":"a"},{"type":1}]}}`, true},
	{"block type escaped", `{"message":{"content":[{"type":"t\u00e9xt"}]}}`, true},
	{"content not array", `{"content":{"type":"x"},"message":{"content":"s"}}`, true},
	{"message array", `{"message":[{"role":"x"}],"content":[]}`, true},
	{"deep content", `{"a":{"message":{"content":[{"type":"x"}]}}}`, true},
	{"tilde slash names", `{"a/b":{"c~d":"v","~/~":["w"]}}`, true},
	{"escaped names", `{"\u0061\/b":"v","m\"n":{"\\":"w"},"t\u0079pe":"x"}`, true},
	{"escape in name with slash", `{"a\u002fb~":"v"}`, true},
	{"lone surrogate value", `{"text":"\ud800 x \udfff","id":"\ud83d"}`, true},
	{"lone surrogate name", `{"\udc00":"v"}`, true},
	{"surrogate pair", `{"t":"\ud83d\ude00"}`, true},
	{"all escapes", `{"t":"\"\\\/\b\f\n\r\t\u0000\u001F\uABCD"}`, true},
	{"escaped quote at end", `{"t":"a\"","u":"\\"}`, true},
	{"invalid utf8", "{\"t\":\"\xff\xfe\xc3\",\"type\":\"\xc3\xa9\"}", true},
	{"utf8", `{"t":"café ✓ 🚀 日本語"}`, true},
	{"del byte", "{\"t\":\"\x7f\"}", true},
	{"crlf", "{\"a\":1}\r", true},
	{"leading and trailing spaces", " \t\r\n {\"a\" : [ 1 , 2 ] } \t ", true},
	{"trailing unicode space", "{}\u00a0\v", true},
	{"duplicate names", `{"type":"a","type":"b","id":"1","id":"2"}`, true},
	{"numbers", `{"a":[-0,0,1e5,1E+5,-1.5e-7,0.0,123456789012345678901234567890]}`, true},
	{"many elements", `{"a":["0","1","2","3","4","5","6","7","8","9","10","11",[["x"]]],"content":[{},{},{},{},{},{},{},{},{},{},{"type":"text","text":"t"}]}`, true},
	{"literals", `{"a":[true,false,null]}`, true},
	{"long string", `{"t":"` + strings.Repeat("abcdefg\\n", 2000) + `"}`, true},
	{"long string control", "{\"t\":\"" + strings.Repeat("abcdefgh", 100) + "\x1f\"}", false},
	{"deep nesting", `{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, true},
	{"deeper nesting", `{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, false},
	{"too deep", `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, false},
	{"leading zero", `{"a":01}`, false},
	{"minus alone", `{"a":-}`, false},
	{"dot", `{"a":1.}`, false},
	{"exp", `{"a":1e}`, false},
	{"plus", `{"a":+1}`, false},
	{"hex", `{"a":0x1}`, false},
	{"trux", `{"a":tru}`, false},
	{"truex", `{"a":truex}`, false},
	{"nan", `{"a":NaN}`, false},
	{"glued", `{"a":1}{"b":2}`, false},
	{"glued after space", `{"a":1} x`, false},
	{"array top", `[1,2]`, false},
	{"string top", `"s"`, false},
	{"number top", `12`, false},
	{"vertical tab before", "\v{}", false},
	{"unterminated", `{"a":"b`, false},
	{"unclosed", `{"a":1`, false},
	{"trailing comma", `{"a":1,}`, false},
	{"trailing comma array", `{"a":[1,]}`, false},
	{"missing colon", `{"a" 1}`, false},
	{"missing comma", `{"a":1 "b":2}`, false},
	{"mismatch", `{"a":[1}`, false},
	{"bad escape", `{"a":"\x"}`, false},
	{"short unicode escape", `{"a":"\u12"}`, false},
	{"bad unicode escape", `{"a":"\u12g4"}`, false},
	{"raw newline", "{\"a\":\"x\ny\"}", false},
	{"raw tab in name", "{\"a\tb\":1}", false},
	{"non-string name", `{1:2}`, false},
	{"single quotes", `{'a':1}`, false},
	{"comment", `{"a":1 /* c */}`, false},
	{"blank", "  \t ", false},
}

func TestParseTricky(t *testing.T) {
	for _, tt := range trickyLines {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.line)
			checkLine(t, raw, 7, 99)
			if len(bytes.TrimSpace(raw)) == 0 {
				return
			}
			for _, withStrings := range []bool{true, false} {
				if got := scanLine(raw, 7, 99, withStrings) != nil; got != tt.fast {
					t.Errorf("fast scanner reads the line: %v, want %v", got, tt.fast)
				}
			}
		})
	}
}

func FuzzParseReference(f *testing.F) {
	for _, tt := range trickyLines {
		f.Add([]byte(tt.line))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkLine(t, raw, 1, 0)
	})
}

// BenchmarkParse compares the reference parser with the fast scanner on
// generated transcripts of real and of today's density (16 MB each). It
// reports MB/s and allocations per line.
func BenchmarkParse(b *testing.B) {
	for _, d := range []struct {
		name string
		o    synth.Options
	}{
		{"real", synth.Options{Size: 16 << 20, Density: synth.DensityReal}},
		{"today", synth.Options{Size: 16 << 20, MinResult: 5000, MaxResult: 50000, MinThinking: 5000, MaxThinking: 50000, ImageEvery: 20}},
	} {
		var buf bytes.Buffer
		if _, err := synth.Generate(&buf, d.o); err != nil {
			b.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
		for _, p := range []struct {
			name  string
			parse func([]byte, int, int64) *bs.Entry
		}{
			{"reference", func(raw []byte, n int, off int64) *bs.Entry { return parseReference(raw, n, off, true) }},
			{"fast", Parse},
			{"reference-lite", func(raw []byte, n int, off int64) *bs.Entry { return parseReference(raw, n, off, false) }},
			{"fast-lite", ParseLite},
		} {
			b.Run(d.name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(buf.Len()))
				b.ReportAllocs()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for b.Loop() {
					for i, l := range lines {
						if e := p.parse(l, i+1, 0); e.Kind == bs.KindMalformed {
							b.Fatal(e.Err)
						}
					}
				}
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N)/float64(len(lines)), "allocs/line")
			})
		}
	}
}

// TestParseMillisUTC checks the fast timestamp form against the general
// one on random strings of its shape, most of them with fields in range.
func TestParseMillisUTC(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := func(n, hi int) string {
			if r.IntN(20) == 0 {
				hi = 100
			}
			return fmt.Sprintf("%0*d", n, r.IntN(hi))
		}
		year := fmt.Sprintf("%04d", 1990+r.IntN(60))
		if r.IntN(50) == 0 {
			year = f(4, 10000)
		}
		s := year + "-" + f(2, 13) + "-" + f(2, 32) + "T" + f(2, 25) + ":" + f(2, 61) + ":" + f(2, 61) + "." + f(3, 1000) + "Z"
		got, ok := parseMillisUTC([]byte(s))
		want, wantOK := parseTimeString(s)
		if ok && (!wantOK || !reflect.DeepEqual(got, want)) {
			t.Fatalf("%s: fast %v %v, general %v %v", s, got, ok, want, wantOK)
		}
		if !ok && wantOK && s[0] != '0' {
			t.Fatalf("%s: fast form refused a time the general one reads as %v", s, want)
		}
	}
}

// TestParseConcurrent parses the same lines from several goroutines at once
// (the scanners and their slabs are pooled) and keeps every entry until the
// end, so a slot written twice would show.
func TestParseConcurrent(t *testing.T) {
	data := synthTranscripts(t)["flat"]
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var wg sync.WaitGroup
	got := make([][]*bs.Entry, 4)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, l := range lines {
				got[g] = append(got[g], Parse(l, i+1, 0), ParseLite(l, i+1, 0))
			}
		}()
	}
	wg.Wait()
	for g := range got {
		for i, l := range lines {
			for k, withStrings := range []bool{true, false} {
				if d := diffEntry(got[g][2*i+k], parseReference(l, i+1, 0, withStrings)); d != "" {
					t.Fatalf("goroutine %d, line %d, strings %v: %s", g, i+1, withStrings, d)
				}
			}
		}
	}
}
