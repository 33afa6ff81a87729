package brainsurgeon

import (
	"context"
	"time"
)

// SessionStat is what [Store.Stat] tells about a session's transcript
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
	// it: the host reads the time as a signal, and an edit by BrainSurgeon
	// must never make a session look busy.
	ModTime time.Time
}

// StatResult is the state of one session, or why it could not be had.
type StatResult struct {
	Stat SessionStat
	Err  error
}

// BatchStater is implemented by stores that can tell the state of many
// sessions at once more cheaply than one Stat each (the JSONL store opens
// each sessions directory once and stats the transcripts relative to it).
// It is the one optional store interface: callers never assert it
// themselves but call the package function [StatMany], which falls back
// to one Stat each.
type BatchStater interface {
	// StatMany returns the state of each session, in the order of refs;
	// a transcript that is gone gives an error wrapping ErrNotFound.
	StatMany(ctx context.Context, refs []SessionRef) []StatResult
}

// StatMany returns the state of each session of refs, in order (a
// transcript that is gone gives an error wrapping ErrNotFound): in one
// call when st is a BatchStater, else one Stat each. It is the one place
// that looks for a BatchStater.
func StatMany(ctx context.Context, st Store, refs []SessionRef) []StatResult {
	if b, ok := st.(BatchStater); ok {
		return b.StatMany(ctx, refs)
	}
	out := make([]StatResult, len(refs))
	for i, ref := range refs {
		out[i].Stat, out[i].Err = st.Stat(ctx, ref)
	}
	return out
}
