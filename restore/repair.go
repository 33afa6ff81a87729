package restore

import (
	"context"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Repair is a structural repair of a transcript: new entries inserted
// after lines, and entries given a new parent. ApplyRepair writes it in one
// rewrite and journals it in the side records, so that RestoreAll with
// pristine takes it back byte for byte.
type Repair struct {
	// Base is the version of the transcript the repair was planned on.
	Base bs.Version
	// Op names the operation in the journals and the audit log
	// ("doctor_fix").
	Op string
	// Inserts add entries after lines.
	Inserts []Insert
	// Reparents give entries a new "parentId".
	Reparents []Reparent
}

// Insert adds new entries right after one line.
type Insert struct {
	// AfterLine is the 1-based line the entries follow; AfterID the
	// entry id that line must carry.
	AfterLine int
	AfterID   string
	// Entries are the new lines (raw JSON objects without a newline),
	// in order; each has an "id" member unique in the transcript, and IDs
	// lists them in the same order.
	Entries [][]byte
	IDs     []string
}

// Reparent gives the entry on Line (with id EntryID) the parent Parent
// ("" writes null).
type Reparent struct {
	Line    int
	EntryID string
	Parent  string
}

// ApplyRepair checks that the session is idle and still at rep.Base,
// journals every change (an inserted entry as a whole line that did not
// exist, a re-parented entry's previous "parentId") in the side records,
// then writes the repair in one rewrite and appends one audit event
// (action rep.Op). A busy session gives an error wrapping ErrBusy, a
// changed one ErrChanged; a store that cannot insert lines ErrUnsupported.
// In every failure nothing of the transcript is changed.
func (r *Restorer) ApplyRepair(ctx context.Context, ref bs.SessionRef, rep Repair) error {
	// TODO(i23-seam): implement.
	return fmt.Errorf("repair %s: not implemented yet: %w", ref, bs.ErrUnsupported)
}
