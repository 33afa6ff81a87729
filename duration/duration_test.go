package duration_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/brainsurgeon/brainsurgeon/duration"
)

const (
	day  = 24 * time.Hour
	week = 7 * day
)

type parseCase struct {
	name    string
	in      string
	want    time.Duration
	wantErr error  // nil, duration.ErrSyntax or duration.ErrRange
	wantMsg string // exact error text when wantErr != nil
}

func syntaxMsg(s string) string { return "Invalid duration '" + s + "'. Use m, h, d, or w" }

var parseCases = []parseCase{
	// Spec checks.
	{name: "Spec24h", in: "24h", want: 86400000 * time.Millisecond},
	{name: "Spec1d", in: "1d", want: 86400000 * time.Millisecond},
	{name: "Spec6h30m", in: "6h30m", want: 23400000 * time.Millisecond},

	// Single units.
	{name: "Minutes", in: "45m", want: 45 * time.Minute},
	{name: "Hours", in: "6h", want: 6 * time.Hour},
	{name: "Days", in: "5d", want: 5 * day},
	{name: "Weeks", in: "2w", want: 2 * week},
	{name: "LeadingZeros", in: "030m", want: 30 * time.Minute},
	{name: "ManyMinutes", in: "1440m", want: day},

	// Case-insensitivity.
	{name: "UpperDay", in: "5D", want: 5 * day},
	{name: "UpperMinute", in: "30M", want: 30 * time.Minute},
	{name: "UpperHour", in: "2H", want: 2 * time.Hour},
	{name: "UpperWeek", in: "3W", want: 3 * week},
	{name: "MixedCaseCombination", in: "1D12h", want: 36 * time.Hour},

	// Combinations.
	{name: "DayHour", in: "1d12h", want: 36 * time.Hour},
	{name: "WeekDay", in: "1w2d", want: 9 * day},
	{name: "AllUnits", in: "1w2d3h4m", want: week + 2*day + 3*time.Hour + 4*time.Minute},
	{name: "WeekMinute", in: "1w30m", want: week + 30*time.Minute},
	{name: "ZeroComponent", in: "1d0h", want: day},
	{name: "ZeroLeading", in: "0h30m", want: 30 * time.Minute},

	// White space.
	{name: "SurroundingSpaces", in: "  6h  ", want: 6 * time.Hour},
	{name: "SurroundingTabsNewlines", in: "\t1d\n", want: day},

	// Range boundaries.
	{name: "Minimum", in: "30m", want: duration.Min},
	{name: "Maximum", in: "52w", want: duration.Max},
	{name: "MaximumAsDays", in: "364d", want: duration.Max},
	{name: "TooShort", in: "10m", wantErr: duration.ErrRange, wantMsg: "Duration '10m' is too short: the minimum is 30m"},
	{name: "JustTooShort", in: "29m", wantErr: duration.ErrRange, wantMsg: "Duration '29m' is too short: the minimum is 30m"},
	{name: "Zero", in: "0m", wantErr: duration.ErrRange, wantMsg: "Duration '0m' is too short: the minimum is 30m"},
	{name: "ZeroWeeks", in: "0w", wantErr: duration.ErrRange, wantMsg: "Duration '0w' is too short: the minimum is 30m"},
	{name: "TooLong", in: "53w", wantErr: duration.ErrRange, wantMsg: "Duration '53w' is too long: the maximum is 52w"},
	{name: "JustTooLong", in: "52w1m", wantErr: duration.ErrRange, wantMsg: "Duration '52w1m' is too long: the maximum is 52w"},
	{name: "TooLongDays", in: "365d", wantErr: duration.ErrRange, wantMsg: "Duration '365d' is too long: the maximum is 52w"},
	{name: "TooLongHugeButFinite", in: "15000w", wantErr: duration.ErrRange, wantMsg: "Duration '15000w' is too long: the maximum is 52w"},
	{name: "TooShortKeepsInput", in: " 5M ", wantErr: duration.ErrRange, wantMsg: "Duration ' 5M ' is too short: the minimum is 30m"},

	// Invalid format.
	{name: "UnknownUnit", in: "5x", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("5x")},
	{name: "Seconds", in: "90s", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("90s")},
	{name: "Empty", in: "", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("")},
	{name: "Blank", in: "   ", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("   ")},
	{name: "MissingNumber", in: "h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("h")},
	{name: "MissingUnit", in: "30", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("30")},
	{name: "MissingTrailingUnit", in: "1d12", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("1d12")},
	{name: "MissingInnerNumber", in: "1dh", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("1dh")},
	{name: "NegativeSign", in: "-5h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("-5h")},
	{name: "PositiveSign", in: "+5h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("+5h")},
	{name: "Decimal", in: "1.5h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("1.5h")},
	{name: "InnerSpace", in: "1d 12h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("1d 12h")},
	{name: "SpaceBeforeUnit", in: "5 h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("5 h")},
	{name: "WordUnit", in: "5days", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("5days")},
	{name: "GoStyle", in: "1h0m0s", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("1h0m0s")},
	{name: "NonASCIIDigit", in: "٥h", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("٥h")},
	{name: "OverflowInt64", in: "99999999999999999999m", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("99999999999999999999m")},
	{name: "OverflowDuration", in: "100000000000w", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("100000000000w")},
	{name: "OverflowSum", in: "15250w2d", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg("15250w2d")},
	{name: "SyntaxKeepsInput", in: " 5x ", wantErr: duration.ErrSyntax, wantMsg: syntaxMsg(" 5x ")},

	// Unit order and repetition.
	{name: "Misordered", in: "30m1h", wantErr: duration.ErrSyntax,
		wantMsg: "Invalid duration '30m1h': unit 'h' comes after a smaller unit. Write units in the order w, d, h, m"},
	{name: "MisorderedWeek", in: "1d1w", wantErr: duration.ErrSyntax,
		wantMsg: "Invalid duration '1d1w': unit 'w' comes after a smaller unit. Write units in the order w, d, h, m"},
	{name: "Repeated", in: "1h1h", wantErr: duration.ErrSyntax,
		wantMsg: "Invalid duration '1h1h': unit 'h' is repeated. Use each of w, d, h, m at most once"},
	{name: "RepeatedMixedCase", in: "1h1H", wantErr: duration.ErrSyntax,
		wantMsg: "Invalid duration '1h1H': unit 'h' is repeated. Use each of w, d, h, m at most once"},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := duration.Parse(tc.in)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Parse(%q) error: %v", tc.in, err)
				}
				if got != tc.want {
					t.Fatalf("Parse(%q) = %v, want %v", tc.in, got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want error %q", tc.in, got, tc.wantMsg)
			}
			if got != 0 {
				t.Errorf("Parse(%q) returned %v with an error, want 0", tc.in, got)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Parse(%q) error %q does not wrap %v", tc.in, err, tc.wantErr)
			}
			other := duration.ErrSyntax
			if tc.wantErr == duration.ErrSyntax {
				other = duration.ErrRange
			}
			if errors.Is(err, other) {
				t.Errorf("Parse(%q) error %q also wraps %v", tc.in, err, other)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("Parse(%q) error = %q, want %q", tc.in, err.Error(), tc.wantMsg)
			}
		})
	}
}

func TestParseSpecMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		ms   int64
	}{
		{"TwentyFourHours", "24h", 86400000},
		{"OneDay", "1d", 86400000},
		{"SixHoursThirtyMinutes", "6h30m", 23400000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := duration.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Milliseconds(); got != tc.ms {
				t.Fatalf("Parse(%q).Milliseconds() = %d, want %d", tc.in, got, tc.ms)
			}
		})
	}
}

func TestConstants(t *testing.T) {
	if duration.Min != 30*time.Minute {
		t.Errorf("Min = %v", duration.Min)
	}
	if duration.Max != 52*week {
		t.Errorf("Max = %v", duration.Max)
	}
	if duration.Day != day || duration.Week != week {
		t.Errorf("Day = %v, Week = %v", duration.Day, duration.Week)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
		want string
	}{
		{"Zero", 0, "0m"},
		{"SubMinute", 59 * time.Second, "0m"},
		{"NegativeSubMinute", -59 * time.Second, "0m"},
		{"OneMinute", time.Minute, "1m"},
		{"SecondsTruncated", 90*time.Minute + 59*time.Second + 999*time.Millisecond, "1h 30m"},
		{"HourMinutes", 90 * time.Minute, "1h 30m"},
		{"Hours", 6 * time.Hour, "6h"},
		{"DayHours", 36 * time.Hour, "1d 12h"},
		{"SpecExample", 2*day + 4*time.Hour, "2d 4h"},
		{"DayMinutes", day + 5*time.Minute, "1d 5m"},
		{"AllUnits", 3*day + 2*time.Hour + 1*time.Minute, "3d 2h 1m"},
		{"Week", week, "7d"},
		{"Max", duration.Max, "364d"},
		{"Negative", -90 * time.Minute, "-1h 30m"},
		{"NegativeDay", -day, "-1d"},
		{"NegativeTruncated", -(time.Hour + 30*time.Second), "-1h"},
		{"MaxInt64", time.Duration(math.MaxInt64), "106751d 23h 47m"},
		{"MinInt64", time.Duration(math.MinInt64), "-106751d 23h 47m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := duration.Format(tc.in); got != tc.want {
				t.Fatalf("Format(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestFormatParseRoundTrip checks, for every whole number of minutes from
// Min to Max, that Parse accepts Format's output with the spaces removed
// and returns the original duration.
func TestFormatParseRoundTrip(t *testing.T) {
	n := 0
	for d := duration.Min; d <= duration.Max; d += time.Minute {
		s := duration.Format(d)
		got, err := duration.Parse(strings.ReplaceAll(s, " ", ""))
		if err != nil || got != d {
			t.Fatalf("Parse(Format(%v) = %q) = %v, %v; want %v", d, s, got, err, d)
		}
		n++
	}
	if want := int((duration.Max-duration.Min)/time.Minute) + 1; n != want {
		t.Fatalf("checked %d values, want %d", n, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := duration.Parse(s)
		if err != nil {
			isSyntax := errors.Is(err, duration.ErrSyntax)
			isRange := errors.Is(err, duration.ErrRange)
			if isSyntax == isRange {
				t.Fatalf("Parse(%q) error %q: wraps ErrSyntax=%v, ErrRange=%v; want exactly one", s, err, isSyntax, isRange)
			}
			if d != 0 {
				t.Fatalf("Parse(%q) = %v with error %v, want 0", s, d, err)
			}
			return
		}
		if d < duration.Min || d > duration.Max {
			t.Fatalf("Parse(%q) = %v, outside [%v, %v]", s, d, duration.Min, duration.Max)
		}
		if d%time.Minute != 0 {
			t.Fatalf("Parse(%q) = %v, not a whole number of minutes", s, d)
		}
		f := strings.ReplaceAll(duration.Format(d), " ", "")
		if back, err := duration.Parse(f); err != nil || back != d {
			t.Fatalf("Parse(%q) = %v, but Parse(%q) = %v, %v", s, d, f, back, err)
		}
	})
}
