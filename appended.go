package brainsurgeon

import (
	"context"
	"fmt"
)

// AppendReader is implemented by a store that can read what was appended
// to a transcript after a version it returned, without reading the rest:
// the context engine follows a session model call by model call with it.
// It is optional; callers reach it through ReadAppended.
type AppendReader interface {
	// ReadAppended returns the entry lines the store appended to the
	// session after base, a Version of this session that the store
	// returned (Transcript.Version, or an earlier ReadAppended) and whose
	// content is lines lines long. Each entry is fully parsed as
	// Transcript.Entry returns it, with Line numbered on from lines+1 and
	// Offset as Open sets it, and is the caller's to keep. It also returns
	// the version the transcript has with them: a later call passes it as
	// base. When nothing was appended it returns no entries and a version
	// equal to base.
	//
	// The error wraps ErrChanged when the session is not base's content
	// followed by whole new lines (rewritten, truncated, replaced, a line
	// of base completed later), and ErrInvalid when base is not a version
	// of this store; the caller then reads the whole session with Open.
	ReadAppended(ctx context.Context, ref SessionRef, base Version, lines int) ([]*Entry, Version, error)
}

// ReadAppended calls s.ReadAppended when s is an AppendReader; otherwise
// it returns an error wrapping ErrUnsupported, and the caller reads the
// whole session with Open.
func ReadAppended(ctx context.Context, s Store, ref SessionRef, base Version, lines int) ([]*Entry, Version, error) {
	ar, ok := s.(AppendReader)
	if !ok {
		return nil, Version{}, fmt.Errorf("read what was appended to %s: the %s store cannot: %w", ref, s.Name(), ErrUnsupported)
	}
	return ar.ReadAppended(ctx, ref, base, lines)
}
