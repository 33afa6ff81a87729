package brainsurgeon

// SessionFiles says where a store that keeps sessions as files keeps one
// session: what a caller that moves the session out of its place and back
// (the trash) records. The store fills it; the paths are the store's and
// mean nothing to the caller but places to put back.
type SessionFiles struct {
	// Ref is the session.
	Ref SessionRef
	// Parent is the id of the session this one was forked or spawned
	// from, when it was found as another session's child; empty
	// otherwise.
	Parent string
	// Transcript is the transcript file and TranscriptBytes its size.
	Transcript      string
	TranscriptBytes int64
	// SideDir is the session's side directory (it may not exist).
	SideDir string
	// Index is the host's index file that lists the session
	// (sessions.json) and Entries its entries there, key → the entry's
	// JSON text exactly as it is in the file; both are empty for a
	// session the index does not list.
	Index   string
	Entries map[string]string
}
