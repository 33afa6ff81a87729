package restore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// SetResult is the answer to SetExtractable.
type SetResult struct {
	EntryID string `json:"entry_id"`
	// Value is the raw value set ("true", "false" or a number).
	Value string `json:"value"`
	// Previous is the raw value before, or "" when the member was absent.
	Previous string `json:"previous,omitempty"`
	// Changed is false when the entry already had this value.
	Changed bool `json:"changed"`
	// Applied is true when the transcript holds the value now; Queued
	// when the write waits for the session to be idle.
	Applied bool `json:"applied"`
	Queued  bool `json:"queued"`
}

// ParseExtractableValue checks a value for "_extractable" and returns its
// JSON text: "true", "false" or a non-negative integer (written without
// leading zeros).
func ParseExtractableValue(value string) (string, error) {
	v := strings.TrimSpace(value)
	switch v {
	case "true", "false":
		return v, nil
	}
	if v != "" && isDigits(v) && len(v) <= 9 {
		n, err := strconv.Atoi(v)
		if err == nil {
			return strconv.Itoa(n), nil
		}
	}
	return "", fmt.Errorf("_extractable value %q: expected true, false or a non-negative integer (messages to keep): %w", value, bs.ErrInvalid)
}

// SetExtractable sets the entry's "_extractable" member: "true" forces
// extraction (still outside keep_recent), "false" prevents it, a number N
// keeps the entry for N messages. The member is replaced or inserted by
// splicing; its previous state is journaled in the entry's side record so
// that RestoreAll pristine can undo it. A busy session queues the change
// like a restore.
func (r *Restorer) SetExtractable(ctx context.Context, ref bs.SessionRef, entryID, value string) (*SetResult, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	if err := bs.IDEntry.Check(entryID); err != nil {
		return nil, err
	}
	raw, err := ParseExtractableValue(value)
	if err != nil {
		return nil, err
	}
	snap, err := r.scan(ctx, ref, scanFilter{ids: map[string]bool{entryID: true}})
	if err != nil {
		return nil, err
	}
	ref = snap.ref
	e, ok := snap.entry(entryID)
	if !ok {
		return nil, r.missingEntry(ctx, ref, entryID)
	}
	res := &SetResult{EntryID: entryID, Value: raw, Previous: string(e.Extractable)}
	if string(e.Extractable) == raw {
		res.Applied = true
		return res, nil
	}
	res.Changed = true
	req := r.newRequest(KindSetExtractable, ref, entryID)
	req.Value = raw
	err = r.deliver(ctx, ref, req, snap, func(outcome) { res.Applied = true })
	if err != nil {
		return nil, fmt.Errorf("set _extractable of %s in %s: %w", entryID, ref, err)
	}
	res.Queued = !res.Applied
	r.log().Debug("set _extractable", "entry_id", entryID, "value", raw, "previous", res.Previous,
		"session", ref.String(), "applied", res.Applied, "queued", res.Queued)
	return res, nil
}
