package doctor

import (
	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/restore"
)

// The kinds of problems a diagnosis reports.
const (
	// KindMissingResult is a tool call on the active path that no tool
	// result answers before the next assistant message: providers reject
	// every later request.
	KindMissingResult = "missing_tool_result"
	// KindOrphanResult is a tool result on the active path whose call is
	// not in the assistant message before it (it is on another branch,
	// or nowhere): providers reject it.
	KindOrphanResult = "orphan_tool_result"
	// KindDisplacedResult is a tool result on the active path that
	// answers a call of an earlier assistant message but comes after
	// other messages (a user message, an assistant message without tool
	// calls) instead of right after the call's results: providers reject
	// it there; Fix moves it back by re-parenting.
	KindDisplacedResult = "displaced_tool_result"
	// KindMissingValue is a placeholder whose side value is missing or
	// unreadable.
	KindMissingValue = "placeholder_without_value"
	// KindPending is a restore write-back still queued for the session.
	KindPending = "pending_writeback"
	// KindMalformed is a line that is not a JSON object (kept as it is).
	KindMalformed = "malformed_line"
)

// The health of a session.
const (
	// HealthOK: nothing to report.
	HealthOK = "ok"
	// HealthWarn: something to look at that does not stop the session
	// (pending write-backs, malformed lines, placeholders without value).
	HealthWarn = "warn"
	// HealthBroken: the provider rejects the session's requests (unpaired
	// tool blocks on the active path).
	HealthBroken = "broken"
)

// OpFix names a repair in the journals and the audit log.
const OpFix = "doctor_fix"

// Problem is one finding of a diagnosis.
type Problem struct {
	// Kind is one of the Kind… constants.
	Kind string `json:"kind"`
	// Line is the 1-based line (row position) it is on; EntryID the
	// entry id there.
	Line    int    `json:"line,omitempty"`
	EntryID string `json:"entry_id,omitempty"`
	// ToolCallID and ToolName name the tool call of a tool-pair problem.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// OtherBranch is true for an orphan result whose call exists on
	// another branch of the tree.
	OtherBranch bool `json:"other_branch,omitempty"`
	// Detail says what is wrong, for people.
	Detail string `json:"detail"`
	// Fixable tells whether Fix repairs it; Fix says how (or, when not
	// fixable, why not).
	Fixable bool   `json:"fixable"`
	Fix     string `json:"fix,omitempty"`
}

// Report is the diagnosis of one session.
type Report struct {
	// Session is "agent/id"; Agent, SessionID and Backend name it.
	Session   string `json:"session"`
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Backend   string `json:"backend"`
	// Health is HealthOK, HealthWarn or HealthBroken.
	Health string `json:"health"`
	// Problems lists every finding, in line order.
	Problems []Problem `json:"problems"`
	// The counts per kind.
	MissingResults int `json:"missing_tool_results"`
	OrphanResults  int `json:"orphan_tool_results"`
	// DisplacedResults counts the displaced_tool_result problems.
	DisplacedResults int `json:"displaced_tool_results"`
	MissingValues    int `json:"placeholders_without_value"`
	Pending          int `json:"pending_writebacks"`
	Malformed        int `json:"malformed_lines"`
	// Fixable is true when Fix would change something; FixRefused, when
	// not empty, says why Fix cannot run on this session's store. It is
	// set only when the session has unpaired tool blocks (an ok session
	// of the SQLite store has none to refuse).
	Fixable    bool   `json:"fixable"`
	FixRefused string `json:"fix_refused,omitempty"`
	// Busy is true when the host was using the session during the
	// diagnosis (Store.CheckIdle said busy: a run in flight, its lock
	// held, or, unless ctx was made by bs.ExplicitWrite, a write within
	// the quiet period) and the tool calls of its last turn have no
	// result yet: they are then not judged (the turn may still be
	// running), and Health counts only what was judged. Callers show such
	// a session as busy, not as ok.
	Busy bool `json:"busy,omitempty"`
}

// FixResult is what Fix did.
type FixResult struct {
	// Before is the diagnosis Fix planned from; After the diagnosis of
	// the written transcript (nil when nothing was written).
	Before *Report `json:"before"`
	After  *Report `json:"after,omitempty"`
	// Inserted counts the synthetic tool results written; Detached the
	// orphan results taken off the active path (kept in the file); Moved
	// the displaced results moved back after their calls.
	Inserted int `json:"inserted_results"`
	Detached int `json:"detached_results"`
	Moved    int `json:"moved_results"`
	// Applied is true when the transcript was rewritten.
	Applied bool `json:"applied"`
	// Refused, when not empty, says why nothing was written.
	Refused string `json:"refused,omitempty"`
}

// Doctor diagnoses and repairs sessions of a store.
type Doctor struct {
	// Store holds the transcripts; Side the extracted values.
	Store bs.Store
	Side  bs.SideStore
	// Restorer knows the queued write-backs, journals repairs so that a
	// pristine restore takes them back, and writes the audit log.
	Restorer *restore.Restorer
	// Clock tells the time of a repair; nil is the system clock.
	Clock bs.Clock
	// Logger receives a record per repair; nil discards.
	Logger bs.Logger
	// Values says how a diagnosis checks the side values of the
	// placeholders: ValuesVerify (the zero value) reads and hashes every
	// value, ValuesListed only looks for the records in the side store's
	// listing.
	Values ValueCheck

	// queue, when queued, is the write-back queue read once by WithQueue.
	queue  []*restore.PendingRequest
	queued bool
}

// ValueCheck says how a diagnosis checks that the placeholders of a
// session still have their side values.
type ValueCheck int

const (
	// ValuesVerify runs restore.Verify: every value a placeholder points
	// to is read, decoded and checked against its sha256. It is what
	// brainsurgeon doctor and the session detail use.
	ValuesVerify ValueCheck = iota
	// ValuesListed checks only that the side store lists a record for
	// each placeholder's key (SideStore.List, one listing per session):
	// no value is read or hashed, so a record that is there but damaged
	// or lacks a value is not noticed. It is for views that diagnose many
	// sessions often (the sessions list, the scheduled report).
	ValuesListed
)

// WithQueue returns a copy of d that reads the restore write-back queue
// once, now, and gives every diagnosis it makes that snapshot instead of
// reading the queue again: for diagnosing many sessions in one go. When
// the queue cannot be read, the copy reads it for each diagnosis (which
// then reports the error).
func (d *Doctor) WithQueue() *Doctor {
	c := *d
	if d.Restorer == nil {
		return &c
	}
	if q, err := d.Restorer.Pending(); err == nil {
		c.queue, c.queued = q, true
	}
	return &c
}
