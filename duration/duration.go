package duration

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Day is the length of the unit "d": always 24 hours, regardless of
// daylight saving time or leap seconds.
const Day = 24 * time.Hour

// Week is the length of the unit "w": always 7 days.
const Week = 7 * Day

// Min is the shortest duration that Parse accepts: 30 minutes ("30m").
const Min = 30 * time.Minute

// Max is the longest duration that Parse accepts: 52 weeks ("52w").
const Max = 52 * Week

// ErrSyntax is wrapped by the errors that Parse returns when its input does
// not follow the grammar described in the package documentation.
var ErrSyntax = errors.New("duration: invalid syntax")

// ErrRange is wrapped by the errors that Parse returns when its input is
// well formed but its value is shorter than Min or longer than Max.
var ErrRange = errors.New("duration: out of range")

// parseError is the error returned by Parse. Its text is meant for the
// user; kind is ErrSyntax or ErrRange.
type parseError struct {
	msg  string
	kind error
}

func (e *parseError) Error() string { return e.msg }
func (e *parseError) Unwrap() error { return e.kind }

// syntaxError returns the generic "invalid format" error for input s.
func syntaxError(s string) error {
	return &parseError{
		msg:  fmt.Sprintf("Invalid duration '%s'. Use m, h, d, or w", s),
		kind: ErrSyntax,
	}
}

// units lists the units from the largest to the smallest; the index of a
// unit in this table is its rank.
var units = [...]struct {
	name byte
	size time.Duration
}{
	{'w', Week},
	{'d', Day},
	{'h', time.Hour},
	{'m', time.Minute},
}

// unitRank returns the index in units of the unit letter c, matched without
// regard to ASCII case, or -1 if c is not a unit.
func unitRank(c byte) int {
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	for i, u := range units {
		if u.name == c {
			return i
		}
	}
	return -1
}

// Parse parses a human time span such as "30m", "6h", "5D", "1d12h" or
// "1w2d" and returns its length. The grammar is described in the package
// documentation: one or more components of a decimal number followed by a
// unit (m, h, d or w, in any case), each unit at most once and from the
// largest to the smallest, with surrounding white space ignored.
//
// A malformed span, including an empty one or one whose numbers are too
// large to be represented as a time.Duration, yields an error wrapping
// ErrSyntax whose text is "Invalid duration '<s>'. Use m, h, d, or w"
// (repeated or misordered units get a message naming the problem instead).
// A well-formed span shorter than Min or longer than Max yields an error
// wrapping ErrRange whose text states the limit. Parse never panics.
func Parse(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, syntaxError(s)
	}
	var total time.Duration
	prev := -1 // rank of the previous unit; -1 before the first one
	for i := 0; i < len(t); {
		start := i
		var n int64
		for ; i < len(t) && '0' <= t[i] && t[i] <= '9'; i++ {
			d := int64(t[i] - '0')
			if n > (math.MaxInt64-d)/10 {
				return 0, syntaxError(s) // number overflows int64
			}
			n = n*10 + d
		}
		if i == start || i == len(t) {
			return 0, syntaxError(s) // missing number or missing unit
		}
		rank := unitRank(t[i])
		if rank < 0 {
			return 0, syntaxError(s)
		}
		i++
		switch {
		case rank == prev:
			return 0, &parseError{
				msg:  fmt.Sprintf("Invalid duration '%s': unit '%c' is repeated. Use each of w, d, h, m at most once", s, units[rank].name),
				kind: ErrSyntax,
			}
		case rank < prev:
			return 0, &parseError{
				msg:  fmt.Sprintf("Invalid duration '%s': unit '%c' comes after a smaller unit. Write units in the order w, d, h, m", s, units[rank].name),
				kind: ErrSyntax,
			}
		}
		prev = rank
		size := units[rank].size
		if n > int64(math.MaxInt64/size) {
			return 0, syntaxError(s) // component overflows time.Duration
		}
		v := time.Duration(n) * size
		if total > math.MaxInt64-v {
			return 0, syntaxError(s) // sum overflows time.Duration
		}
		total += v
	}
	switch {
	case total < Min:
		return 0, &parseError{
			msg:  fmt.Sprintf("Duration '%s' is too short: the minimum is 30m", s),
			kind: ErrRange,
		}
	case total > Max:
		return 0, &parseError{
			msg:  fmt.Sprintf("Duration '%s' is too long: the maximum is 52w", s),
			kind: ErrRange,
		}
	}
	return total, nil
}

// Format returns d as a short human-readable string for display, such as
// "2d 4h", "1d 12h", "1h 30m" or "7d". It uses days, hours and minutes,
// largest first, separated by single spaces, and leaves out units whose
// count is zero; weeks are shown as days (52 weeks is "364d"). Seconds and
// smaller units are truncated toward zero to whole minutes, so any
// duration shorter than a minute, including 0, is "0m". A negative
// duration is prefixed with "-", as in "-1h 30m".
//
// For every whole number of minutes between Min and Max, Parse accepts the
// result of Format with its spaces removed and returns the same duration.
func Format(d time.Duration) string {
	neg := d < 0
	abs := uint64(d)
	if neg {
		abs = -abs // correct even for math.MinInt64
	}
	mins := abs / uint64(time.Minute)
	if mins == 0 {
		return "0m"
	}
	days := mins / (24 * 60)
	hours := mins / 60 % 24
	mins %= 60

	parts := make([]string, 0, 3)
	for _, c := range [...]struct {
		n    uint64
		unit string
	}{{days, "d"}, {hours, "h"}, {mins, "m"}} {
		if c.n != 0 {
			parts = append(parts, strconv.FormatUint(c.n, 10)+c.unit)
		}
	}
	out := strings.Join(parts, " ")
	if neg {
		out = "-" + out
	}
	return out
}
