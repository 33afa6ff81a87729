package brainsurgeon

import "context"

// explicitKey marks a context as carrying a write the user asked for.
type explicitKey struct{}

// ExplicitWrite returns a context that marks the writes made with it as
// asked for by the user just now (a manual compaction, for example). A
// store then skips its quiet period, the wait for the transcript to have
// been left alone for a while: that wait protects the
// provider's prompt cache from automatic edits, and a write the user asks
// for breaks the cache anyway. Everything that tells whether the host is
// using the session (its status, a live lock holder) still applies, and so
// does the host lock protocol.
func ExplicitWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, explicitKey{}, true)
}

// IsExplicitWrite reports whether ctx was made by ExplicitWrite.
func IsExplicitWrite(ctx context.Context) bool {
	v, _ := ctx.Value(explicitKey{}).(bool)
	return v
}
