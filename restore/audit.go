package restore

import (
	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
)

// audit records an event in the Restorer's audit log; a failure is only
// logged.
func (r *Restorer) audit(ref bs.SessionRef, action, entryID, path string, cause error) {
	ev := audit.Event{Time: bs.Now(r.Clock).UTC(), Action: action, Session: ref.String(), Entry: entryID, Path: path}
	if cause != nil {
		ev.Error = cause.Error()
	}
	if err := audit.Append(r.auditPath(), ev); err != nil {
		r.log().Warn("audit event not written", "action", action, "entry_id", entryID, "error", err.Error())
	}
}
