package portable

import (
	"context"
	"fmt"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/recall"
	"github.com/google/uuid"
)

// BranchOptions tunes Branch.
type BranchOptions struct {
	// ID is the new session's id; empty means a new random uuid.
	ID string
	// Clock times the new header; nil means the system clock.
	Clock bs.Clock
}

// Branch returns a new session holding the raw lines of the path from the
// root to entry at (the active leaf when at is empty), byte for byte,
// under a new header whose parentSession names tr's session. The host
// loads it with at as its leaf, so its context is the source's context as
// it stood at that entry. Entries of other branches, and labels on them,
// are not copied.
//
// An unknown at is an error wrapping brainsurgeon.ErrNotFound that lists
// nearby ids; an at that is not a conversation entry (a leaf control line)
// one wrapping ErrInvalid; an at on a v1 transcript (which has no entry
// ids) one wrapping ErrUnsupported.
func Branch(ctx context.Context, tr bs.Transcript, at string, o BranchOptions) (*NewSession, error) {
	nodes := tr.Nodes()
	h := tr.Header()
	var leaf int
	switch {
	case at == "":
		path := tr.ActivePath()
		if len(path) == 0 {
			return nil, fmt.Errorf("branch %s: the session has no entries to branch from: %w", tr.Ref(), bs.ErrInvalid)
		}
		leaf = path[len(path)-1]
	case h.Version < 2:
		return nil, fmt.Errorf("branch %s at %q: a v1 transcript has no entry ids (let the host migrate it first, or branch at the leaf): %w", tr.Ref(), at, bs.ErrUnsupported)
	default:
		n, ok := tr.Node(at)
		if !ok {
			return nil, fmt.Errorf("branch: %w", recall.NotFound(tr, "--at", at))
		}
		if n.Type == "leaf" || n.Kind != bs.KindEntry {
			return nil, fmt.Errorf("branch %s at %q: line %d is a %s line, expected a conversation entry: %w", tr.Ref(), at, n.Line, n.Type, bs.ErrInvalid)
		}
		leaf = n.Line - 1
	}
	chain := recall.Chain(tr, leaf)
	lines := make([]int, len(chain))
	for k, i := range chain {
		lines[k] = nodes[i].Line
		if k > 0 && lines[k] <= lines[k-1] {
			return nil, fmt.Errorf("branch %s: entry %s (line %d) comes before its parent (line %d) in the file, expected parents first: %w",
				tr.Ref(), nodes[i].ID, lines[k], lines[k-1], bs.ErrInvalid)
		}
	}
	id := o.ID
	if id == "" {
		id = uuid.NewString() // a version 4 uuid, the form of pi's session ids
	}
	hl, err := newHeader(id, h.Version, bs.Now(o.Clock), h.Cwd, parentOf(tr))
	if err != nil {
		return nil, fmt.Errorf("branch %s: %w", tr.Ref(), err)
	}
	s := &NewSession{ID: id, Lines: make([][]byte, 0, len(lines)+1)}
	s.Lines = append(s.Lines, hl)
	for e, err := range tr.Lines(ctx, lines) {
		if err != nil {
			return nil, fmt.Errorf("branch %s: %w", tr.Ref(), err)
		}
		s.Lines = append(s.Lines, e.Raw)
	}
	if len(s.Lines) != len(lines)+1 {
		return nil, fmt.Errorf("branch %s: read %d of %d lines: %w", tr.Ref(), len(s.Lines)-1, len(lines), bs.ErrChanged)
	}
	return s, nil
}
