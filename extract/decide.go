package extract

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
)

// Policy is what decides extraction: the relevant part of the runtime
// config. The zero value extracts nothing (Enabled is false).
type Policy struct {
	// Enabled is the master switch.
	Enabled bool
	// KeepRecent is how many of the newest messages on the active path
	// are never extracted.
	KeepRecent int
	// MinValueLength is the minimum length of a value, in bytes of its
	// stored JSON text without the quotes (escapes count as written); an
	// image block counts whole.
	MinValueLength int
	// Triggers are the trigger types to extract.
	Triggers []bs.TriggerType
	// AgeThreshold protects entries younger than it; 0 turns age
	// protection off.
	AgeThreshold time.Duration
	// KeepAfterRestore protects a restored entry for this long after its
	// "_restored" time, or after the restore a bs.RestoreLog recorded
	// (Extractor.Restores, WithRestores), whichever is newer.
	KeepAfterRestore time.Duration
	// PreviewChars, when positive, keeps that many characters of a string
	// value in front of its placeholder.
	PreviewChars int
	// MinSavingTokens is the minimum saving (in tokens, bytes / 4) for a
	// pass to write anything.
	MinSavingTokens int
	// ProtectRecentTokens, when positive, protects the newest messages on
	// the active path whose lines together hold this many tokens (counted
	// from their size with the Extractor's Tokenizer), as KeepRecent does
	// by count: the compaction's prune layer protects the most recent
	// tokens of the context this way. It is not part of the runtime config.
	ProtectRecentTokens int
	// NoReasons leaves Decision.Reason empty: building the sentence is a
	// third of Decide's cost, and a pass whose debug log is off never
	// shows it.
	NoReasons bool
	// ReuseStoredWithin lets a pass reuse side records that are younger
	// than it: when the side store already holds, in the newest record of
	// an entry, every value the pass would extract from it (same JSON
	// Pointer, sha256, size and placeholder, the stored bytes checked
	// against their hash), the record is not written again and the
	// transcript names it. This is what an earlier pass whose transcript
	// write failed leaves, so a session whose write keeps failing does not
	// get a new pack on every retry. The bound keeps
	// retention from deleting a reused value much sooner than a fresh
	// one: FromConfig sets a quarter of the config's retention. Zero (or
	// less) stores every value again.
	ReuseStoredWithin time.Duration
}

// DefaultPolicy returns the default policy (trigger types thinking and
// tool_result, values of 500 bytes or more, the newest 3 messages kept,
// entries younger than 24 hours kept, a restored entry kept for 600 seconds,
// a saving of at least 2000 tokens) with Enabled set (the config's own
// default for Enabled is false), and reuses side records for a quarter of
// the default retention (24h).
func DefaultPolicy() Policy {
	return Policy{
		Enabled: true, KeepRecent: 3, MinValueLength: 500,
		Triggers:          []bs.TriggerType{bs.TriggerThinking, bs.TriggerToolResult},
		AgeThreshold:      24 * time.Hour,
		KeepAfterRestore:  600 * time.Second,
		MinSavingTokens:   2000,
		ReuseStoredWithin: 6 * time.Hour,
	}
}

func (p Policy) has(t bs.TriggerType) bool {
	for _, x := range p.Triggers {
		if x == t {
			return true
		}
	}
	return false
}

// Code names the outcome of a decision.
type Code string

// Decision codes.
const (
	CodeExtract          Code = "extract"
	CodeForced           Code = "forced"
	CodeDisabled         Code = "disabled"
	CodeNoID             Code = "no_id"
	CodeBadID            Code = "unsafe_id"
	CodeNotEntry         Code = "not_an_entry"
	CodeNever            Code = "extractable_false"
	CodeNothing          Code = "nothing_extractable"
	CodeAlreadyExtracted Code = "already_extracted"
	CodeTypeNotEnabled   Code = "type_not_enabled"
	CodeTooYoung         Code = "too_young"
	CodeRestoreProtected Code = "restore_protected"
	CodeTooRecent        Code = "too_recent"
	CodeTooShort         Code = "too_short"
	// CodeDuplicateID: another line of the transcript carries the same
	// entry id. Placeholders name the id and side records are kept by it,
	// so extracting either line could lose the other's values.
	CodeDuplicateID Code = "duplicate_id"
	// CodeNotEditable: the store does not accept edits of the entry's
	// values (the store's EditableValues: OpenClaw's SQLite store and
	// the values of a flat entry, for one); they stay in place. The
	// Extractor decides it, not Decide.
	CodeNotEditable Code = "not_editable"
)

// Decision is the outcome of Decide for one entry.
type Decision struct {
	// Extract is true when Candidates should be extracted now.
	Extract bool
	// Code names the reason; Reason is a human sentence of the form "Entry
	// 45: thinking, 48h old → EXTRACT".
	Code   Code
	Reason string
	// Type is the entry's detected trigger type ("" when none).
	Type bs.TriggerType
	// Candidates are the values to extract when Extract is true.
	Candidates []bs.Candidate
}

// Extractable is the parsed "_extractable" member of an entry.
type Extractable struct {
	// Set is false when the member is absent or not understood.
	Set bool
	// Force is true for `true`; Never for `false`; Window >= 0 for a number.
	Force, Never bool
	Window       int
}

// ParseExtractable reads a raw "_extractable" value.
func ParseExtractable(raw []byte) Extractable {
	s := string(bytes.TrimSpace(raw))
	switch s {
	case "":
		return Extractable{}
	case "true":
		return Extractable{Set: true, Force: true}
	case "false":
		return Extractable{Set: true, Never: true}
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 && n < 1e9 {
		return Extractable{Set: true, Window: int(n)}
	}
	return Extractable{}
}

// Decide tells whether an entry should be extracted now, and which values.
// position is the entry's message position from the end of the active path
// (0 = newest, see session.Transcript.MessagePositions), or -1 for an
// entry that is not a message on the active path (treated as old).
//
// The rules, in order: disabled; no id; `_extractable: false`; no
// extractable values; values already holding this entry's placeholder are
// skipped; type not in the triggers (ignored when forced); younger than the
// age threshold; restored within KeepAfterRestore (ignored when forced);
// within the keep window (KeepRecent, or the entry's own `_extractable: N`;
// applies when forced too); shorter than MinValueLength (ignored when
// forced).
func Decide(e *bs.Entry, position int, p Policy, now time.Time) Decision {
	d := Decision{}
	label := func() string {
		if e.ID == "" {
			return fmt.Sprintf("Entry at line %d", e.Line)
		}
		return "Entry " + e.ID
	}
	no := func(c Code, why string) Decision {
		d.Code = c
		if !p.NoReasons {
			d.Reason = fmt.Sprintf("%s: %s → KEEP (%s)", label(), describe(d.Type, e, now), why)
		}
		return d
	}
	if e.Kind != bs.KindEntry {
		return no(CodeNotEntry, "not an entry line")
	}
	all := entry.Classify(e)
	ext := ParseExtractable(e.Extractable)
	if ext.Force && len(all) == 0 {
		all = forcedCandidates(e)
	}
	if len(all) > 0 {
		d.Type = all[0].Trigger
	} else if t := entry.FlatTrigger(e); t != "" {
		d.Type = t
	}
	if !p.Enabled {
		return no(CodeDisabled, "smart pruning disabled")
	}
	if e.ID == "" {
		return no(CodeNoID, "no __id or id")
	}
	if err := bs.IDEntry.Check(e.ID); err != nil {
		return no(CodeBadID, err.Error())
	}
	if ext.Never {
		return no(CodeNever, "_extractable: false")
	}
	if len(all) == 0 {
		return no(CodeNothing, "no extractable values")
	}
	// all is ours (Classify and forcedCandidates make it): filtered in
	// place, three times.
	fresh := all[:0:len(all)]
	for _, c := range all {
		if !HoldsOwnPlaceholder(e.Raw[c.Start:c.End], e) {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) == 0 {
		return no(CodeAlreadyExtracted, "already extracted")
	}
	if !ext.Force {
		typed := fresh[:0]
		for _, c := range fresh {
			if p.has(c.Trigger) {
				typed = append(typed, c)
			}
		}
		if len(typed) == 0 {
			why := ""
			if !p.NoReasons {
				why = fmt.Sprintf("type %s not in trigger_types", d.Type)
			}
			return no(CodeTypeNotEnabled, why)
		}
		fresh = typed
		d.Type = fresh[0].Trigger
	}
	if p.AgeThreshold > 0 {
		age, known := entryAge(e, position, now)
		if age < p.AgeThreshold {
			why := ""
			if !p.NoReasons {
				why = fmt.Sprintf("younger than %s", p.AgeThreshold)
				if !known {
					why += ", age estimated from position"
				}
			}
			return no(CodeTooYoung, why)
		}
	}
	if !ext.Force && !e.Restored.IsZero() && now.Sub(e.Restored) < p.KeepAfterRestore {
		return no(CodeRestoreProtected, fmt.Sprintf("restored %s ago, protected for %s", round(now.Sub(e.Restored)), p.KeepAfterRestore))
	}
	window := p.KeepRecent
	if ext.Set && !ext.Force && !ext.Never {
		window = ext.Window
	}
	if position >= 0 && position < window {
		why := ""
		if !p.NoReasons {
			why = fmt.Sprintf("message %d from the end, keep_recent %d", position, window)
		}
		return no(CodeTooRecent, why)
	}
	if !ext.Force {
		long := fresh[:0]
		for _, c := range fresh {
			if valueLength(c) >= p.MinValueLength {
				long = append(long, c)
			}
		}
		if len(long) == 0 {
			why := ""
			if !p.NoReasons {
				why = fmt.Sprintf("no value of %d bytes or more", p.MinValueLength)
			}
			return no(CodeTooShort, why)
		}
		fresh = long
	}
	d.Extract, d.Candidates, d.Code = true, fresh, CodeExtract
	verdict := "EXTRACT"
	if ext.Force {
		d.Code, verdict = CodeForced, "EXTRACT (forced by _extractable: true)"
	}
	if !p.NoReasons {
		d.Reason = fmt.Sprintf("%s: %s → %s", label(), describe(d.Type, e, now), verdict)
	}
	return d
}

// valueLength is a candidate's length as the policy measures it: the bytes
// of its JSON text, without the quotes of a string.
func valueLength(c bs.Candidate) int {
	if c.Block {
		return c.Len()
	}
	return c.Len() - 2
}

// entryAge returns the entry's age from its timestamp, or, when it has none,
// an estimate of one minute per message from the end.
func entryAge(e *bs.Entry, position int, now time.Time) (time.Duration, bool) {
	if !e.Timestamp.IsZero() {
		return now.Sub(e.Timestamp), true
	}
	if position < 0 {
		position = 1 << 20
	}
	return time.Duration(position) * time.Minute, false
}

func describe(t bs.TriggerType, e *bs.Entry, now time.Time) string {
	kind := string(t)
	if kind == "" {
		kind = e.Type
		if kind == "" {
			kind = "entry"
		}
	}
	if e.Timestamp.IsZero() {
		return kind + ", age unknown"
	}
	return fmt.Sprintf("%s, %s old", kind, round(now.Sub(e.Timestamp)))
}

func round(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

// forcedCandidates returns, for an entry forced with `_extractable: true`
// that Classify finds nothing in, every string value that is not part of
// the envelope: top-level members other than ids, links, type tags and
// "_"-prefixed bookkeeping, and inside "message" everything but role,
// toolCallId, toolName, usage and the provider metadata.
func forcedCandidates(e *bs.Entry) []bs.Candidate {
	var out []bs.Candidate
	for _, v := range e.Strings {
		parts := strings.Split(v.Pointer[1:], "/")
		top := parts[0]
		if bs.IsStructuralKey(top) {
			continue
		}
		if top == "message" && len(parts) > 1 && bs.IsMessageEnvelopeKey(parts[1]) {
			continue
		}
		if len(parts) > 2 && parts[len(parts)-1] == "type" {
			continue
		}
		out = append(out, bs.Candidate{Value: v, Trigger: bs.TriggerAssistant})
	}
	return out
}

// WithRestores returns e as Decide must see it given logged, the restore
// times a bs.RestoreLog holds for its session (keyed by entry id, or by
// the source key "tc-<toolCallId>" of a tool result stored at the
// source): e itself when logged holds nothing newer than its "_restored"
// time, else a shallow copy whose Restored is the newest of them. So an
// entry the agent restored by any path is restore-protected alike.
func WithRestores(e *bs.Entry, logged map[string]time.Time) *bs.Entry {
	return withRestores(e, logged, hasSourceKeys(logged))
}

// withRestores is WithRestores with sources, whether logged holds a
// source key, known: a pass computes it once, not once a line.
func withRestores(e *bs.Entry, logged map[string]time.Time, sources bool) *bs.Entry {
	if e == nil || len(logged) == 0 {
		return e
	}
	at := e.Restored
	if t, ok := logged[e.ID]; ok && e.ID != "" && t.After(at) {
		at = t
	}
	if e.Role == "toolResult" && sources {
		for _, k := range OwnKeys(e) {
			if t, ok := logged[k]; ok && k != e.ID && t.After(at) {
				at = t
			}
		}
	}
	if !at.After(e.Restored) {
		return e
	}
	cp := *e
	cp.Restored = at
	return &cp
}

// hasSourceKeys reports whether logged holds a source key ("tc-…").
func hasSourceKeys(logged map[string]time.Time) bool {
	for k := range logged {
		if IsSourceKey(k) {
			return true
		}
	}
	return false
}
