package brainsurgeon

import (
	"context"
	"time"
)

// SessionStat is what a [Stater] tells about a session's transcript
// without reading it.
type SessionStat struct {
	// Version changes whenever the transcript may have changed (an append,
	// a rewrite, a replaced file). Compare it only with the Version of
	// another SessionStat: a store may fill it differently from the
	// Version of an opened Transcript.
	Version Version
	// ModTime is when the host last changed the transcript (a file's
	// modification time, a database's transcript update time); the zero
	// time when the store does not know. A rewrite by this module keeps
	// it (DESIGN decision 16).
	ModTime time.Time
}

// Stater is implemented by stores that can tell cheaply, with a stat or
// one small query and without reading the transcript, whether a session
// changed. The daemon uses it to skip unchanged sessions on every tick;
// with a store that does not implement it, every session is read.
type Stater interface {
	// Stat returns the session's current state. It returns an error
	// wrapping ErrNotFound when the transcript is gone.
	Stat(ctx context.Context, ref SessionRef) (SessionStat, error)
}

// StatResult is the state of one session, or why it could not be had.
type StatResult struct {
	Stat SessionStat
	Err  error
}

// BatchStater is implemented by stores that can tell the state of many
// sessions at once more cheaply than one Stat each (the JSONL store opens
// each sessions directory once and stats the transcripts relative to it).
type BatchStater interface {
	// StatMany returns the state of each session, in the order of refs;
	// a transcript that is gone gives an error wrapping ErrNotFound.
	StatMany(ctx context.Context, refs []SessionRef) []StatResult
}
