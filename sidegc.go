package brainsurgeon

import (
	"context"
	"time"
)

// The kinds of SideUnit.
const (
	// SideUnitPack is a pack: the records of one pass over one session.
	SideUnitPack = "pack"
	// SideUnitFile is a per-entry file: "<entryId>.json" or
	// "<entryId>.json.zst", ours or the first BrainSurgeon's.
	SideUnitFile = "file"
)

// SideUnit is the smallest piece of a session's side data that can be
// removed on its own (DESIGN decision 9): a pack, whose age is its pass
// time, or a per-entry file, whose age is its modification time.
type SideUnit struct {
	// Name identifies the unit within its session (a file name). Callers
	// pass it back to SidePruner and must not derive anything from it.
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
	// alone would bring those records back, so SidePruner carries such
	// deletions over into a new pack.
	Masks int `json:"masks"`
	// Err says why the unit cannot be read (a pack with a damaged index);
	// Live and Stale are then unknown. Empty when the unit is readable.
	Err string `json:"error,omitempty"`
}

// SidePruneResult says what SidePruner.PruneSide did.
type SidePruneResult struct {
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

// SidePruner is an optional interface of side stores (found by type
// assertion on a SideStore) for retention: it lists a session's side data
// as units and removes them, keeping chosen records. Policy code decides
// what to remove from the units' age and entries, never from file paths.
type SidePruner interface {
	// SideUnits lists the session's side units, oldest first. A session
	// without side data has none.
	SideUnits(ctx context.Context, ref SessionRef) ([]SideUnit, error)
	// PruneSide removes the named units of a session. The live records
	// of the entries in keep that the units hold are first copied into
	// one new pack (with the newest pass time of the units, so its age
	// does not restart), and deletions that still hide older records
	// elsewhere are carried over too; the new pack is made durable before
	// any unit is removed, so a crash leaves the old units or the new
	// pack, never neither. With nothing to keep, the units are simply
	// removed. An unknown unit name is an error wrapping ErrNotFound and
	// nothing is removed; the units are named as SideUnits names them.
	PruneSide(ctx context.Context, ref SessionRef, units []string, keep []string) (SidePruneResult, error)
}

// GoneLister is an optional interface of Stores (found by type assertion)
// for retention: it names the sessions whose transcript is gone (deleted,
// or archived by the host: OpenClaw renames a transcript
// "<file>.jsonl.deleted.<ts>" or "<file>.jsonl.reset.<ts>") while their
// side data remains. DESIGN decision 9: the values of deleted sessions go
// first. A store names a session only when it is sure the transcript is
// gone; one it cannot tell about (a directory it cannot read) is left out.
// The refs serve to reach the side data (SideStore, SidePruner); they
// cannot be opened.
type GoneLister interface {
	GoneSessions(ctx context.Context) ([]SessionRef, error)
}

// SideRemover is an optional interface of side stores for retention: it
// removes a session's side location once nothing is left in it. Retention
// calls it for gone sessions (GoneLister) after their last unit went.
type SideRemover interface {
	// RemoveSideIfEmpty removes the session's side location when it
	// holds nothing and reports whether it did; a location that still
	// holds anything, or none at all, is no error.
	RemoveSideIfEmpty(ctx context.Context, ref SessionRef) (bool, error)
}
