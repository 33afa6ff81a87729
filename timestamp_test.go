package brainsurgeon_test

import (
	"testing"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

func TestFormatTimestamp(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Time
		want string
	}{
		{"Milliseconds", time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC), "2026-01-02T03:04:05.006Z"},
		{"TruncatesMicros", time.Date(2026, 1, 2, 3, 4, 5, 999_999_999, time.UTC), "2026-01-02T03:04:05.999Z"},
		{"ZeroMillis", time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC), "2026-12-31T23:59:59.000Z"},
		{"ConvertsToUTC", time.Date(2026, 1, 1, 1, 0, 0, 0, time.FixedZone("P", 2*3600)), "2025-12-31T23:00:00.000Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bs.FormatTimestamp(tc.in); got != tc.want {
				t.Fatalf("FormatTimestamp = %s, want %s", got, tc.want)
			}
			if p, err := time.Parse(bs.TimestampLayout, tc.want); err != nil || !p.Equal(tc.in.Truncate(time.Millisecond)) {
				t.Fatalf("parsing %s by TimestampLayout = %v, %v", tc.want, p, err)
			}
		})
	}
}
