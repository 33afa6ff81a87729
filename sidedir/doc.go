// Package sidedir is the side store on a local file system: it keeps the
// values BrainSurgeon moves out of a session's transcript (and any other
// record a writer keeps beside a session) in the session's side
// directory. Store implements brainsurgeon.SideStore there, with the
// listing and dropping of whole units that retention uses (SideUnits,
// DropUnits, RemoveSideIfEmpty). It knows nothing of what a record holds:
// a record is bytes under a key, encoded by the package that writes it.
//
// # Where
//
// A Store finds each session's side directory through its Locator, which
// the transcript stores provide: for a JSONL session it is
// "<transcript dir>/extracted/<sessionId>", and a session OpenClaw moved
// into its SQLite store keeps the directory of its JSONL days. Package
// sidedir never reads a transcript or a session's path itself; Fixed
// places every session in one directory, for tools and tests.
//
// # Keys
//
// A record is keyed by session and by a key: the id of the transcript
// entry its values came from, or any other id a writer keys it by, such
// as the id of a tool call whose result is stored before any transcript
// entry holds it. A key is 1 to brainsurgeon.MaxSideKeyLen bytes of
// printable ASCII other than space, '/' and '\', and neither "." nor "..":
// it never names a path outside the side directory, and in a pack's index
// it is a JSON string like any other. brainsurgeon.CheckSideKey checks it;
// every method refuses another key with an error wrapping
// brainsurgeon.ErrInvalid.
//
// # Layout
//
// The records Put for a session between two Syncs go into one pack,
// "pack-<UTC pass time>-<random>.bszst" (see PackFormat): zstd frames of
// records, small records sharing a frame, then the pack's index (key →
// frame, offset in it, size, CRC-32C and time; the keys it deletes) in a
// zstd skippable frame and a fixed trailer, so that `zstd -dc` prints
// every record. A pack is written under a temp name starting with
// ".pack-" and is never edited after its rename. Delete writes a small
// pack whose index marks the key deleted. The side directory may also
// hold the per-entry files of earlier versions, "<key>.json" and
// "<key>.json.zst", and those of the first BrainSurgeon: they are read,
// listed and removed, never written. Directories are created 0700 and
// files 0600.
//
// # The newest record
//
// A key may have records in several packs and per-entry files; one rule
// decides which is its newest state, for every reader alike (Get, List,
// Locate, Delete, SideUnits and DropUnits): the records Put and not yet
// synced come first; then the newest pack (by name) whose index holds
// the key, as a record or as a deletion, timed by its pass time (the
// index's, or the name's when the index has none) or the deletion's
// time; then the key's per-entry file, which wins when no pack holds the
// key or when it was modified after that time. A deletion that wins means
// the key has no record.
//
// # Durability and crashes
//
// Put records are durable once Sync returns: Sync writes the pack's
// index, fsyncs the pack, renames it to its final name and fsyncs the
// directory (and its parents when the pass created it). Callers Sync
// before they change the transcript, so a crash leaves at most a record
// no placeholder names, never a placeholder without its record. A crash
// while a pack is written leaves a temp file, which the next pack written
// into the directory removes once it is a minute old. DropUnits writes
// the records it keeps into a new pack, durable under its final name,
// before it removes any unit: a crash leaves the old units, the new pack
// or both (holding the same records), never neither. A pack whose index
// cannot be read is named by Get, left out of List and listed with its
// error by SideUnits; a damaged record is an error wrapping
// brainsurgeon.ErrCorrupt.
//
// # Media
//
// Every rule above is the Store's; its Medium only lists, reads,
// publishes and removes whole units of a location by name. New keeps
// them on the local file system, as described above; NewWithMedium takes
// another Medium (an object store), which gets the same packs, bytes,
// checksums, newest-record rule and durability order: a pack is written
// to a local temp file and then committed whole, Sync returns once it is
// durable, and DropUnits commits the records it keeps before it removes
// any unit.
//
// A Store is safe for concurrent use; DropUnits and RemoveSideIfEmpty are
// serialised per side directory within a process.
package sidedir
