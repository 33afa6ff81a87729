package restore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// Repair is a structural repair of a transcript: new entries inserted
// after lines, and entries given a new parent. ApplyRepair writes it in one
// rewrite and journals it in the side records, so that RestoreAll with
// pristine takes it back byte for byte.
type Repair struct {
	// Base is the version of the transcript the repair was planned on.
	Base bs.Version
	// Op names the operation in the journals and the audit log
	// ("doctor_fix").
	Op string
	// Inserts add entries after lines.
	Inserts []Insert
	// Reparents give entries a new "parentId".
	Reparents []Reparent
}

// Insert adds new entries right after one line.
type Insert struct {
	// AfterLine is the 1-based line the entries follow; AfterID the
	// entry id that line must carry.
	AfterLine int
	AfterID   string
	// Entries are the new lines (raw JSON objects without a newline),
	// in order; each has an "id" member unique in the transcript, and IDs
	// lists them in the same order.
	Entries [][]byte
	IDs     []string
}

// Reparent gives the entry on Line (with id EntryID) the parent Parent
// ("" writes null).
type Reparent struct {
	Line    int
	EntryID string
	Parent  string
}

// ProblemInsertedChanged: a line a repair inserted has changed since (its
// bytes are not the journaled ones), so a pristine RestoreAll keeps it
// rather than remove a line it cannot vouch for. Its Path is "".
const ProblemInsertedChanged = "inserted_line_changed"

// ProblemInsertedHasChildren: a line a repair inserted is the parent of
// an entry that stays (the host appended to the repaired session, or an
// entry's parentId is not put back), so a pristine RestoreAll keeps it:
// removing it would leave that entry's parentId naming no entry. Its Path
// is "".
const ProblemInsertedHasChildren = "inserted_has_children"

// minInsertedIDLen is the shortest id an inserted entry may have: the
// host's own ids are 8 hex digits (brainsurgeon.NewEntryID).
const minInsertedIDLen = 8

// ApplyRepair checks that the session is idle and still at rep.Base,
// journals every change (an inserted entry as a whole line that did not
// exist, a re-parented entry's previous "parentId") in the side records,
// then writes the repair in one rewrite and appends one audit event
// (action rep.Op). A busy session gives an error wrapping ErrBusy, a
// changed one ErrChanged; a store that cannot insert lines ErrUnsupported.
// In every failure nothing of the transcript is changed.
//
// The repair is checked first (ErrInvalid): Op is a lower-case word
// ("doctor_fix"); every entry id is a valid entry id; an inserted entry is
// one JSON object on one line whose "id" member is IDs[i], and an inserted
// id has at least 8 characters and appears once in the repair; no line is
// re-parented twice and no line gets two inserts. Against the transcript
// as read (ErrChanged when it does not match): each anchor and each
// re-parented line holds the entry id the repair names, inserted ids are
// not already in the transcript, and a new parent is an entry of the
// transcript or one the repair inserts. A Repair with nothing to insert or
// re-parent does nothing (not even the checks against the transcript).
//
// The side records are written, and made durable, before the transcript.
// If the rewrite then fails, the records describe a change that did not
// happen, which is harmless: the journal of an inserted entry names an id
// the transcript does not hold, so a pristine RestoreAll never visits it
// (there is nothing to undo), and a journaled "parentId" still equal to
// the line's value is left as it is. A retried repair keeps the first
// journaled "parentId" and replaces an inserted entry's journaled line.
// The side store has no lock shared with other processes, so another
// writer (the daemon's extraction) may replace a record between the flush
// and the rewrite with a copy read before: after the rewrite the records
// are read again and every journal item missing is added back. If that
// fails the transcript is repaired but the error (logged as well) names
// the entries whose journal is lost.
func (r *Restorer) ApplyRepair(ctx context.Context, ref bs.SessionRef, rep Repair) error {
	if err := r.ready(); err != nil {
		return err
	}
	if len(rep.Inserts) == 0 && len(rep.Reparents) == 0 {
		return nil
	}
	inserted, err := checkRepair(rep)
	if err != nil {
		return fmt.Errorf("repair %s: %w", ref, err)
	}
	if ref.Backend == bs.BackendSQLite {
		return fmt.Errorf("repair %s: the %s store cannot insert or re-parent entries: %w", ref, ref.Backend, bs.ErrUnsupported)
	}
	if err := r.Store.CheckIdle(ctx, ref); err != nil {
		return fmt.Errorf("repair %s: %w", ref, err)
	}
	mu := r.lock(ref)
	mu.Lock()
	defer mu.Unlock()
	snap, err := r.scan(ctx, ref, scanFilter{all: true})
	if err != nil {
		return err
	}
	ref = snap.ref
	if ref.Backend == bs.BackendSQLite {
		return fmt.Errorf("repair %s: the %s store cannot insert or re-parent entries: %w", ref, ref.Backend, bs.ErrUnsupported)
	}
	if !snap.version.Equal(rep.Base) {
		return fmt.Errorf("repair %s: the transcript is no longer the version the repair was planned on (%s, now %s): %w",
			ref, rep.Base, snap.version, bs.ErrChanged)
	}
	byLine := make(map[int]*bs.Entry, len(snap.lines))
	for _, e := range snap.lines {
		byLine[e.Line] = e
	}
	at := func(line int, id, what string) (*bs.Entry, error) {
		e := byLine[line]
		switch {
		case e == nil:
			return nil, fmt.Errorf("repair %s: %s: expected entry %s on line %d, found no entry there: %w", ref, what, id, line, bs.ErrChanged)
		case e.ID != id:
			return nil, fmt.Errorf("repair %s: %s: expected entry %s on line %d, found entry %q: %w", ref, what, id, line, e.ID, bs.ErrChanged)
		}
		return e, nil
	}
	for id := range inserted {
		if _, ok := snap.byID[id]; ok {
			return fmt.Errorf("repair %s: inserted entry id %s is already in the transcript: %w", ref, id, bs.ErrChanged)
		}
	}

	p := r.newPlanner(ctx, ref, snap, false)
	edits := map[int]*bs.Edit{}
	edit := func(e *bs.Entry) *bs.Edit {
		if ed := edits[e.Line]; ed != nil {
			return ed
		}
		ed := &bs.Edit{Line: e.Line, ID: e.ID, Sum: bs.LineSum(e.Raw)}
		edits[e.Line] = ed
		return ed
	}
	var touched []string
	for _, ins := range rep.Inserts {
		e, err := at(ins.AfterLine, ins.AfterID, "insert")
		if err != nil {
			return err
		}
		for i, id := range ins.IDs {
			if err := p.recs.journalInserted(id, ins.Entries[i], rep.Op, p.now); err != nil {
				return fmt.Errorf("repair %s: %w", ref, err)
			}
			touched = append(touched, id)
		}
		ed := edit(e)
		ed.Insert = ins.Entries
	}
	for _, rp := range rep.Reparents {
		e, err := at(rp.Line, rp.EntryID, "re-parent")
		if err != nil {
			return err
		}
		if _, ok := snap.byID[rp.Parent]; rp.Parent != "" && !ok && !inserted[rp.Parent] {
			return fmt.Errorf("repair %s: re-parent %s: new parent %s is neither in the transcript nor inserted by the repair: %w",
				ref, rp.EntryID, rp.Parent, bs.ErrChanged)
		}
		value := []byte("null")
		if rp.Parent != "" {
			value, _ = json.Marshal(rp.Parent)
		}
		if _, vs, ve, ok := jsonedit.Member(e.Raw, "", "parentId"); ok && bytes.Equal(e.Raw[vs:ve], value) {
			continue // already its parent
		}
		sp, err := jsonedit.Set(e.Raw, "", "parentId", value)
		if err != nil {
			return fmt.Errorf("repair %s: re-parent %s on line %d: %v: %w", ref, rp.EntryID, rp.Line, err, bs.ErrInvalid)
		}
		if err := p.recs.journal(e.ID, e.Raw, "", "parentId", rep.Op, p.now); err != nil {
			return fmt.Errorf("repair %s: %w", ref, err)
		}
		touched = append(touched, e.ID)
		ed := edit(e)
		ed.Splices = []bs.Splice{sp}
	}
	if len(edits) == 0 {
		return nil
	}
	list := make([]bs.Edit, 0, len(edits))
	for _, ed := range edits {
		list = append(list, *ed)
	}
	slices.SortFunc(list, func(a, b bs.Edit) int { return a.Line - b.Line })
	if err := p.recs.flush(); err != nil {
		return fmt.Errorf("repair %s: %w", ref, err)
	}
	if err := r.Store.Rewrite(ctx, ref, snap.version, list, nil); err != nil {
		return fmt.Errorf("repair %s: %w", ref, err)
	}
	// Another process (the daemon's extraction) may have written one of
	// these records between the flush and the rewrite from a copy it read
	// before: read them again and put back any journal item it dropped.
	var want []wantJournal
	for _, id := range touched {
		st := p.recs.recs[id]
		if st == nil || st.b == nil {
			continue
		}
		for _, j := range st.b.journal {
			if j.Path == "" && j.Absent || j.Path == "/parentId" {
				want = append(want, wantJournal{id: id, item: j})
			}
		}
	}
	confirmErr := r.confirmJournals(ctx, ref, want)
	ev := audit.Event{Time: bs.Now(r.Clock).UTC(), Action: rep.Op, Session: ref.String(), Entry: strings.Join(touched, ","),
		Path: r.Store.Location(ref), Agent: ref.Agent, SessionID: ref.ID}
	if err := audit.Append(r.auditPath(), ev); err != nil {
		r.log().Warn("audit event not written", "action", rep.Op, "session", ref.String(), "error", err.Error())
	}
	r.log().Info("repaired transcript", "session", ref.String(), "op", rep.Op, "inserted", len(inserted),
		"reparented", len(rep.Reparents), "entries", touched)
	if confirmErr != nil {
		r.log().Error("repair journal lost", "session", ref.String(), "error", confirmErr.Error())
		return fmt.Errorf("repair %s: the transcript is repaired, but a pristine restore may not take it back: %w", ref, confirmErr)
	}
	return nil
}

// wantJournal is a journal item a repair wrote to the side record of
// entry id.
type wantJournal struct {
	id   string
	item JournalItem
}

// confirmJournals reads the side records of a repair again, after its
// rewrite, and adds back every journal item of want that is no longer
// there (a "parentId" item counts as there when the record journals
// "parentId" at all: the first state is kept; an inserted line's item
// when it holds the same bytes). The error names the entries whose
// journal could not be put back.
func (r *Restorer) confirmJournals(ctx context.Context, ref bs.SessionRef, want []wantJournal) error {
	if len(want) == 0 {
		return nil
	}
	rs := newRecordSet(ctx, r.Side, ref)
	var failed, readded []string
	var errs []error
	for _, w := range want {
		b, err := rs.get(w.id)
		if err != nil {
			failed = append(failed, w.id)
			errs = append(errs, err)
			continue
		}
		found := slices.ContainsFunc(b.journal, func(j JournalItem) bool {
			if w.item.Path == "" {
				return j.Path == "" && j.Absent && j.RawBase64 == w.item.RawBase64
			}
			return j.Path == w.item.Path
		})
		if found {
			continue
		}
		if w.item.Path == "" {
			b.journal = slices.DeleteFunc(b.journal, func(j JournalItem) bool { return j.Path == "" })
		}
		b.journal = append(b.journal, w.item)
		rs.touch(w.id)
		readded = append(readded, w.id)
		r.log().Warn("repair journal put back", "session", ref.String(), "entry", w.id, "path", w.item.Path)
	}
	if err := rs.flush(); err != nil {
		failed = append(failed, readded...)
		errs = append(errs, err)
	}
	if len(failed) > 0 {
		return fmt.Errorf("the journal of entries %s could not be written again after the rewrite: %w", strings.Join(failed, ", "), errors.Join(errs...))
	}
	return nil
}

// checkRepair checks a repair on its own (see ApplyRepair) and returns the
// ids it inserts.
func checkRepair(rep Repair) (map[string]bool, error) {
	if rep.Op == "" || strings.TrimLeft(rep.Op, "abcdefghijklmnopqrstuvwxyz_") != "" || len(rep.Op) > 64 {
		return nil, fmt.Errorf("operation name %q: expected a lower-case word such as \"doctor_fix\": %w", rep.Op, bs.ErrInvalid)
	}
	if rep.Base.IsZero() {
		return nil, fmt.Errorf("no base version: expected the version of the transcript the repair was planned on: %w", bs.ErrInvalid)
	}
	inserted := map[string]bool{}
	anchors := map[int]bool{}
	for n, ins := range rep.Inserts {
		if ins.AfterLine < 1 {
			return nil, fmt.Errorf("insert %d: line %d: line numbers start at 1: %w", n+1, ins.AfterLine, bs.ErrInvalid)
		}
		if anchors[ins.AfterLine] {
			return nil, fmt.Errorf("insert %d: a second insert after line %d: expected one per line, its entries in order: %w", n+1, ins.AfterLine, bs.ErrInvalid)
		}
		anchors[ins.AfterLine] = true
		if err := bs.IDEntry.Check(ins.AfterID); err != nil {
			return nil, fmt.Errorf("insert %d: anchor: %w", n+1, err)
		}
		if len(ins.Entries) == 0 || len(ins.Entries) != len(ins.IDs) {
			return nil, fmt.Errorf("insert %d after line %d: %d entries and %d ids: expected as many ids as entries, at least one: %w",
				n+1, ins.AfterLine, len(ins.Entries), len(ins.IDs), bs.ErrInvalid)
		}
		for i, id := range ins.IDs {
			if err := bs.IDEntry.Check(id); err != nil {
				return nil, fmt.Errorf("insert %d, entry %d: %w", n+1, i+1, err)
			}
			if len(id) < minInsertedIDLen {
				return nil, fmt.Errorf("insert %d, entry %d: id %q: expected at least %d characters (the host's 8 hex digits): %w",
					n+1, i+1, id, minInsertedIDLen, bs.ErrInvalid)
			}
			if inserted[id] {
				return nil, fmt.Errorf("insert %d: entry id %s inserted twice: %w", n+1, id, bs.ErrInvalid)
			}
			inserted[id] = true
			if err := checkInsertedLine(ins.Entries[i], id); err != nil {
				return nil, fmt.Errorf("insert %d, entry %d (%s): %w", n+1, i+1, id, err)
			}
		}
	}
	lines := map[int]bool{}
	for n, rp := range rep.Reparents {
		if rp.Line < 1 {
			return nil, fmt.Errorf("re-parent %d: line %d: line numbers start at 1: %w", n+1, rp.Line, bs.ErrInvalid)
		}
		if lines[rp.Line] {
			return nil, fmt.Errorf("re-parent %d: line %d re-parented twice: %w", n+1, rp.Line, bs.ErrInvalid)
		}
		lines[rp.Line] = true
		if err := bs.IDEntry.Check(rp.EntryID); err != nil {
			return nil, fmt.Errorf("re-parent %d: %w", n+1, err)
		}
		if rp.Parent != "" {
			if err := bs.IDEntry.Check(rp.Parent); err != nil {
				return nil, fmt.Errorf("re-parent %d: new parent: %w", n+1, err)
			}
		}
		if rp.Parent == rp.EntryID {
			return nil, fmt.Errorf("re-parent %d: entry %s as its own parent: %w", n+1, rp.EntryID, bs.ErrInvalid)
		}
	}
	return inserted, nil
}

// checkInsertedLine checks that raw is one JSON object on one line whose
// "id" member is the string id.
func checkInsertedLine(raw []byte, id string) error {
	if bytes.ContainsAny(raw, "\r\n") {
		return fmt.Errorf("expected one line, found a line break: %w", bs.ErrInvalid)
	}
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return fmt.Errorf("expected a JSON object, found %.40q: %w", raw, bs.ErrInvalid)
	}
	s, e, ok := jsonedit.Find(raw, "/id")
	var got string
	if ok {
		ok = json.Unmarshal(raw[s:e], &got) == nil
	}
	if !ok || got != id {
		return fmt.Errorf("expected an \"id\" member %q, found %.40q: %w", id, got, bs.ErrInvalid)
	}
	return nil
}

// journalInserted records in the side record of entry id that its whole
// line did not exist before the repair: Path "", Absent, the inserted
// bytes in RawBase64 (a pristine RestoreAll removes the line only while
// it still holds them). An earlier item of the kind (a repair whose
// rewrite failed) is replaced.
func (rs *recordSet) journalInserted(id string, line []byte, op string, at time.Time) error {
	b, err := rs.get(id)
	if err != nil {
		return err
	}
	b.journal = slices.DeleteFunc(b.journal, func(j JournalItem) bool { return j.Path == "" })
	b.journal = append(b.journal, JournalItem{Path: "", Absent: true, RawBase64: base64.StdEncoding.EncodeToString(line), Op: op, At: at.UTC()})
	rs.touch(id)
	return nil
}

// insertedLine returns the bytes of the whole line the record's journal
// says a repair inserted, if it says so.
func insertedLine(b *book) ([]byte, bool, error) {
	for _, j := range b.journal {
		if j.Path == "" && j.Absent {
			if j.RawBase64 == "" && len(j.Raw) == 0 {
				return nil, true, fmt.Errorf("journal of an inserted line: no bytes: %w", bs.ErrCorrupt)
			}
			raw, err := journalRaw(j)
			return raw, true, err
		}
	}
	return nil, false, nil
}
