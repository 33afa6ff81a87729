package restore

import (
	"errors"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/extract"
)

// heldSourceKey returns the source key ("tc-<toolCallId>", see
// extract.SourceKeyPrefix) whose placeholder toolResult entry e holds, or
// "" when it holds none. A tool result stored at the source is an
// extracted value of that entry: its record is keyed by the tool call,
// not by the entry id.
func heldSourceKey(e *bs.Entry) string {
	k := extract.SourceKeyOf(e)
	if k == "" || !extract.IsPlaceholderValue(e.Raw, k) {
		return ""
	}
	return k
}

// checkSource is checkPlaceholders for the source placeholder of e (key
// from heldSourceKey), against the key's side record: the record must
// hold the result's content, intact.
func checkSource(session string, e *bs.Entry, key string, sr sideRecord) placeholderCheck {
	c := placeholderCheck{ptr: extract.SourceContentPath}
	problem := func(kind, format string, args ...any) {
		c.problem = &Problem{Session: session, EntryID: e.ID, Line: e.Line, Path: c.ptr, Kind: kind,
			Detail: fmt.Sprintf(format, args...), File: sr.file}
	}
	switch {
	case sr.err != nil && errors.Is(sr.err, bs.ErrNotFound):
		problem(ProblemMissingFile, "no side record %s for the result of this tool call", key)
		c.problem.File = ""
	case sr.err != nil:
		problem(ProblemCorruptFile, "%v", sr.err)
	default:
		v, ok := sr.rec.Value(extract.SourceContentPath)
		if !ok {
			problem(ProblemMissingValue, "side record %s holds no value at %s (it has %s)", key, extract.SourceContentPath, valuePaths(sr.rec))
			break
		}
		if _, err := v.Bytes(); err != nil {
			problem(ProblemHashMismatch, "%v", err)
			break
		}
		c.value = v
	}
	return c
}
