package entry

import (
	"bytes"
	"encoding/json"
)

// Compaction is a compaction entry as the host writes it (pi's
// CompactionEntry), its members in pi's order: type, id, parentId,
// timestamp, summary, firstKeptEntryId, tokensBefore, details, fromHook.
// T is BrainSurgeon's own record under details.brainsurgeon, which differs
// between a compaction and an import.
type Compaction[T any] struct {
	// Type is "compaction".
	Type string `json:"type"`
	ID   string `json:"id"`
	// ParentID is the parent entry's id; nil writes null (no parent).
	ParentID         *string              `json:"parentId"`
	Timestamp        string               `json:"timestamp"`
	Summary          string               `json:"summary"`
	FirstKeptEntryID string               `json:"firstKeptEntryId"`
	TokensBefore     int64                `json:"tokensBefore"`
	Details          CompactionDetails[T] `json:"details"`
	FromHook         bool                 `json:"fromHook"`
}

// CompactionDetails is a compaction entry's details: pi's cumulative file
// lists and BrainSurgeon's record. pi reads the lists as arrays, so a
// writer sets an empty list, not nil, which would be written as null.
type CompactionDetails[T any] struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
	BrainSurgeon  T        `json:"brainsurgeon"`
}

// Marshal encodes v as one transcript line, as JSON.stringify writes it:
// without escaping <, > and &, and without a line break at the end.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
