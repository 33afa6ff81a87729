package extract_test

import (
	"strings"
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func big(n int) string { return strings.Repeat("x", n) }

// toolResult returns a real-format toolResult line of the given age whose
// text has n bytes, with extra top-level members.
func toolResult(id string, age time.Duration, n int, extra string) string {
	ts := now.Add(-age).Format(time.RFC3339Nano)
	return `{"type":"message","id":"` + id + `","parentId":null,"timestamp":"` + ts + `","message":{"role":"toolResult","toolCallId":"t","toolName":"exec","content":[{"type":"text","text":"` + big(n) + `"}],"isError":false}` + extra + `}`
}

func TestDecide(t *testing.T) {
	def := extract.DefaultPolicy()
	off := def
	off.Enabled = false
	noAge := def
	noAge.AgeThreshold = 0
	for _, tt := range []struct {
		name string
		line string
		pos  int
		p    extract.Policy
		want extract.Code
	}{
		{"Extract", toolResult("a1", 48*time.Hour, 600, ""), 5, def, extract.CodeExtract},
		{"Disabled", toolResult("a1", 48*time.Hour, 600, ""), 5, off, extract.CodeDisabled},
		{"NoID", `{"type":"message","timestamp":"2026-01-01T00:00:00Z","message":{"role":"toolResult","content":[{"type":"text","text":"` + big(600) + `"}]}}`, 5, def, extract.CodeNoID},
		{"UnsafeID", toolResult("../x", 48*time.Hour, 600, ""), 5, def, extract.CodeBadID},
		{"Never", toolResult("a1", 48*time.Hour, 600, `,"_extractable":false`), 5, def, extract.CodeNever},
		{"AlreadyExtracted", strings.Replace(toolResult("a1", 48*time.Hour, 0, ""), `"text":""`, `"text":"[[extracted-a1]]"`, 1), 5, def, extract.CodeAlreadyExtracted},
		{"MentionOfOtherPlaceholderIsNotExtracted", strings.Replace(toolResult("a1", 48*time.Hour, 600, ""), `"text":"`, `"text":"see [[extracted-zz]] `, 1), 5, def, extract.CodeExtract},
		{"TypeNotEnabled", `{"type":"message","id":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"` + big(900) + `"}}`, 5, def, extract.CodeTypeNotEnabled},
		{"TooYoung", toolResult("a1", time.Hour, 600, ""), 5, def, extract.CodeTooYoung},
		{"AgeOff", toolResult("a1", time.Hour, 600, ""), 5, noAge, extract.CodeExtract},
		{"TooRecent", toolResult("a1", 48*time.Hour, 600, ""), 2, def, extract.CodeTooRecent},
		{"OffPathIsOld", toolResult("a1", 48*time.Hour, 600, ""), -1, def, extract.CodeExtract},
		{"TooShort", toolResult("a1", 48*time.Hour, 499, ""), 5, def, extract.CodeTooShort},
		{"ExactlyMinLength", toolResult("a1", 48*time.Hour, 500, ""), 5, def, extract.CodeExtract},
		// min_value_length counts bytes of the stored JSON text: 250 "é"
		// are 500 bytes (250 characters), 250 "\n" escapes are 500 bytes
		// as written (250 characters once decoded).
		{"MinLengthCountsBytes", strings.Replace(toolResult("a1", 48*time.Hour, 0, ""), `"text":""`, `"text":"`+strings.Repeat("é", 250)+`"`, 1), 5, def, extract.CodeExtract},
		{"MinLengthBytesShort", strings.Replace(toolResult("a1", 48*time.Hour, 0, ""), `"text":""`, `"text":"`+strings.Repeat("é", 249)+`x"`, 1), 5, def, extract.CodeTooShort},
		{"MinLengthCountsEscapesAsWritten", strings.Replace(toolResult("a1", 48*time.Hour, 0, ""), `"text":""`, `"text":"`+strings.Repeat(`\n`, 250)+`"`, 1), 5, def, extract.CodeExtract},
		{"WindowLonger", toolResult("a1", 48*time.Hour, 600, `,"_extractable":10`), 5, def, extract.CodeTooRecent},
		{"WindowShorter", toolResult("a1", 48*time.Hour, 600, `,"_extractable":1`), 1, def, extract.CodeExtract},
		{"ForcedShort", toolResult("a1", 48*time.Hour, 5, `,"_extractable":true`), 5, def, extract.CodeForced},
		{"ForcedWrongType", `{"type":"message","id":"u1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"},"_extractable":true}`, 5, def, extract.CodeForced},
		{"ForcedStillKeepsRecent", toolResult("a1", 48*time.Hour, 600, `,"_extractable":true`), 1, def, extract.CodeTooRecent},
		{"FlatToolResult", `{"__id":"ent_1","type":"tool_result","timestamp":"2026-01-01T00:00:00Z","output":"` + big(700) + `"}`, 5, def, extract.CodeExtract},
		{"Compaction", `{"type":"compaction","id":"c1","timestamp":"2026-01-01T00:00:00Z","summary":"` + big(5000) + `"}`, 5, def, extract.CodeNothing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := entry.Parse([]byte(tt.line), 1, 0)
			d := extract.Decide(e, tt.pos, tt.p, now)
			if d.Code != tt.want {
				t.Fatalf("code = %s, want %s (%s)", d.Code, tt.want, d.Reason)
			}
			if d.Extract != (tt.want == extract.CodeExtract || tt.want == extract.CodeForced) {
				t.Fatalf("extract = %v for %s", d.Extract, d.Code)
			}
			if d.Extract && len(d.Candidates) == 0 {
				t.Fatal("extract without candidates")
			}
			if !strings.Contains(d.Reason, "→") {
				t.Fatalf("reason %q is not in the seed's form", d.Reason)
			}
		})
	}
}

// TestDecideReasonForm checks the debug form of a reason ("Entry 45:
// thinking, 48h old → EXTRACT").
func TestDecideReasonForm(t *testing.T) {
	p := extract.DefaultPolicy()
	p.Triggers = []bs.TriggerType{bs.TriggerThinking}
	line := `{"type":"message","id":"45","timestamp":"` + now.Add(-48*time.Hour).Format(time.RFC3339) + `","message":{"role":"assistant","content":[{"type":"thinking","thinking":"` + big(800) + `"}]}}`
	d := extract.Decide(entry.Parse([]byte(line), 1, 0), 10, p, now)
	if d.Reason != "Entry 45: thinking, 2d old → EXTRACT" {
		t.Fatalf("reason = %q", d.Reason)
	}
}

// TestRestoreProtection is the six cases of the restore protection: a
// restored entry is kept for keep_after_restore_seconds unless forced.
func TestRestoreProtection(t *testing.T) {
	p := extract.DefaultPolicy()
	p.AgeThreshold = 0
	restored := func(ago time.Duration, extra string) string {
		return toolResult("msg-456", 48*time.Hour, 600, `,"_restored":"`+now.Add(-ago).Format(time.RFC3339Nano)+`"`+extra)
	}
	for _, tt := range []struct {
		name      string
		line      string
		keepAfter time.Duration
		extract   bool
	}{
		{"Test1FreshlyRestoredEntryProtected", restored(5*time.Minute, ""), 600 * time.Second, false},
		{"Test2ExpiredProtectionAllowsExtraction", restored(15*time.Minute, ""), 600 * time.Second, true},
		{"Test3CustomProtectionDurationBoundary", restored(30*time.Second, ""), 30 * time.Second, true},
		{"Test5ExtractableTrueBypassesTimeProtection", restored(time.Minute, `,"_extractable":true`), 600 * time.Second, true},
		{"Test6ExtractableFalsePreventsAllExtraction", restored(time.Hour, `,"_extractable":false`), 600 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			q.KeepAfterRestore = tt.keepAfter
			d := extract.Decide(entry.Parse([]byte(tt.line), 1, 0), 10, q, now)
			if d.Extract != tt.extract {
				t.Fatalf("extract = %v, want %v (%s)", d.Extract, tt.extract, d.Reason)
			}
		})
	}
	// Test 4 (re-restore detection) needs a real restore; it lives in the
	// restore package's tests.
}

func TestPlaceholderText(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		n        int
		want     string
	}{
		{"Bare", "hello", 0, "[[extracted-e1]]"},
		{"Preview", "hello world", 5, "hello… [[extracted-e1]]"},
		{"WholeCodePoints", "日本語テキスト", 2, "日本… [[extracted-e1]]"},
		{"Emoji", "🚀🚀🚀", 1, "🚀… [[extracted-e1]]"},
		{"ShorterThanPreview", "ab", 5, "ab… [[extracted-e1]]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := extract.PlaceholderText(tt.in, tt.n, "e1"); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFromConfig(t *testing.T) {
	c := config.Default()
	p := extract.FromConfig(c)
	if p.Enabled || p.KeepRecent != 3 || p.MinValueLength != 500 || len(p.Triggers) != 2 || p.KeepAfterRestore != 600*time.Second || p.MinSavingTokens != 2000 {
		t.Fatalf("policy from defaults: %+v", p)
	}
}
