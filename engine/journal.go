package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// The bounds of a state journal: past them the next view writes the state
// file whole and starts a new journal.
const (
	maxJournalRecords = 256
	maxJournalBytes   = 1 << 20
)

// journalPath is the journal of the state file path:
// <sessionId>.journal beside <sessionId>.json.
func journalPath(path string) string {
	return strings.TrimSuffix(path, ".json") + ".journal"
}

// journalRecord is one view's changes to the state, appended to the
// journal as one line: the turns added or changed, the small members
// whole, and the changes of the maps.
type journalRecord struct {
	// Journal is the name of the journal (State.Journal) it belongs to.
	Journal       string      `json:"journal"`
	Turns         []Turn      `json:"turns,omitempty"`
	Calibration   Calibration `json:"calibration"`
	PrefixChanges int         `json:"prefix_changes"`
	Compactions   int         `json:"compactions"`
	Expanded      []string    `json:"expanded,omitempty"`
	PutBack       []string    `json:"put_back,omitempty"`
	// The entries of Collapsed, Restored and HostSizes set, and those
	// removed.
	Collapsed    map[string]Collapsed `json:"collapsed,omitempty"`
	Uncollapsed  []string             `json:"uncollapsed,omitempty"`
	Restored     map[string]time.Time `json:"restored,omitempty"`
	Unrestored   []string             `json:"unrestored,omitempty"`
	HostSizes    map[string]HostSize  `json:"host_sizes,omitempty"`
	HostSizesDel []string             `json:"host_sizes_removed,omitempty"`
}

// replay applies the records of the journal j that belong to st's file,
// in order; it stops at a line that does not parse (a write cut short).
func (st *State) replay(j []byte) {
	for len(j) > 0 {
		line := j
		if i := bytes.IndexByte(j, '\n'); i >= 0 {
			line, j = j[:i], j[i+1:]
		} else {
			j = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r journalRecord
		if json.Unmarshal(line, &r) != nil {
			return
		}
		if r.Journal != st.Journal {
			continue
		}
		st.apply(&r)
	}
}

// apply applies one journal record to st.
func (st *State) apply(r *journalRecord) {
	for _, t := range r.Turns {
		i := len(st.Turns) - 1
		for i >= 0 && st.Turns[i].N > t.N {
			i--
		}
		if i >= 0 && st.Turns[i].N == t.N {
			st.Turns[i] = t
		} else {
			st.Turns = append(st.Turns, t)
		}
	}
	if n := len(st.Turns); n > MaxTurns {
		st.Turns = append([]Turn(nil), st.Turns[n-MaxTurns:]...)
	}
	st.Calibration, st.PrefixChanges, st.Compactions = r.Calibration, r.PrefixChanges, r.Compactions
	st.Expanded, st.PutBack = r.Expanded, r.PutBack
	st.ensureMaps()
	maps.Copy(st.Collapsed, r.Collapsed)
	for _, id := range r.Uncollapsed {
		delete(st.Collapsed, id)
	}
	maps.Copy(st.Restored, r.Restored)
	for _, id := range r.Unrestored {
		delete(st.Restored, id)
	}
	if len(r.HostSizes) > 0 && st.HostSizes == nil {
		st.HostSizes = map[string]HostSize{}
	}
	maps.Copy(st.HostSizes, r.HostSizes)
	for _, id := range r.HostSizesDel {
		delete(st.HostSizes, id)
	}
}

// fileStamp is what tells a file changed: its size, modification time and
// identity; the zero stamp is a file that does not exist.
type fileStamp struct {
	exists bool
	size   int64
	mod    time.Time
	fi     fs.FileInfo
}

func stampFile(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{exists: true, size: fi.Size(), mod: fi.ModTime(), fi: fi}, nil
}

func (a fileStamp) same(b fileStamp) bool {
	if !a.exists || !b.exists {
		return a.exists == b.exists
	}
	return a.size == b.size && a.mod.Equal(b.mod) && os.SameFile(a.fi, b.fi)
}

// stateStamp is the stamp of a state file and of its journal.
type stateStamp struct {
	file, journal fileStamp
}

func stampState(path string) (stateStamp, error) {
	f, err := stampFile(path)
	if err != nil {
		return stateStamp{}, err
	}
	j, err := stampFile(journalPath(path))
	if err != nil {
		return stateStamp{}, err
	}
	return stateStamp{file: f, journal: j}, nil
}

func (a stateStamp) same(b stateStamp) bool { return a.file.same(b.file) && a.journal.same(b.journal) }

// savedState is what the state file and its journal hold of the state a
// session holds in memory: what the next journal record is the change
// from (with the keys of the maps changed since, State.track).
type savedState struct {
	journal   string
	records   int
	bytes     int
	summaries int
	lastTurn  int
	measured  map[int]int // turn → Measured, of the turns a view may still measure
}

// savedOf returns what st holds, just written or read, and starts
// tracking its changes.
func savedOf(st *State) *savedState {
	s := &savedState{journal: st.Journal, summaries: len(st.Summaries), measured: map[int]int{}}
	if n := len(st.Turns); n > 0 {
		s.lastTurn = st.Turns[n-1].N
	}
	for i := max(len(st.Turns)-measureScan-1, 0); i < len(st.Turns); i++ {
		s.measured[st.Turns[i].N] = st.Turns[i].Measured
	}
	st.track = &stateTrack{}
	return s
}

// stateFor returns the session's state: the one ss holds when its files
// are as it last read or wrote them, else read again. The caller holds
// ss.mu and may change the state; saveView saves it, dropView forgets it.
func (e *Engine) stateFor(ss *sessionState, ref bs.SessionRef) (*State, error) {
	path, err := e.statePath(ref)
	if err != nil {
		return nil, err
	}
	stamp, err := stampState(path)
	if err != nil {
		return nil, fmt.Errorf("engine state of %s: %w", ref, err)
	}
	if ss.st != nil && !e.noIncremental && !e.ReadOnly && stamp.same(ss.stamp) {
		return ss.st, nil
	}
	ss.st, ss.saved = nil, nil
	st, err := e.loadState(ref)
	if err != nil {
		return nil, err
	}
	// The stamp taken before the read: a write meanwhile reads it again.
	ss.st, ss.stamp, ss.saved = st, stamp, savedOf(st)
	return st, nil
}

// dropView forgets the state ss holds: the next call reads the file.
func (ss *sessionState) dropView() { ss.st, ss.saved = nil, nil }

// saveView saves the state of a view served: one journal record with
// what changed since the state was last written or read, or, when the
// summaries changed, the journal is full or the files are not as they
// were, the whole state file. With ReadOnly it writes nothing and forgets
// the state held (a view's decisions are not kept).
func (e *Engine) saveView(ss *sessionState, ref bs.SessionRef, st *State) error {
	if e.ReadOnly {
		ss.dropView()
		return nil
	}
	path, err := e.statePath(ref)
	if err != nil {
		return err
	}
	sv := ss.saved
	whole := sv == nil || ss.st != st || st.track == nil || e.noIncremental || st.Journal == "" || sv.journal != st.Journal ||
		sv.summaries != len(st.Summaries) || sv.records >= maxJournalRecords || sv.bytes >= maxJournalBytes
	if !whole {
		if now, err := stampState(path); err != nil || !now.same(ss.stamp) {
			whole = true
		}
	}
	if whole {
		if err := e.saveState(ref, st); err != nil {
			ss.dropView()
			return err
		}
		stamp, err := stampState(path)
		if err != nil {
			ss.dropView()
			return err
		}
		ss.st, ss.stamp, ss.saved = st, stamp, savedOf(st)
		return nil
	}
	r := sv.record(st)
	b, err := json.Marshal(r)
	if err != nil {
		ss.dropView()
		return fmt.Errorf("engine state of %s: encode: %w", ref, err)
	}
	b = append(b, '\n')
	f, err := os.OpenFile(journalPath(path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		ss.dropView()
		return fmt.Errorf("engine state of %s: %w", ref, err)
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		ss.dropView()
		return fmt.Errorf("engine state of %s: %w", ref, err)
	}
	stamp, err := stampState(path)
	if err != nil {
		ss.dropView()
		return fmt.Errorf("engine state of %s: %w", ref, err)
	}
	sv.records++
	sv.bytes += len(b)
	ss.stamp = stamp
	return nil
}

// record returns the journal record that takes the saved state to st, and
// updates s to st.
func (s *savedState) record(st *State) *journalRecord {
	r := &journalRecord{Journal: st.Journal, Calibration: st.Calibration, PrefixChanges: st.PrefixChanges,
		Compactions: st.Compactions, Expanded: st.Expanded, PutBack: st.PutBack}
	for i := max(len(st.Turns)-measureScan-1, 0); i < len(st.Turns); i++ {
		t := st.Turns[i]
		m, known := s.measured[t.N]
		if t.N > s.lastTurn || !known || m != t.Measured {
			r.Turns = append(r.Turns, t)
		}
	}
	if n := len(st.Turns); n > 0 {
		s.lastTurn = st.Turns[n-1].N
	}
	clear(s.measured)
	for i := max(len(st.Turns)-measureScan-1, 0); i < len(st.Turns); i++ {
		s.measured[st.Turns[i].N] = st.Turns[i].Measured
	}
	t := st.track
	for id := range t.collapsed {
		if v, ok := st.Collapsed[id]; ok {
			if r.Collapsed == nil {
				r.Collapsed = map[string]Collapsed{}
			}
			r.Collapsed[id] = v
		} else {
			r.Uncollapsed = append(r.Uncollapsed, id)
		}
	}
	for id := range t.restored {
		if v, ok := st.Restored[id]; ok {
			if r.Restored == nil {
				r.Restored = map[string]time.Time{}
			}
			r.Restored[id] = v
		} else {
			r.Unrestored = append(r.Unrestored, id)
		}
	}
	for id := range t.hostSizes {
		if v, ok := st.HostSizes[id]; ok {
			if r.HostSizes == nil {
				r.HostSizes = map[string]HostSize{}
			}
			r.HostSizes[id] = v
		} else {
			r.HostSizesDel = append(r.HostSizesDel, id)
		}
	}
	slices.Sort(r.Uncollapsed)
	slices.Sort(r.Unrestored)
	slices.Sort(r.HostSizesDel)
	*t = stateTrack{}
	return r
}

// stateTrack records the keys of a state's maps changed since it was last
// written or read: the next journal record holds them.
type stateTrack struct {
	collapsed, restored, hostSizes map[string]struct{}
}

func note(m *map[string]struct{}, id string) {
	if *m == nil {
		*m = map[string]struct{}{}
	}
	(*m)[id] = struct{}{}
}

// setCollapsed, delCollapsed, setRestored, delRestored, setHostSize and
// delHostSize change the state's maps: every change of a state that a
// journal record may save goes through them.
func (st *State) setCollapsed(id string, c Collapsed) {
	st.Collapsed[id] = c
	if st.track != nil {
		note(&st.track.collapsed, id)
	}
	st.mirror.collapsedChanged(st, id, true)
}

func (st *State) delCollapsed(id string) {
	if _, ok := st.Collapsed[id]; !ok {
		return
	}
	delete(st.Collapsed, id)
	if st.track != nil {
		note(&st.track.collapsed, id)
	}
	st.mirror.collapsedChanged(st, id, false)
}

func (st *State) setRestored(id string, at time.Time) {
	st.Restored[id] = at
	if st.track != nil {
		note(&st.track.restored, id)
	}
	st.mirror.logChange(st, id)
}

func (st *State) delRestored(id string) {
	if _, ok := st.Restored[id]; !ok {
		return
	}
	delete(st.Restored, id)
	if st.track != nil {
		note(&st.track.restored, id)
	}
	st.mirror.logChange(st, id)
}

func (st *State) setHostSize(id string, h HostSize) {
	if st.HostSizes == nil {
		st.HostSizes = map[string]HostSize{}
	}
	st.HostSizes[id] = h
	if st.track != nil {
		note(&st.track.hostSizes, id)
	}
	st.mirror.logChange(st, id)
}

func (st *State) delHostSize(id string) {
	if _, ok := st.HostSizes[id]; !ok {
		return
	}
	delete(st.HostSizes, id)
	if st.track != nil {
		note(&st.track.hostSizes, id)
	}
	st.mirror.logChange(st, id)
}

// collapsed reports whether the id of context message k of c is in
// st.Collapsed, from c's mirror of it (see mirrorOf).
func (c *viewCache) collapsed(st *State, k int) bool {
	if c.hot[k].dup {
		_, ok := st.Collapsed[c.sm[k].id]
		return ok
	}
	c.mirrorOf(st)
	return c.coll[k]
}

// mirrorOf makes c.coll tell, for each context message, whether its id is
// in st.Collapsed (for a message whose id another one has too, whether it
// is the one byID names): st's changes keep it up to date from then on.
func (c *viewCache) mirrorOf(st *State) {
	if st.mirror == c && c.collFor == st && len(c.coll) <= len(c.sm) {
		// Messages appended since are new ids, none collapsed.
		for len(c.coll) < len(c.sm) {
			c.coll = append(c.coll, false)
		}
		return
	}
	c.coll = c.coll[:0]
	for range c.sm {
		c.coll = append(c.coll, false)
	}
	for id := range st.Collapsed {
		if k, ok := c.byID[id]; ok {
			c.coll[k] = true
		}
	}
	c.collFor, st.mirror = st, c
	c.mirrorGen++
}

// collapsedChanged updates the mirror of c for a change of id in
// Collapsed.
func (c *viewCache) collapsedChanged(st *State, id string, in bool) {
	if c == nil || c.collFor != st {
		return
	}
	if k, ok := c.byID[id]; ok && k < len(c.coll) {
		c.coll[k] = in
	}
	c.logChange(st, id)
}
