package session

import (
	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// ParseEntry builds the parsed view of one raw line (see entry.Parse).
func ParseEntry(raw []byte, line int, offset int64) *bs.Entry { return entry.Parse(raw, line, offset) }

// ParseLiteEntry builds the envelope-only view of one raw line (see
// entry.ParseLite), as Reader.LiteEntry does.
func ParseLiteEntry(raw []byte, line int, offset int64) *bs.Entry {
	return entry.ParseLite(raw, line, offset)
}

// Classify returns every value of the entry that extraction may move out
// (see entry.Classify).
func Classify(e *bs.Entry) []bs.Candidate { return entry.Classify(e) }

// FlatTrigger returns the trigger type of a flat-format entry (see
// entry.FlatTrigger).
func FlatTrigger(e *bs.Entry) bs.TriggerType { return entry.FlatTrigger(e) }
