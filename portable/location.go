package portable

import bs "github.com/brainsurgeon/brainsurgeon"

// locationOf returns where tr's session is stored (its transcript file,
// or the database that keeps it), as the store's transcript says; empty
// when it does not say.
func locationOf(tr bs.Transcript) string {
	if l, ok := tr.(interface{ Location() string }); ok {
		return l.Location()
	}
	return ""
}
