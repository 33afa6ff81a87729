// Package audit is BrainSurgeon's audit log: one JSON line per step that
// changed a session, its side data or the trash, appended to
// "<state dir>/audit.jsonl" ([Path]).
//
// Every writer appends through [Append]: restore ("restore_corrupt" and
// the repairs), the trash ("delete", "delete_extracted", "collect",
// "trash_restore", "trash_purge", "trash_expire"), the API ("compact",
// "extract_source") and the daemon ("compact"). The log is created 0600
// in a 0700 directory, and each line is one write on an O_APPEND
// descriptor, so concurrent writers, in one process or several, never
// interleave.
//
// A line is an [Event] encoded with encoding/json:
//
//	{"time":"2026-02-20T17:30:00Z","action":"restore_corrupt","session":"main/S",
//	 "entry":"ab12cd34","path":"side record ab12cd34","error":"…"}
//
// The package knows no storage and no policy: it imports only the root
// package, so every policy package may write to it.
package audit
