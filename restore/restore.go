package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// Suggestion is the guidance given when an entry that was restored before is
// restored again: the entry still carries "_restored", so the agent is told
// how to keep it for good.
const Suggestion = "This entry was previously restored. If you need to keep this content long-term, consider setting _extractable: false on the entry."

// MissingText is the content returned for a value whose side file is gone
// (retention deleted it); the placeholder stays in the transcript.
const MissingText = "[Content unavailable - extracted file missing]"

// CorruptText returns the content returned for a value whose side file
// cannot be trusted.
func CorruptText(reason string) string {
	return "[Content unavailable - extracted file corrupt: " + reason + "]"
}

// Restorer restores extracted values (extract then restore gives back the
// original value bytes), redacts restore calls, sets "_extractable" and
// undoes everything BrainSurgeon did to a transcript, byte for byte. It
// reaches transcripts and side values only through the root interfaces, so
// it works on every backend.
//
// Store and Side are required; StateDir is required for the durable queue
// and the audit log (config.StateDir computes it from an agents dir). A
// Restorer is safe for concurrent use; write-backs to one session are
// serialised, different sessions proceed in parallel.
type Restorer struct {
	// Store reads and writes transcripts under its host-safety protocol
	// (docs/ARCHITECTURE.md, "Host safety").
	Store bs.Store
	// Side holds the extracted values and restore's own bookkeeping.
	Side bs.SideStore
	// Policy is the extraction policy GetContext counts extractable
	// entries with; its KeepAfterRestore gives the protection window it
	// reports.
	Policy extract.Policy
	// KeepPurgeControlCalls keeps restore calls verbatim instead of
	// redacting them (config keep_purge_control_calls).
	KeepPurgeControlCalls bool
	// StateDir is BrainSurgeon's state dir ("<agents dir>/../.brainsurgeon").
	StateDir string
	// QueueDir holds pending write-backs; default "<StateDir>/pending".
	QueueDir string
	// AuditPath is the audit log; default "<StateDir>/audit.jsonl".
	AuditPath string
	// Logger receives a debug record per restore (entry id, keys restored,
	// sizes in bytes, whether the call was redacted, session) and warnings;
	// nil discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// Restores, when not nil, is the log of the values the agent
	// restored by any path (see bs.RestoreLog): every Restore and Source
	// that returns a value records it there, so that the extraction pass,
	// retention and the context engine's view protect the value for the
	// policy's KeepAfterRestore even while its write-back is queued (or,
	// for a value stored at the source, never made); GetContext reports
	// that protection. A failure to record is logged, never the
	// restore's error. Nil records nothing (as before the log).
	Restores bs.RestoreLog

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// New returns a Restorer over a store and a side store, with its state in
// stateDir and extract.DefaultPolicy.
func New(store bs.Store, side bs.SideStore, stateDir string) *Restorer {
	return &Restorer{Store: store, Side: side, StateDir: stateDir, Policy: extract.DefaultPolicy()}
}

// lock returns the mutex that serialises write-backs of one session.
func (r *Restorer) lock(ref bs.SessionRef) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}
	m := r.locks[ref.Identity()]
	if m == nil {
		m = &sync.Mutex{}
		r.locks[ref.Identity()] = m
	}
	return m
}

func (r *Restorer) ready() error {
	if r == nil {
		return fmt.Errorf("restore: no Restorer (nil; restore.New makes one from backend.Open's Set): %w", bs.ErrInvalid)
	}
	if r.Store == nil || r.Side == nil {
		return fmt.Errorf("restore: the Restorer needs a Store and a Side store: %w", bs.ErrInvalid)
	}
	return nil
}

func (r *Restorer) log() bs.Logger { return bs.LoggerOrDiscard(r.Logger) }

func (r *Restorer) queueDir() string {
	if r.QueueDir != "" {
		return r.QueueDir
	}
	if r.StateDir != "" {
		return filepath.Join(r.StateDir, "pending")
	}
	return ""
}

func (r *Restorer) auditPath() string {
	if r.AuditPath != "" {
		return r.AuditPath
	}
	if r.StateDir != "" {
		return audit.Path(r.StateDir)
	}
	return ""
}

// RestoreOptions tune one Restore.
type RestoreOptions struct {
	// ToolCallID is the id of the tool call that asked for the restore,
	// when the caller knows it; that call is redacted. Without it the
	// latest call naming the entry is (see the package documentation).
	ToolCallID string
	// NoWriteBack returns the values without writing them back or
	// queuing a write-back (a server in read-only mode): the result says
	// neither Applied nor Queued.
	NoWriteBack bool
}

// Result is the answer to a restore request.
type Result struct {
	// Restored is true when at least one value was found, verified and
	// returned in Content.
	Restored bool `json:"restored"`
	// EntryID is the entry restored.
	EntryID string `json:"entry_id"`
	// KeysRestored are the JSON Pointers of the values returned.
	KeysRestored []string `json:"keys_restored"`
	// SizesBytes are their sizes (original JSON bytes).
	SizesBytes map[string]int `json:"sizes_bytes"`
	// PreviousRestoredAt is the entry's "_restored" time (as written in
	// the entry) or the time of a restore of the entry still queued, when
	// the entry was restored before.
	PreviousRestoredAt string `json:"previous_restored_at,omitempty"`
	// Suggestion is set when the entry was restored before.
	Suggestion string `json:"suggestion,omitempty"`
	// Applied is true when the values were written back into the
	// transcript now; Queued when the write-back waits for the session to
	// be idle (ApplyPending).
	Applied bool `json:"applied"`
	Queued  bool `json:"queued"`
	// Redacted is true when the write-back redacted the restore call.
	Redacted bool `json:"redacted"`
	// Content maps each key in KeysRestored to the value: the text of a
	// string, the JSON of a block. Values that could not be restored map
	// to MissingText or CorruptText.
	Content map[string]string `json:"content"`
	// NotWrittenBack lists the keys (among KeysRestored) whose value is
	// returned in Content but that the store does not accept back in the
	// transcript (EditChecker: OpenClaw's SQLite store refuses edits its
	// search index or projections would notice); Warning says why. Their
	// placeholders stay and the values stay in the side store.
	NotWrittenBack []string `json:"not_written_back,omitempty"`
	// Warning says what could not be restored or written, if anything.
	Warning string `json:"warning,omitempty"`
	// AlreadyRestored is true when every selected value was already back
	// in the transcript: Content then holds their current text, Restored
	// is true, nothing is written and Note says so. A restore that is
	// asked again (an agent retrying) gets the content, not an error.
	AlreadyRestored bool `json:"already_restored,omitempty"`
	// Note is a human line about the result ("already restored at …").
	Note string `json:"note,omitempty"`
	// EntryContent is, for a tool result, the entry's "message.content"
	// with every value of KeysRestored in place, exactly as it was before
	// extraction (the bytes of the transcript with the stored bytes
	// spliced in), when every key restored lies in it and the content
	// then holds none of the entry's own placeholders; nil otherwise. It is what the
	// context engine's view shows of the entry once it is restored, so a
	// caller answering with it answers as the engine's own restore does.
	EntryContent json.RawMessage `json:"-"`
}

// OnlyMissing reports whether nothing was restored only because side files
// are gone (retention may remove them): that counts as success with a
// warning, unlike a corrupt side file.
func (res *Result) OnlyMissing() bool {
	if res.Restored || len(res.Content) == 0 {
		return false
	}
	for _, v := range res.Content {
		if v != MissingText {
			return false
		}
	}
	return true
}

// Keys returns the keys of Content in the order they are shown: the
// restored ones (KeysRestored order), then those that could not be
// restored, sorted.
func (res *Result) Keys() []string {
	keys := append([]string(nil), res.KeysRestored...)
	var rest []string
	for k := range res.Content {
		if _, ok := res.SizesBytes[k]; !ok {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// Text returns the content as one text: the value itself for a single
// key, else each value under a "## <key>" heading, in Keys order.
func (res *Result) Text() string {
	keys := res.Keys()
	if len(keys) == 1 {
		return res.Content[keys[0]]
	}
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## " + k + "\n")
		b.WriteString(res.Content[k])
	}
	return b.String()
}

func newResult(id string) *Result {
	return &Result{EntryID: id, KeysRestored: []string{}, SizesBytes: map[string]int{}, Content: map[string]string{}}
}

// Restore returns the extracted values of an entry at once and writes them
// back into the transcript: now when the session is idle, else through the
// durable queue, which the daemon and the next prune apply once the session
// is idle: the agent asks in the middle of its own run, when the transcript
// must not be rewritten.
//
// keys select values (MatchKey; a key may list several separated by
// commas, as the skill's "content,output"); none selects all. Keys that
// match nothing are an error when no key matches, else a Warning. Only
// values whose
// current bytes are still their placeholder are restored. The write-back
// puts the original bytes back, sets "_restored" and, unless
// KeepPurgeControlCalls, redacts the restore call and its result.
//
// Restore is idempotent: when every selected value is already back in the
// transcript, the result holds their current content with AlreadyRestored
// and a Note, and nothing is written.
//
// Errors: a bad entry id or key wraps ErrInvalid; an unknown session,
// entry or key, and an entry that was never extracted, wrap ErrNotFound
// and say what exists. A missing or corrupt side file is not an error: the
// result carries MissingText or CorruptText, Restored false for those
// values and a Warning, and a corrupt file is written to the audit log.
// When the content is ready but the write-back fails for a reason other
// than a busy session, Restore returns the result and the error.
func (r *Restorer) Restore(ctx context.Context, ref bs.SessionRef, entryID string, keys []string, opts RestoreOptions) (*Result, error) {
	if err := r.ready(); err != nil {
		return nil, err
	}
	if err := bs.IDEntry.Check(entryID); err != nil {
		return nil, err
	}
	keys = SplitKeys(keys)
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	if opts.ToolCallID != "" && (len(opts.ToolCallID) > 256 || strings.ContainsAny(opts.ToolCallID, "\x00\n")) {
		return nil, fmt.Errorf("tool call id %.40q: %w", opts.ToolCallID, bs.ErrInvalid)
	}
	f := scanFilter{ids: map[string]bool{entryID: true}, callIDs: map[string]bool{}}
	if opts.ToolCallID != "" {
		f.callIDs[opts.ToolCallID] = true
	}
	snap, err := r.scan(ctx, ref, f)
	if err != nil {
		return nil, err
	}
	ref = snap.ref
	e, ok := snap.entry(entryID)
	if !ok {
		return nil, r.missingEntry(ctx, ref, entryID)
	}
	res := newResult(entryID)
	log := r.log()
	recPath := "side record " + entryID
	rec, err := extract.LoadRecord(ctx, r.Side, ref, entryID)
	if err != nil {
		holders := placeholderPointers(e)
		switch {
		case errors.Is(err, bs.ErrNotFound) && len(holders) == 0:
			if key := heldSourceKey(e); key != "" {
				return nil, fmt.Errorf("entry %s: its tool result is stored under %s: expected that key (the id in its placeholder [[extracted-%s]]): %w", entryID, key, key, bs.ErrNotFound)
			}
			return nil, fmt.Errorf("entry %s: nothing to restore (it was never extracted): %w", entryID, bs.ErrNotFound)
		case errors.Is(err, bs.ErrNotFound):
			for _, p := range holders {
				res.Content[p] = MissingText
			}
			res.Warning = fmt.Sprintf("entry %s: the side file is missing (retention may have removed it); the placeholder stays", entryID)
			log.Warn(res.Warning, "session", ref.String(), "entry_id", entryID)
			return res, nil
		case errors.Is(err, bs.ErrCorrupt) && len(holders) > 0:
			for _, p := range holders {
				res.Content[p] = CorruptText(reason(err))
			}
			res.Warning = fmt.Sprintf("entry %s: the side file is corrupt: %v; the placeholder stays", entryID, err)
			log.Warn(res.Warning, "session", ref.String(), "entry_id", entryID)
			r.audit(ref, "restore_corrupt", entryID, recPath, err)
			return res, nil
		case errors.Is(err, bs.ErrCorrupt):
			return nil, fmt.Errorf("entry %s: nothing to restore (no placeholder in the entry; its side file is corrupt: %v): %w", entryID, err, bs.ErrNotFound)
		}
		return nil, err
	}
	if len(rec.Values) == 0 && len(placeholderPointers(e)) == 0 {
		return nil, fmt.Errorf("entry %s: nothing to restore (it was never extracted): %w", entryID, bs.ErrNotFound)
	}
	sel, unknown := selectValues(rec.Values, keys)
	if len(unknown) > 0 && len(sel) == 0 {
		return nil, unknownKeys(entryID, unknown, rec.Values)
	}
	var warnings []string
	for _, v := range sel {
		s, en, ok := jsonedit.Find(e.Raw, v.Path)
		if !ok || !holdsPlaceholder(v, e.Raw[s:en]) {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			res.Content[v.Path] = CorruptText(reason(err))
			warnings = append(warnings, fmt.Sprintf("%s: %v", v.Path, err))
			r.audit(ref, "restore_corrupt", entryID, recPath, err)
			continue
		}
		res.KeysRestored = append(res.KeysRestored, v.Path)
		res.SizesBytes[v.Path] = len(orig)
		res.Content[v.Path] = contentOf(v, orig)
	}
	if len(warnings) > 0 {
		res.Warning = fmt.Sprintf("entry %s: side file corrupt, placeholder kept for %s", entryID, strings.Join(warnings, "; "))
		log.Warn(res.Warning, "session", ref.String(), "entry_id", entryID)
	}
	if len(unknown) > 0 {
		if res.Warning != "" {
			res.Warning += "; "
		}
		res.Warning += unknownKeys(entryID, unknown, rec.Values).Error()
	}
	if len(res.KeysRestored) == 0 && len(res.Content) == 0 {
		if alreadyRestored(res, e, sel, r.queuedAt(ref, entryID)); len(res.KeysRestored) > 0 {
			res.EntryContent = entryContent(e, rec, res.KeysRestored)
			r.record(ctx, ref, entryID)
			return res, nil
		}
		return nil, fmt.Errorf("entry %s: nothing to restore: the selected values are not in the entry any more: %w", entryID, bs.ErrNotFound)
	}
	res.Restored = len(res.KeysRestored) > 0
	if res.Restored {
		res.EntryContent = entryContent(e, rec, res.KeysRestored)
		r.record(ctx, ref, entryID)
	}
	res.PreviousRestoredAt = restoredAt(e)
	if res.PreviousRestoredAt == "" {
		res.PreviousRestoredAt = r.queuedAt(ref, entryID)
	}
	if res.PreviousRestoredAt != "" && res.Restored {
		res.Suggestion = Suggestion
	}
	if !res.Restored || opts.NoWriteBack {
		return res, nil
	}
	if refused := r.refusedOf(ctx, ref, snap, e, sel); len(refused) > 0 {
		var why []string
		for _, f := range refused {
			res.NotWrittenBack = append(res.NotWrittenBack, f.Key)
			why = append(why, f.Key+": "+f.Reason)
		}
		if res.Warning != "" {
			res.Warning += "; "
		}
		res.Warning += fmt.Sprintf("entry %s: not written back, the store does not accept it (%s); the value stays in the side store", entryID, strings.Join(why, "; "))
		log.Warn(res.Warning, "session", ref.String(), "entry_id", entryID)
		if len(refused) == len(res.KeysRestored) {
			return res, nil // nothing the store takes: nothing to write or queue
		}
	}
	req := r.newRequest(KindRestore, ref, entryID)
	req.Keys, req.ToolCallID = keys, opts.ToolCallID
	werr := r.deliver(ctx, ref, req, snap, func(o outcome) {
		res.Applied, res.Redacted = true, o.redacted
	})
	if werr == nil && !res.Applied {
		res.Queued = true
	}
	log.Debug("restored", "module", "extraction", "entry_id", entryID, "keys_restored", res.KeysRestored,
		"sizes_bytes", res.SizesBytes, "redacted", res.Redacted, "session", ref.String(),
		"applied", res.Applied, "queued", res.Queued)
	if werr != nil {
		if res.Warning != "" {
			res.Warning += "; "
		}
		res.Warning += "write-back failed: " + werr.Error()
		return res, fmt.Errorf("restore %s in %s: write-back: %w", entryID, ref, werr)
	}
	return res, nil
}

// record notes in the Restorer's log (Restores) that the agent restored
// key (an entry id or a source key) of ref now. A failure is logged.
func (r *Restorer) record(ctx context.Context, ref bs.SessionRef, key string) {
	if err := bs.RecordRestoreIn(ctx, r.Restores, ref, key, bs.Now(r.Clock)); err != nil {
		r.log().Warn("the restore is not recorded in the restore log: the value may be extracted again within keep_after_restore_seconds",
			"session", ref.String(), "entry_id", key, "err", err)
	}
}

// entryContent returns the "message.content" of e, a tool result, with
// the values of rec at keys put back (PutBack), when every key lies in it
// and the result holds none of e's own placeholders; nil otherwise (and
// for any other entry: an assistant's content holds its thinking's
// signatures and its tool calls, not values for the model to read).
func entryContent(e *bs.Entry, rec *extract.Record, keys []string) json.RawMessage {
	if len(keys) == 0 || e.Role != "toolResult" {
		return nil
	}
	for _, k := range keys {
		if k != extract.SourceContentPath && !strings.HasPrefix(k, extract.SourceContentPath+"/") {
			return nil
		}
	}
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	sub := &extract.Record{EntryID: rec.EntryID}
	for _, v := range rec.Values {
		if want[v.Path] {
			sub.Values = append(sub.Values, v)
		}
	}
	line, _, err := PutBack(e.Raw, sub)
	if err != nil {
		return nil
	}
	a, b, ok := jsonedit.Find(line, extract.SourceContentPath)
	if !ok || extract.HoldsOwnPlaceholder(line[a:b], e) {
		return nil
	}
	return json.RawMessage(line[a:b])
}

// refusedOf returns the values of sel that Restore returns but the store
// does not accept back in entry e (EditChecker), as the write-back's
// planner will find them.
func (r *Restorer) refusedOf(ctx context.Context, ref bs.SessionRef, snap *snapshot, e *bs.Entry, sel []extract.StoredValue) []Refusal {
	if _, ok := r.Store.(EditChecker); !ok {
		return nil
	}
	p := r.newPlanner(ctx, ref, snap, false)
	le := p.line(e)
	for _, v := range sel {
		cur, ok := le.value(v.Path)
		if !ok || !holdsPlaceholder(v, cur) {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			continue
		}
		if err := p.accepts(le, v.Path, orig); err != nil {
			p.refuse(le, v, err)
			continue
		}
		le.replace(v.Path, orig)
	}
	return p.refused
}

// deliver applies a request now when the session is idle, else queues it.
// done is called with the outcome when it was applied; a nil error
// without a call to done means queued.
func (r *Restorer) deliver(ctx context.Context, ref bs.SessionRef, req *PendingRequest, snap *snapshot, done func(outcome)) error {
	err := r.Store.CheckIdle(ctx, ref)
	if err == nil {
		var outs []outcome
		outs, err = r.writeBack(ctx, ref, []*PendingRequest{req}, snap, false)
		if err == nil {
			done(outs[0])
			return nil
		}
	}
	if !busy(err) {
		return err
	}
	r.log().Debug("session busy, write-back queued", "session", ref.String(), "entry_id", req.EntryID, "kind", req.Kind, "reason", err.Error())
	return r.enqueue(ref, req)
}

// alreadyRestored fills res for an entry whose selected values sel are all
// back in the transcript: their current content, and a note that says when
// they came back.
func alreadyRestored(res *Result, e *bs.Entry, sel []extract.StoredValue, queued string) {
	for _, v := range sel {
		s, en, ok := jsonedit.Find(e.Raw, v.Path)
		if !ok {
			continue
		}
		cur := e.Raw[s:en]
		res.KeysRestored = append(res.KeysRestored, v.Path)
		res.SizesBytes[v.Path] = len(cur)
		res.Content[v.Path] = contentOf(v, cur)
	}
	res.Restored, res.AlreadyRestored = true, true
	res.PreviousRestoredAt = restoredAt(e)
	if res.PreviousRestoredAt == "" {
		res.PreviousRestoredAt = queued
	}
	res.Note = fmt.Sprintf("entry %s: already restored", res.EntryID)
	if res.PreviousRestoredAt != "" {
		res.Note += " at " + res.PreviousRestoredAt
	}
	res.Note += "; this is its current content, nothing was written"
}

// contentOf decodes a restored value for the caller: the text of a
// string, the JSON of anything else.
func contentOf(v extract.StoredValue, orig []byte) string {
	if !v.Block && len(orig) > 0 && orig[0] == '"' {
		return decodeString(orig)
	}
	return string(orig)
}

// reason shortens an error for CorruptText.
func reason(err error) string {
	s := err.Error()
	s = strings.TrimSuffix(s, ": "+bs.ErrCorrupt.Error())
	return s
}

// placeholderPointers returns the pointers of the entry's string values
// that are its placeholder: exactly "[[extracted-<id>]]", or a preview
// ending with "… " and it (a string merely quoting it does not count).
func placeholderPointers(e *bs.Entry) []string {
	var out []string
	for _, v := range e.Strings {
		raw := e.Raw[v.Start:v.End]
		if extract.IsPlaceholderValue(raw, e.ID) && isPlaceholderText(stringText(raw), e.ID) {
			out = append(out, v.Pointer)
		}
	}
	return out
}

// restoredAt returns the entry's "_restored" value as written.
func restoredAt(e *bs.Entry) string {
	s, en, ok := jsonedit.Find(e.Raw, "/_restored")
	if !ok {
		return ""
	}
	return decodeString(e.Raw[s:en])
}
