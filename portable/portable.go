// Package portable moves a session's context out of one session and into
// a new one: Export writes the latest summary, structured facts and the
// kept tail (the raw lines the host still loads) as one JSON document;
// Import validates such a document strictly and creates a new session
// from it; Branch copies the raw lines of one path into a new session.
//
// New sessions carry a header whose parentSession names the session they
// come from, as pi's own branched sessions do, and are written through
// the store's Create (the JSONL store creates a new transcript file; the
// SQLite store refuses, because BrainSurgeon never inserts rows into the
// host's database). Lines taken from the source are copied byte for byte.
package portable

import (
	"context"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// NewSession is a session ready to be created: its id and its lines (the
// header first), each one JSON object without a newline.
type NewSession struct {
	// ID is the new session's id (a random uuid unless one was given).
	ID string
	// Lines are the session's lines, the header first.
	Lines [][]byte
}

// Create writes s through c as a new session of agent. A store that
// cannot create sessions (OpenClaw's SQLite store) returns an error
// wrapping brainsurgeon.ErrUnsupported; nothing is written then.
func Create(ctx context.Context, c bs.Store, agent string, s *NewSession) (bs.SessionRef, error) {
	if c == nil {
		return bs.SessionRef{}, fmt.Errorf("create session %s: no store to create the session in (nil): %w", s.ID, bs.ErrUnsupported)
	}
	return c.Create(ctx, agent, s.Lines)
}

// header is a session header line in pi's member order.
type header struct {
	Type          string `json:"type"`
	Version       int    `json:"version,omitempty"`
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ParentSession string `json:"parentSession,omitempty"`
}

// newHeader returns a header line for a new session.
func newHeader(id string, version int, at time.Time, cwd, parent string) ([]byte, error) {
	if version < 2 {
		version = 0 // a v1 header has no version member
	}
	return entry.Marshal(header{Type: "session", Version: version, ID: id, Timestamp: bs.FormatTimestamp(at), Cwd: cwd, ParentSession: parent})
}

// parentOf names the source session in a new header's parentSession: its
// transcript path, as pi writes it, or its identity when it has no path.
func parentOf(tr bs.Transcript) string {
	if p := tr.Location(); p != "" {
		return p
	}
	return tr.Ref().Identity()
}
