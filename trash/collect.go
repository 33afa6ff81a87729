package trash

import (
	"context"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// ItemLeftovers is the Kind of an item that holds host leftovers
// collected by Collect (an item without a Kind holds sessions).
const ItemLeftovers = "leftovers"

// File is one leftover file of an item.
type File struct {
	// Leftover is the file as the scan found it; its Path is where it was
	// and where Restore puts it back.
	bs.Leftover
	// Name is the file's name inside the item's directory.
	Name string `json:"name"`
}

// CollectOptions tunes Collect.
type CollectOptions struct {
	// IncludeUnique lets Collect take files that still hold unique
	// history; without it they are skipped.
	IncludeUnique bool
}

// Collect moves host leftovers into one trash item, from which Restore
// puts every file back byte-identical and CleanExpired deletes them once
// the item expires. Files that hold unique history are skipped unless
// opts.IncludeUnique. A file that changed since the scan (size or
// modification time) or vanished stops the collect: what was moved is
// moved back and the error (wrapping brainsurgeon.ErrChanged) names the
// file. It returns the item, or nil when nothing was to be collected.
func (t *Trash) Collect(ctx context.Context, files []bs.Leftover, opts CollectOptions) (*Item, error) {
	// TODO(i23-leftovers): implement.
	return nil, fmt.Errorf("trash: collect: not implemented yet: %w", bs.ErrUnsupported)
}
