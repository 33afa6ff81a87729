package restore

import bs "github.com/brainsurgeon/brainsurgeon"

// locator is implemented by stores that say where a session is stored,
// for people (session.Store, the SQLite store, backend.Multi).
type locator interface {
	Location(ref bs.SessionRef) string
}

// location returns where store keeps ref's session, for people; empty
// when the store does not say.
func location(store any, ref bs.SessionRef) string {
	if l, ok := store.(locator); ok {
		return l.Location(ref)
	}
	return ""
}
