package main

import bs "github.com/brainsurgeon/brainsurgeon"

// storeLocation returns where store keeps ref's session (its transcript
// file, or the database that keeps it), to show people; empty when the
// store does not say.
func storeLocation(store bs.Store, ref bs.SessionRef) string {
	if l, ok := store.(interface{ Location(bs.SessionRef) string }); ok {
		return l.Location(ref)
	}
	return ""
}

// transcriptLocation returns where tr's session is stored, to show
// people; empty when the transcript does not say.
func transcriptLocation(tr bs.Transcript) string {
	if l, ok := tr.(interface{ Location() string }); ok {
		return l.Location()
	}
	return ""
}
