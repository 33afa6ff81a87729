package brainsurgeon

import "time"

// The kinds of SideUnit.
const (
	// SideUnitPack is a pack: the records of one pass over one session.
	SideUnitPack = "pack"
	// SideUnitFile is a per-entry file: "<entryId>.json" or
	// "<entryId>.json.zst", ours or the first BrainSurgeon's.
	SideUnitFile = "file"
)

// SideUnit is the smallest piece of a session's side data that can be
// removed on its own: a pack, whose age is its pass time, or a per-entry
// file, whose age is its modification time. Retention removes side data
// by units, never by file paths.
type SideUnit struct {
	// Name identifies the unit within its session (a file name). Callers
	// pass it back to the side store's removal and must not derive anything from it.
	Name string `json:"name"`
	// Kind is SideUnitPack or SideUnitFile.
	Kind string `json:"kind"`
	// Time is when the unit was written: a pack's pass time, a file's
	// modification time.
	Time time.Time `json:"time"`
	// Size is the unit's size in bytes.
	Size int64 `json:"size"`
	// Live lists, sorted, the entries whose newest record is in this unit.
	Live []string `json:"live"`
	// Stale counts the unit's records that newer records (or deletions)
	// have replaced: nothing reads them any more.
	Stale int `json:"stale"`
	// Masks counts the deletions recorded in this unit that still hide an
	// older record of the same entry in another unit. Removing the unit
	// alone would bring those records back, so removing it carries such
	// deletions over into a new pack.
	Masks int `json:"masks"`
	// Err says why the unit cannot be read (a pack with a damaged index);
	// Live and Stale are then unknown. Empty when the unit is readable.
	Err string `json:"error,omitempty"`
}

// SideDropResult says what removing side units did (the side store's
// DropUnits).
type SideDropResult struct {
	// Removed counts the units removed; Freed the bytes they held minus
	// the size of the new pack, if one was written.
	Removed int   `json:"removed"`
	Freed   int64 `json:"freed"`
	// Kept counts the records copied into the new pack; Dropped the live
	// records of the removed units that were not kept.
	Kept    int `json:"kept"`
	Dropped int `json:"dropped"`
	// Pack names the new pack, or is empty when none was needed.
	Pack string `json:"pack,omitempty"`
}
