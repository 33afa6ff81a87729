// Package duration parses and formats the human time spans used in
// BrainSurgeon's configuration, such as a retention of "6h" or "1d12h".
//
// # Grammar
//
// [Parse] accepts, after trimming surrounding white space:
//
//	span      = component { component } .
//	component = number unit .
//	number    = digit { digit } .            // ASCII 0-9 only
//	unit      = "w" | "d" | "h" | "m" .      // case-insensitive
//
// The units are minute (m), hour (h), day (d, always 24 hours) and week
// (w, always 7 days). Components may be combined, as in "1d12h", "6h30m" or
// "1w2d", but each unit may appear at most once and the units must appear
// from the largest to the smallest (w, then d, then h, then m). Thus "30m1h"
// and "1h1h" are rejected; write "1h30m" and "2h" instead. Components equal
// to zero, as in "1d0h", are allowed.
//
// Signs, decimal points, exponents and white space inside the span are not
// allowed: "-5m", "1.5h" and "1d 12h" are all invalid. Leading zeros are
// allowed ("030m" is 30 minutes).
//
// The value of a span must lie between [Min] (30 minutes) and [Max]
// (52 weeks), both inclusive.
//
// # Errors
//
// Every error returned by [Parse] wraps exactly one of [ErrSyntax] and
// [ErrRange], which can be tested with [errors.Is]. The error text is meant
// to be shown to the user as is and quotes the input as it was given, for
// example:
//
//	Invalid duration '5x'. Use m, h, d, or w
//	Duration '10m' is too short: the minimum is 30m
//	Duration '53w' is too long: the maximum is 52w
//
// # Formatting
//
// [Format] renders a [time.Duration] for display, largest unit first, using
// days, hours and minutes separated by spaces, as in "2d 4h" or "1h 30m".
// With the spaces removed, the output of Format for any value in range is
// accepted by Parse and yields the same duration.
package duration
