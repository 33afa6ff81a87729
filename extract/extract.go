package extract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/internal/plural"
	"github.com/brainsurgeon/brainsurgeon/tokens"
)

// Extractor runs extraction passes over sessions. A pass reads a session
// once to decide, writes the side records of the values it moves out and
// makes them durable, then changes the transcript in one safe rewrite.
// It reaches transcripts and side values only through the root
// interfaces, so it works on every backend.
type Extractor struct {
	// Policy decides what is extracted.
	Policy Policy
	// Store reads and writes transcripts. Only the trigger types it
	// allows (Editable) are extracted, and of those only the values it
	// accepts (EditableValues; the others stay in place, decision
	// CodeNotEditable).
	Store bs.Store
	// Side keeps the extracted values.
	Side bs.SideStore
	// Tokenizer turns the bytes a pass would save into tokens for
	// MinSavingTokens; nil is brainsurgeon.CharsPer4.
	Tokenizer tokens.Tokenizer
	// Logger receives a debug record per decision and per extraction; nil
	// discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// DryRun decides and reports without writing anything.
	DryRun bool
	// Restores is the log of the values the agent restored by any path
	// (the context engine's view, a write-back still queued); nil means
	// none. An entry counts as restored at the newer of its "_restored"
	// time and the time the log holds for it (WithRestores), so that
	// Policy.KeepAfterRestore protects it either way. A log that keeps
	// nothing for the session (bs.NoRestoreLog) is no log; one that
	// cannot be read fails the pass, which extracts nothing.
	Restores bs.RestoreLog
}

// EntryResult describes the extraction of one entry.
type EntryResult struct {
	ID    string   `json:"entry_id"`
	Line  int      `json:"line"`
	Type  string   `json:"type"`
	Keys  []string `json:"keys"`
	Sizes []int    `json:"sizes_bytes"`
	// BytesSaved is what the entry's line shrank by.
	BytesSaved int64 `json:"bytes_saved"`
}

// Skip says why a pass wrote nothing (Result.SkipCode).
type Skip string

// The values of Result.SkipCode.
const (
	// SkipDisabled: Policy.Enabled is false; the session was not read.
	SkipDisabled Skip = "disabled"
	// SkipBusy: the session is in use (the error wraps ErrBusy).
	SkipBusy Skip = "busy"
	// SkipNothing: no value qualifies.
	SkipNothing Skip = "nothing"
	// SkipNoIDs: values would qualify, but only in entries without ids (a v1
	// transcript), which are never extracted: a placeholder names its
	// entry's id.
	SkipNoIDs Skip = "no_ids"
	// SkipBelowMinSaving: the saving is below Policy.MinSavingTokens.
	SkipBelowMinSaving Skip = "below_min_saving"
	// SkipDryRun: a dry run; Entries, Values and BytesSaved are what the
	// pass would write.
	SkipDryRun Skip = "dry_run"
	// SkipWriteFailed: the transcript could not be rewritten (the error
	// says why).
	SkipWriteFailed Skip = "write_failed"
)

// Result reports one pass over one session.
type Result struct {
	Session string `json:"session"`
	// Entries and Values count what was extracted, or in a dry run what
	// would be: the same numbers the real pass then writes. They are zero
	// when nothing was (or would be) written: below MinSavingTokens, busy,
	// or a failed write. Planned has the figures of what qualified.
	Entries int `json:"entries"`
	Values  int `json:"values"`
	// BytesBefore and BytesAfter measure the transcript; BytesSaved is
	// their difference (in a dry run, the planned one), zero when nothing
	// was (or would be) written. A busy session is not read: its sizes
	// come from the store's Stat, and are 0 when the
	// store cannot tell a size without reading the transcript (SQLite).
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	BytesSaved  int64 `json:"bytes_saved"`
	// Planned is what qualified for extraction, whether or not it was
	// written (a pass below MinSavingTokens writes nothing).
	Planned Planned `json:"planned"`
	// IDLessEntries counts the entries without an id (a v1 transcript) that
	// hold values that would otherwise qualify, and IDLessBytes those
	// values' size: they are never extracted, since a placeholder names its
	// entry's id.
	IDLessEntries int   `json:"id_less_entries"`
	IDLessBytes   int64 `json:"id_less_bytes"`
	// MalformedLines counts the transcript's lines that are not exactly
	// one JSON object (invalid JSON, two glued values): they are kept as
	// they are, byte for byte, and never extracted from.
	MalformedLines int `json:"malformed_lines"`
	// SideBytes is what the side records written take in the side store
	// (compressed, on disk for the file store).
	SideBytes int64 `json:"side_bytes"`
	// Written is true when the transcript was rewritten.
	Written bool `json:"written"`
	// Skipped says why nothing was written, when so, and SkipCode is the
	// reason's kind.
	Skipped  string        `json:"skipped,omitempty"`
	SkipCode Skip          `json:"skip_code,omitempty"`
	Details  []EntryResult `json:"details,omitempty"`
	Counts   map[Code]int  `json:"decisions"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// ReadTime, SideTime and WriteTime split Elapsed: reading and
	// deciding (with the side records encoded, compressed and written
	// meanwhile, see sidePipe), the side records' remainder, and
	// rewriting the transcript. SyncTime is the part of SideTime spent
	// making the side records durable (for a pack: its index, fsync,
	// rename and the directory's fsync); with a store whose Rewrite
	// writes the new transcript while it waits for its gate (the JSONL
	// store) it runs during WriteTime, so the phases then add up to more
	// than Elapsed.
	ReadTime  time.Duration `json:"read_ns"`
	SideTime  time.Duration `json:"side_ns"`
	SyncTime  time.Duration `json:"sync_ns"`
	WriteTime time.Duration `json:"write_ns"`
}

// Planned counts what qualified for extraction in a pass.
type Planned struct {
	Entries    int   `json:"entries"`
	Values     int   `json:"values"`
	BytesSaved int64 `json:"bytes_saved"`
}

// skip records why the pass writes nothing and clears the figures of what
// it writes.
func (r *Result) skip(code Skip, why string) {
	r.SkipCode, r.Skipped = code, why
	r.Entries, r.Values, r.BytesSaved, r.BytesAfter = 0, 0, 0, r.BytesBefore
}

type planned struct {
	line    int
	id      string
	trigger bs.TriggerType
	cands   []bs.Candidate
	repl    [][]byte
	reason  string
	code    Code
	// window is the entry's keep window; agedByPosition is set when its
	// age must be estimated from its position.
	window         int
	agedByPosition bool
	// sum is the line's LineSum as read. rec is its encoded side record
	// (nil once sent, or when vals must be merged into an earlier
	// record); sent is set once the record went to the side store, and
	// reused when the side store already holds it (nothing to send).
	sum    []byte
	rec    []byte
	vals   []StoredValue
	sent   bool
	reused bool
}

// planList holds the planned entries of a pass in chunks: appending to
// one slice copied it over and over (a fifth of a pass's allocations),
// and an entry keeps its address, which the side pipe holds.
type planList struct {
	chunks [][]planned
	n      int
}

const planChunk = 1024

// add appends p and returns its place in the list.
func (l *planList) add(p planned) *planned {
	if l.n%planChunk == 0 {
		l.chunks = append(l.chunks, make([]planned, 0, planChunk))
	}
	c := &l.chunks[len(l.chunks)-1]
	*c = append(*c, p)
	l.n++
	return &(*c)[len(*c)-1]
}

// each yields every entry in order.
func (l *planList) each(yield func(*planned) bool) {
	for _, c := range l.chunks {
		for i := range c {
			if !yield(&c[i]) {
				return
			}
		}
	}
}

// size is what the entry's side record holds in memory until it is sent.
func (p *planned) size() int64 {
	n := int64(len(p.rec))
	for _, v := range p.vals {
		n += int64(len(v.Raw))
	}
	return n
}

// saving is what the entry's line shrinks by.
func (p *planned) saving() int64 {
	var n int64
	for i, c := range p.cands {
		n += int64(c.Len() - len(p.repl[i]))
	}
	return n
}

// Run makes one extraction pass over a session. It returns the result
// and, when the transcript could not be written, an error (wrapping
// brainsurgeon.ErrBusy or ErrChanged when the session was in use; side
// records written before such an error are harmless orphans that the next
// pass reuses, see Policy.ReuseStoredWithin).
func (x *Extractor) Run(ctx context.Context, ref bs.SessionRef) (*Result, error) {
	start := time.Now()
	log := bs.LoggerOrDiscard(x.Logger)
	now := bs.Now(x.Clock)
	name := ref.String()
	if x.Store == nil || (x.Side == nil && !x.DryRun) {
		return nil, fmt.Errorf("extract %s: the Extractor needs a Store and a Side store: %w", name, bs.ErrInvalid)
	}
	res := &Result{Session: name, Counts: map[Code]int{}}
	if !x.Policy.Enabled {
		res.skip(SkipDisabled, "pruning is disabled (Policy.Enabled is false): nothing was read or extracted")
		return res, nil
	}
	// A session in use is left alone before any work is done. A dry run
	// applies the same gate, so that it reports what the real pass would
	// do now: a busy session is busy in both, with its real size.
	if err := x.Store.CheckIdle(ctx, ref); err != nil {
		if s, serr := x.Store.Stat(ctx, ref); serr == nil {
			res.BytesBefore = s.Version.Size()
		}
		res.skip(SkipBusy, err.Error())
		res.Elapsed = time.Since(start)
		return res, err
	}
	logged, err := bs.RestoresOf(ctx, x.Restores, ref)
	if err != nil {
		return nil, fmt.Errorf("extract %s: read the restore log: %w", name, err)
	}
	loggedSources := hasSourceKeys(logged)
	policy := x.Policy
	kept := policy.Triggers[:0:0]
	for _, t := range policy.Triggers {
		if x.Store.Editable(ref, t) {
			kept = append(kept, t)
		} else {
			log.Debug("trigger type not editable in this store", "session", name, "trigger", t, "store", x.Store.Name())
		}
	}
	policy.Triggers = kept

	// One read: the index (for message positions), the decisions and the
	// side records. The keep window needs positions, which are known only
	// at the end, so decisions are made as if the entry were old and
	// re-checked then; the newest records are held back until then (see
	// sidePipe).
	debug := bs.DebugEnabled(log)
	policy.NoReasons = policy.NoReasons || !debug
	tok := x.Tokenizer
	if tok == nil {
		tok = tokens.CharsPer4{}
	}
	var pipe *sidePipe
	if !x.DryRun {
		// Records go out early only once they save min_saving_tokens:
		// that many tokens' worth of bytes (4 a token, more when the
		// tokenizer counts fewer).
		minBytes := int64(policy.MinSavingTokens) * 4
		if n := tokens.OfBytes(tok, minBytes); n > 0 && n < int64(policy.MinSavingTokens) {
			minBytes = minBytes * int64(policy.MinSavingTokens) / n
		}
		pipe = x.newSidePipe(ctx, ref, name, now, log, minBytes)
		pipe.reuseWithin = policy.ReuseStoredWithin
		defer func() {
			if pipe == nil {
				return
			}
			// The pass ends without writing (skipped, or an error): what
			// went to the store early becomes durable orphans, as after
			// a failed rewrite, rather than a pending pack left open.
			if pipe.close(true) == nil && pipe.early {
				if err := x.Side.Sync(context.WithoutCancel(ctx), ref); err != nil {
					log.Warn("sync side records of a pass that wrote nothing", "session", name, "err", err)
				}
			}
		}()
	}
	var (
		all    planList // every planned entry, in file order
		idless []planned
	)
	var pointers internTable
	// A line shorter than the minimum value length holds no value long
	// enough, unless the entry forces its extraction (`_extractable`, a
	// top-level member that the envelope parse sees): it is indexed only,
	// and a forced one is parsed fully here.
	want := func(raw []byte) bool { return len(raw) >= policy.MinValueLength+2 }
	// decide is the part of a line's handling that depends on the line
	// alone: a store that parses on several goroutines runs it there
	// (Visitor.Prepare).
	decide := func(e *bs.Entry) *decided {
		if e.Kind != bs.KindEntry {
			return nil
		}
		e = withRestores(e, logged, loggedSources)
		d := Decide(e, -1, policy, now)
		var repl [][]byte
		if d.Extract {
			repl = make([][]byte, len(d.Candidates))
			for i, c := range d.Candidates {
				repl[i] = replacement(e.Raw, c, e.ID, policy.PreviewChars)
			}
			d, repl = editable(x.Store, ref, e, d, repl, x.Store.Name(), policy.NoReasons)
		}
		if k := keptDecisions[d.Code]; k != nil && d.Reason == "" {
			return k
		}
		out := &decided{d: d, repl: repl}
		if out.d.Code == CodeNoID {
			// Would it qualify with an id? Those values are reported,
			// never extracted.
			withID := *e
			withID.ID = idLessStandIn
			if w := Decide(&withID, -1, policy, now); w.Extract {
				out.idless = &w
			}
		}
		if out.d.Extract {
			if pipe != nil {
				out.sum = bs.LineSum(e.Raw)
				out.rec, out.vals, out.reused, out.err = pipe.encode(e, out.d, out.repl)
			}
		}
		return out
	}
	visit := &bs.Visitor{
		Want: want,
		// Want depends on the raw bytes alone, Prepare on the entry
		// alone: lines may be parsed and decided ahead, on several
		// goroutines.
		Concurrent: true,
		Prepare:    func(e *bs.Entry) any { return decide(e) },
		Visit: func(e *bs.Entry) error {
			if e.Kind != bs.KindEntry {
				return nil
			}
			dd, _ := e.Prepared.(*decided)
			if dd == nil {
				if !want(e.Raw) {
					if len(e.Extractable) == 0 {
						return nil
					}
					e = entry.Parse(e.Raw, e.Line, e.Offset)
				}
				dd = decide(e)
			}
			d := dd.d
			window := policy.KeepRecent
			if ext := ParseExtractable(e.Extractable); ext.Set && !ext.Force && !ext.Never {
				window = ext.Window
			}
			if w := dd.idless; w != nil {
				idless = append(idless, planned{line: e.Line, trigger: w.Type, cands: w.Candidates, window: window})
			}
			if !d.Extract {
				res.Counts[d.Code]++
				if d.Code != CodeNothing {
					log.Debug(d.Reason, "session", name)
				}
				return nil
			}
			if dd.err != nil {
				return fmt.Errorf("extract %s: encode side record of entry %s: %w", name, e.ID, dd.err)
			}
			// The plan keeps an exact copy: Decide's slice has room (and
			// stale candidates) beyond its length, whose pointers would
			// keep the parser's buffers alive.
			cands := make([]bs.Candidate, len(d.Candidates))
			for i, c := range d.Candidates {
				c.Pointer = pointers.get(c.Pointer)
				cands[i] = c
			}
			p := planned{line: e.Line, id: e.ID, trigger: d.Type, cands: cands, repl: dd.repl,
				code: d.Code, window: window, agedByPosition: e.Timestamp.IsZero() && policy.AgeThreshold > 0,
				sum: dd.sum, rec: dd.rec, vals: dd.vals, reused: dd.reused}
			if debug {
				p.reason = d.Reason // kept only to be logged: 20,000 of them are 2 MB
			}
			pp := all.add(p)
			if pipe != nil && !pp.reused {
				return pipe.add(pp)
			}
			return nil
		},
	}
	tr, err := x.Store.Open(ctx, ref, visit)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", name, err)
	}
	res.BytesBefore = tr.Version().Size()
	res.MalformedLines = len(tr.Malformed())
	res.ReadTime = time.Since(start)
	ref = tr.Ref() // with the session id taken from the file name if it had none
	version := tr.Version()
	positions := tr.MessagePositions()
	recent := protectRecent(tr, tok, policy.ProtectRecentTokens)
	dups := duplicateIDs(tr, &all)
	tr = nil // the index is most of a pass's memory
	plan := make([]*planned, 0, all.n)
	orphans := 0
	for p := range all.each {
		pos, ok := positions[p.line]
		keep := ""
		switch {
		case dups[p.id]:
			res.Counts[CodeDuplicateID]++
			keep = fmt.Sprintf("Entry %s: %s → KEEP (another line carries the same id)", p.id, p.trigger)
		case recent[p.line]:
			res.Counts[CodeTooRecent]++
			keep = fmt.Sprintf("Entry %s: %s → KEEP (within the most recent %d tokens)", p.id, p.trigger, policy.ProtectRecentTokens)
		case ok && pos < p.window:
			res.Counts[CodeTooRecent]++
			keep = fmt.Sprintf("Entry %s: %s → KEEP (message %d from the end, keep_recent %d)", p.id, p.trigger, pos, p.window)
		case ok && p.agedByPosition && time.Duration(pos)*time.Minute < policy.AgeThreshold:
			res.Counts[CodeTooYoung]++
			keep = fmt.Sprintf("Entry %s: %s → KEEP (message %d from the end, estimated younger than %s)", p.id, p.trigger, pos, policy.AgeThreshold)
		}
		if keep != "" {
			if p.sent {
				orphans++
			}
			log.Debug(keep, "session", name)
			continue
		}
		res.Counts[p.code]++
		if debug {
			log.Debug(p.reason, "session", name)
		}
		res.BytesSaved += p.saving()
		res.Values += len(p.cands)
		plan = append(plan, p)
	}
	if orphans > 0 {
		// Sent before the window was known (see sidePipe): unreferenced
		// records, as a failed rewrite leaves.
		log.Debug("side records of entries the keep window kept were written early", "session", name, "records", orphans)
	}
	for _, p := range idless {
		if pos, ok := positions[p.line]; ok && pos < p.window {
			continue
		}
		res.IDLessEntries++
		for _, c := range p.cands {
			res.IDLessBytes += int64(c.Len())
		}
	}
	positions = nil
	res.Entries = len(plan)
	res.BytesAfter = res.BytesBefore - res.BytesSaved
	res.Planned = Planned{Entries: res.Entries, Values: res.Values, BytesSaved: res.BytesSaved}
	finish := func(r *Result) *Result { r.Elapsed = time.Since(start); return r }
	if len(plan) == 0 {
		if res.IDLessEntries > 0 {
			res.skip(SkipNoIDs, fmt.Sprintf("%s with %s of extractable values %s no ids (a v1 transcript): nothing can be extracted",
				plural.Count(res.IDLessEntries, "entry", "entries"), plural.Count(int(res.IDLessBytes), "byte", "bytes"), plural.Noun(res.IDLessEntries, "has", "have")))
		} else {
			res.skip(SkipNothing, "nothing to extract")
		}
		log.Debug("pass skipped", "session", name, "reason", res.Skipped)
		return finish(res), nil
	}
	if saved := tokens.OfBytes(tok, res.BytesSaved); saved < int64(policy.MinSavingTokens) {
		res.skip(SkipBelowMinSaving, fmt.Sprintf("saving %s (%s, %s) is below min_saving_tokens %d",
			plural.Count(int(saved), "token", "tokens"), plural.Count(res.Planned.Entries, "entry", "entries"), plural.Count(int(res.Planned.BytesSaved), "byte", "bytes"), policy.MinSavingTokens))
		log.Debug("pass skipped", "session", name, "reason", res.Skipped)
		return finish(res), nil
	}
	if x.DryRun {
		res.SkipCode, res.Skipped = SkipDryRun, "dry run"
		res.Details = details(plan)
		return finish(res), nil
	}

	// Side records first, made durable before the transcript changes.
	t0 := time.Now()
	edits := make([]bs.Edit, 0, len(plan))
	reused := 0
	for _, p := range plan {
		if p.reused {
			reused++
		} else if !p.sent {
			if err := pipe.send(p); err != nil {
				return nil, fmt.Errorf("extract %s: %w", name, err)
			}
		}
		edit := bs.Edit{Line: p.line, ID: p.id, Sum: p.sum, Splices: make([]bs.Splice, len(p.cands))}
		for k, c := range p.cands {
			edit.Splices[k] = bs.Splice{Start: c.Start, End: c.End, With: p.repl[k]}
		}
		edits = append(edits, edit)
	}
	if reused > 0 {
		log.Debug("side records an earlier pass stored are reused", "session", name, "records", reused)
	}
	err = pipe.close(false)
	encoded := pipe.encoded.Load()
	pipe = nil
	if err != nil {
		return nil, err
	}
	// The records must be durable before the transcript names them: the
	// store's Rewrite waits for that (the gate) right before its rename,
	// and a store that can writes and syncs the new transcript meanwhile.
	var (
		syncErr  error
		syncDone = make(chan struct{})
	)
	var stored int64
	storedDone := make(chan struct{})
	go func() {
		defer close(storedDone)
		t1 := time.Now()
		syncErr = x.Side.Sync(ctx, ref)
		res.SyncTime = time.Since(t1)
		close(syncDone)
		if syncErr == nil {
			// Only reported: counted while the transcript is written.
			stored = x.storedBytes(ctx, ref, plan)
		}
	}()
	synced := func() error {
		<-syncDone
		if syncErr != nil {
			return fmt.Errorf("extract %s: %w", name, syncErr)
		}
		return nil
	}
	t2 := time.Now()
	err = x.Store.Rewrite(ctx, ref, version, edits, synced)
	res.WriteTime = time.Since(t2)
	<-storedDone // a rewrite that failed before its gate did not wait
	if syncErr != nil {
		return nil, fmt.Errorf("extract %s: %w", name, syncErr)
	}
	if res.SideBytes = stored; stored == 0 {
		res.SideBytes = encoded
	}
	res.SideTime = t2.Sub(t0) + res.SyncTime
	if err != nil {
		res.skip(SkipWriteFailed, err.Error())
		if errors.Is(err, bs.ErrBusy) || errors.Is(err, bs.ErrChanged) {
			res.SkipCode = SkipBusy
		}
		return finish(res), fmt.Errorf("extract %s: %w", name, err)
	}
	res.Written = true
	res.Details = details(plan)
	log.Info("extraction pass", "session", name, "entries", res.Entries, "values", res.Values, "bytes_saved", res.BytesSaved)
	return finish(res), nil
}

// editable keeps the candidates of d (and their replacements repl) that
// the store accepts to replace. When it accepts none, the decision is
// CodeNotEditable: the entry's values stay in place.
func editable(lim bs.Store, ref bs.SessionRef, e *bs.Entry, d Decision, repl [][]byte, store string, noReasons bool) (Decision, [][]byte) {
	ok := lim.EditableValues(ref, e, d.Candidates, repl)
	cands, kept := d.Candidates[:0:0], repl[:0:0]
	for i, c := range d.Candidates {
		if i < len(ok) && ok[i] {
			cands, kept = append(cands, c), append(kept, repl[i])
		}
	}
	if len(cands) == len(d.Candidates) {
		return d, repl
	}
	if len(cands) > 0 {
		d.Candidates, d.Type = cands, cands[0].Trigger
		return d, kept
	}
	no := Decision{Code: CodeNotEditable, Type: d.Type}
	if !noReasons {
		no.Reason = fmt.Sprintf("Entry %s: %s → KEEP (the %s store does not accept edits of its values)", e.ID, d.Type, store)
	}
	return no, nil
}

// protectRecent returns the line numbers of the newest messages on the
// active path of tr whose lines together hold limit tokens, counted from
// their sizes with tok; nil when limit is 0 or less.
func protectRecent(tr bs.Transcript, tok tokens.Tokenizer, limit int) map[int]bool {
	if limit <= 0 {
		return nil
	}
	out := make(map[int]bool)
	nodes, path := tr.Nodes(), tr.ActivePath()
	acc := int64(0)
	for k := len(path) - 1; k >= 0 && acc < int64(limit); k-- {
		n := &nodes[path[k]]
		if !n.IsMessage() {
			continue
		}
		out[n.Line] = true
		acc += tokens.OfBytes(tok, int64(n.Len))
	}
	return out
}

// decided is what the extractor decides for one line from the line alone.
type decided struct {
	d      Decision
	idless *Decision // for an entry without id: what it would be with one
	repl   [][]byte  // the placeholders of d's candidates
	// sum, rec, vals and reused are planned's (made when the pass
	// writes).
	sum    []byte
	rec    []byte
	vals   []StoredValue
	reused bool
	err    error
}

// keptDecisions are shared, read-only results for lines kept for their
// code alone (nothing to extract, no sentence to log, no id-less report
// to make): one allocation less per line, about 50,000 of them in a real-
// density 100 MB transcript (15 MB a pass).
var keptDecisions = func() map[Code]*decided {
	m := make(map[Code]*decided)
	for _, c := range []Code{CodeDisabled, CodeBadID, CodeNotEntry, CodeNever, CodeNothing, CodeAlreadyExtracted,
		CodeTypeNotEnabled, CodeTooYoung, CodeRestoreProtected, CodeTooRecent, CodeTooShort, CodeNotEditable} {
		m[c] = &decided{d: Decision{Code: c}}
	}
	return m
}()

// idLessStandIn is the id an entry without one is decided with, to tell
// whether its values would qualify.
const idLessStandIn = "v1-entry-without-id"

// internTable hands out one copy of each recurring string (the JSON
// Pointers of planned values: "/message/content/0/text" on most lines),
// so that the plan neither repeats them nor keeps the parser's buffers
// they may point into.
type internTable struct{ m map[string]string }

// get returns the table's copy of s, or a copy of its own once the table
// is full.
func (t *internTable) get(s string) string {
	if v, ok := t.m[s]; ok {
		return v
	}
	s = strings.Clone(s)
	if t.m == nil {
		t.m = make(map[string]string)
	}
	if len(t.m) < 4096 {
		t.m[s] = s
	}
	return s
}

// duplicateIDs returns the ids of planned entries that more than one line
// of tr carries.
func duplicateIDs(tr bs.Transcript, plan *planList) map[string]bool {
	count := make(map[string]int, plan.n)
	for p := range plan.each {
		count[p.id] = 0
	}
	var dups map[string]bool
	for _, n := range tr.Nodes() {
		if n.Kind != bs.KindEntry || n.ID == "" {
			continue
		}
		if c, ok := count[n.ID]; ok {
			if c == 1 {
				if dups == nil {
					dups = map[string]bool{}
				}
				dups[n.ID] = true
			}
			count[n.ID] = c + 1
		}
	}
	return dups
}

// storedBytes is what the side records the pass wrote for plan take in
// the store (compressed), when it says; 0 otherwise.
func (x *Extractor) storedBytes(ctx context.Context, ref bs.SessionRef, plan []*planned) int64 {
	infos, err := x.Side.List(ctx, ref)
	if err != nil {
		return 0
	}
	mine := make(map[string]bool, len(plan))
	for _, p := range plan {
		if !p.reused { // stored by an earlier pass, not written now
			mine[p.id] = true
		}
	}
	var stored int64
	for _, in := range infos {
		if mine[in.EntryID] {
			stored += in.Size
		}
	}
	return stored
}

func (p *planned) keys() []string { return candKeys(p.cands) }

func (p *planned) sizes() []int { return candSizes(p.cands) }

// candKeys returns the candidates' JSON Pointers.
func candKeys(cands []bs.Candidate) []string {
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.Pointer
	}
	return out
}

// candSizes returns the candidates' sizes in bytes.
func candSizes(cands []bs.Candidate) []int {
	out := make([]int, len(cands))
	for i, c := range cands {
		out[i] = c.Len()
	}
	return out
}

func details(plan []*planned) []EntryResult {
	out := make([]EntryResult, 0, len(plan))
	for _, p := range plan {
		out = append(out, EntryResult{ID: p.id, Line: p.line, Type: string(p.trigger),
			Keys: p.keys(), Sizes: p.sizes(), BytesSaved: p.saving()})
	}
	return out
}
