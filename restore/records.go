package restore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/entry"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// TriggerRedaction is the Trigger of the stored values that keep what a
// redaction replaced.
const TriggerRedaction = "redaction"

// JournalItem is the state of one member before BrainSurgeon first changed
// it: absent, or its raw JSON value. Restore keeps them in the side record
// of the entry, under "journal", so that a pristine restore can undo every
// change to bookkeeping members.
type JournalItem struct {
	// Path is the member's JSON Pointer ("/_restored",
	// "/message/content/2/_redacted").
	Path string `json:"path"`
	// Absent is true when the member did not exist.
	Absent bool `json:"absent,omitempty"`
	// Raw is the member's previous raw JSON value when it is valid UTF-8;
	// RawBase64 holds it otherwise (and always, for values restore writes).
	Raw       json.RawMessage `json:"raw,omitempty"`
	RawBase64 string          `json:"raw_base64,omitempty"`
	// Op names the operation that made the change ("restore", "redact",
	// "set_extractable"); At is when.
	Op string    `json:"op"`
	At time.Time `json:"at"`
}

// book is what the side store keeps of one entry: the extracted values
// (extract's record) and restore's own bookkeeping, stored in the same
// record under "journal" and "redactions".
type book struct {
	rec *extract.Record
	// journal records the first change to each bookkeeping member.
	journal []JournalItem
	// redactions hold the original bytes of the values a redaction
	// replaced with a stub (Trigger TriggerRedaction, Placeholder the
	// stub's JSON text).
	redactions []extract.StoredValue
}

// readBook decodes restore's members of a record.
func readBook(rec *extract.Record) (*book, error) {
	b := &book{rec: rec}
	if raw, ok := rec.Extra["journal"]; ok {
		if err := json.Unmarshal(raw, &b.journal); err != nil {
			return nil, fmt.Errorf("entry %s: journal: %v: %w", rec.EntryID, err, bs.ErrCorrupt)
		}
	}
	if raw, ok := rec.Extra["redactions"]; ok {
		if err := json.Unmarshal(raw, &b.redactions); err != nil {
			return nil, fmt.Errorf("entry %s: redactions: %v: %w", rec.EntryID, err, bs.ErrCorrupt)
		}
	}
	return b, nil
}

// store puts restore's members back into the record.
func (b *book) store() error {
	put := func(name string, v any, empty bool) error {
		if empty {
			delete(b.rec.Extra, name)
			return nil
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if b.rec.Extra == nil {
			b.rec.Extra = map[string]json.RawMessage{}
		}
		b.rec.Extra[name] = raw
		return nil
	}
	if err := put("journal", b.journal, len(b.journal) == 0); err != nil {
		return err
	}
	return put("redactions", b.redactions, len(b.redactions) == 0)
}

// recordSet caches the side records of one session during a write-back
// and writes the changed ones.
type recordSet struct {
	ctx     context.Context
	side    bs.SideStore
	ref     bs.SessionRef
	session string
	recs    map[string]*recordState
	order   []string
}

type recordState struct {
	b     *book
	err   error
	dirty bool
}

func newRecordSet(ctx context.Context, side bs.SideStore, ref bs.SessionRef) *recordSet {
	return &recordSet{ctx: ctx, side: side, ref: ref, session: ref.String(), recs: map[string]*recordState{}}
}

// get returns the entry's record; a missing one is a new empty record.
// A corrupt one is an error wrapping bs.ErrCorrupt.
func (rs *recordSet) get(id string) (*book, error) {
	if st, ok := rs.recs[id]; ok {
		return st.b, st.err
	}
	var b *book
	rec, err := extract.LoadRecord(rs.ctx, rs.side, rs.ref, id)
	switch {
	case errors.Is(err, bs.ErrNotFound):
		b, err = &book{rec: &extract.Record{Session: rs.session, EntryID: id}}, nil
	case err == nil:
		b, err = readBook(rec)
	}
	rs.recs[id] = &recordState{b: b, err: err}
	rs.order = append(rs.order, id)
	return b, err
}

func (rs *recordSet) touch(id string) { rs.recs[id].dirty = true }

// journal records the state of the member name of the object at objPtr in
// raw before its first change by BrainSurgeon. Later changes keep the
// first record.
func (rs *recordSet) journal(id string, raw []byte, objPtr, name, op string, at time.Time) error {
	b, err := rs.get(id)
	if err != nil {
		return err
	}
	path := jsonedit.Join(objPtr, name)
	for _, j := range b.journal {
		if j.Path == path {
			return nil
		}
	}
	item := JournalItem{Path: path, Op: op, At: at.UTC()}
	if _, vs, ve, ok := jsonedit.Member(raw, objPtr, name); ok {
		setJournalRaw(&item, raw[vs:ve])
	} else {
		item.Absent = true
	}
	b.journal = append(b.journal, item)
	rs.touch(id)
	return nil
}

// setJournalRaw stores a previous raw value. It always goes base64: the
// bytes must come back exactly, whatever JSON encoding the record's
// writer applies to its other members.
func setJournalRaw(item *JournalItem, raw []byte) {
	item.RawBase64 = base64.StdEncoding.EncodeToString(raw)
}

// journalRaw returns the previous raw value a journal item holds.
func journalRaw(item JournalItem) ([]byte, error) {
	if item.RawBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(item.RawBase64)
		if err != nil {
			return nil, fmt.Errorf("journal %s: raw_base64: %v: %w", item.Path, err, bs.ErrCorrupt)
		}
		return b, nil
	}
	if len(item.Raw) == 0 {
		return nil, fmt.Errorf("journal %s: no previous value: %w", item.Path, bs.ErrCorrupt)
	}
	return []byte(item.Raw), nil
}

// redaction records the original bytes of a value about to be replaced by
// stub. The first record of a path is kept.
func (rs *recordSet) redaction(id, path string, orig, stub []byte, at time.Time) error {
	b, err := rs.get(id)
	if err != nil {
		return err
	}
	for _, v := range b.redactions {
		if v.Path == path {
			return nil
		}
	}
	v := extract.NewStoredValue(path, TriggerRedaction, false, orig, stub, at)
	// Kept base64 for the same reason as journal values: exact bytes
	// whatever the record's encoder does with JSON texts.
	var zero extract.StoredValue
	v.Raw, v.RawBase64 = zero.Raw, base64.StdEncoding.EncodeToString(orig)
	b.redactions = append(b.redactions, v)
	rs.touch(id)
	return nil
}

// flush writes the changed records and makes them durable (before the
// transcript changes, so a failed transcript write never leaves a
// placeholder without its value).
func (rs *recordSet) flush() error {
	wrote := false
	for _, id := range rs.order {
		st := rs.recs[id]
		if !st.dirty || st.err != nil {
			continue
		}
		if st.b.rec.Session == "" {
			st.b.rec.Session = rs.session
		}
		if err := st.b.store(); err != nil {
			return fmt.Errorf("side record of entry %s: %w", id, err)
		}
		if _, err := extract.SaveRecord(rs.ctx, rs.side, rs.ref, st.b.rec); err != nil {
			return fmt.Errorf("side record of entry %s: %w", id, err)
		}
		st.dirty, wrote = false, true
	}
	if !wrote {
		return nil
	}
	return rs.side.Sync(rs.ctx, rs.ref)
}

// lineEdit is the working copy of one transcript line during a
// write-back. Every change is a splice of cur; the line's Edit is the one
// splice between orig and cur.
type lineEdit struct {
	line   int
	id     string
	orig   []byte
	cur    []byte
	parsed *bs.Entry
	// drop removes the whole line (a line a repair inserted, undone).
	drop bool
}

// entry returns the parsed view of the current bytes.
func (l *lineEdit) entry() *bs.Entry {
	if l.parsed == nil {
		l.parsed = entry.Parse(l.cur, l.line, 0)
	}
	return l.parsed
}

func (l *lineEdit) apply(sp bs.Splice) {
	l.cur = jsonedit.Apply(l.cur, sp)
	l.parsed = nil
}

// value returns the current bytes at pointer.
func (l *lineEdit) value(ptr string) ([]byte, bool) {
	s, e, ok := jsonedit.Find(l.cur, ptr)
	if !ok {
		return nil, false
	}
	return l.cur[s:e], true
}

// replace puts with in place of the value at ptr.
func (l *lineEdit) replace(ptr string, with []byte) bool {
	sp, err := jsonedit.Replace(l.cur, ptr, with)
	if err != nil {
		return false
	}
	l.apply(sp)
	return true
}

// set replaces or inserts a member.
func (l *lineEdit) set(objPtr, name string, value []byte) error {
	sp, err := jsonedit.Set(l.cur, objPtr, name, value)
	if err != nil {
		return err
	}
	l.apply(sp)
	return nil
}

// remove removes a member.
func (l *lineEdit) remove(objPtr, name string) error {
	sp, err := jsonedit.Remove(l.cur, objPtr, name)
	if err != nil {
		return err
	}
	l.apply(sp)
	return nil
}

func (l *lineEdit) changed() bool { return l.drop || !bytes.Equal(l.orig, l.cur) }

func (l *lineEdit) edit() bs.Edit {
	if l.drop {
		return bs.Edit{Line: l.line, ID: l.id, Sum: bs.LineSum(l.orig), Remove: true}
	}
	return bs.Edit{Line: l.line, ID: l.id, Splices: []bs.Splice{jsonedit.Diff(l.orig, l.cur)}}
}

// splitMember splits a member pointer into its object's pointer and name.
func splitMember(path string) (objPtr, name string, err error) {
	segs, err := jsonedit.SplitPointer(path)
	if err != nil {
		return "", "", err
	}
	if len(segs) == 0 {
		return "", "", fmt.Errorf("pointer %q names no member: %w", path, bs.ErrInvalid)
	}
	for _, s := range segs[:len(segs)-1] {
		objPtr = jsonedit.Join(objPtr, s)
	}
	return objPtr, segs[len(segs)-1], nil
}

// PutBack returns raw, the line of the entry whose side record is rec,
// with every stored value of rec whose bytes in raw are still the
// placeholder that replaced it put back, byte for byte (the stored
// original bytes spliced in place of the placeholder's, every other byte
// of raw kept), and the paths of the values put back, in rec's order.
// For a tool result stored at the source (a "tc-" record) its content is
// put back in place of any content holding the record's placeholder, as
// the write-back does. raw is not changed; when nothing is put back, the
// line returned is raw itself. A stored value whose bytes do not match
// their hash stays a placeholder: the line returned has every other value
// back, and the error (wrapping bs.ErrCorrupt) names the ones left.
func PutBack(raw []byte, rec *extract.Record) ([]byte, []string, error) {
	le := &lineEdit{id: rec.EntryID, orig: raw, cur: raw}
	var paths []string
	var errs []error
	source := extract.IsSourceKey(rec.EntryID)
	for _, v := range rec.Values {
		cur, ok := le.value(v.Path)
		if !ok {
			continue
		}
		if !holdsPlaceholder(v, cur) && !(source && v.Path == extract.SourceContentPath && extract.IsPlaceholderValue(cur, rec.EntryID)) {
			continue
		}
		orig, err := v.Bytes()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if le.replace(v.Path, orig) {
			paths = append(paths, v.Path)
		}
	}
	return le.cur, paths, errors.Join(errs...)
}

// holdsPlaceholder reports whether cur, the current bytes at a stored
// value's path, is the placeholder that replaced it. A value of the first
// BrainSurgeon (no recorded placeholder) counts as extracted when cur is a
// string starting with "[[extracted".
func holdsPlaceholder(v extract.StoredValue, cur []byte) bool {
	if v.Placeholder != "" {
		return bytes.Equal(cur, []byte(v.Placeholder))
	}
	return bytes.HasPrefix(cur, []byte(`"[[extracted`))
}
