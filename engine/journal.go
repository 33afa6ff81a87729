package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
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
// from.
type savedState struct {
	journal    string
	records    int
	bytes      int
	summaries  int
	lastTurn   int
	measured   map[int]int // turn → Measured, of the turns a view may still measure
	collapsed  map[string]Collapsed
	restored   map[string]time.Time
	hostSizes  map[string]HostSize
	turnsCount int
}

// savedOf returns what st holds, just written or read.
func savedOf(st *State) *savedState {
	s := &savedState{journal: st.Journal, summaries: len(st.Summaries), collapsed: maps.Clone(st.Collapsed),
		restored: maps.Clone(st.Restored), hostSizes: maps.Clone(st.HostSizes), measured: map[int]int{}, turnsCount: len(st.Turns)}
	if n := len(st.Turns); n > 0 {
		s.lastTurn = st.Turns[n-1].N
	}
	for i := max(len(st.Turns)-measureScan-1, 0); i < len(st.Turns); i++ {
		s.measured[st.Turns[i].N] = st.Turns[i].Measured
	}
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
	whole := sv == nil || ss.st != st || e.noIncremental || st.Journal == "" || sv.journal != st.Journal ||
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
	r.Collapsed, r.Uncollapsed = diffMap(s.collapsed, st.Collapsed, func(a, b Collapsed) bool { return a.Chars == b.Chars && a.At.Equal(b.At) })
	r.Restored, r.Unrestored = diffMap(s.restored, st.Restored, func(a, b time.Time) bool { return a.Equal(b) })
	r.HostSizes, r.HostSizesDel = diffMap(s.hostSizes, st.HostSizes, func(a, b HostSize) bool { return a == b })
	if s.hostSizes == nil && len(r.HostSizes) > 0 {
		s.hostSizes = map[string]HostSize{}
	}
	maps.Copy(s.collapsed, r.Collapsed)
	for _, id := range r.Uncollapsed {
		delete(s.collapsed, id)
	}
	maps.Copy(s.restored, r.Restored)
	for _, id := range r.Unrestored {
		delete(s.restored, id)
	}
	maps.Copy(s.hostSizes, r.HostSizes)
	for _, id := range r.HostSizesDel {
		delete(s.hostSizes, id)
	}
	return r
}

// diffMap returns the entries of cur that saved does not hold (or holds
// otherwise), and the keys of saved that cur does not hold.
func diffMap[V any](saved, cur map[string]V, eq func(a, b V) bool) (set map[string]V, del []string) {
	for k, v := range cur {
		if sv, ok := saved[k]; !ok || !eq(sv, v) {
			if set == nil {
				set = map[string]V{}
			}
			set[k] = v
		}
	}
	if len(saved) != len(cur) || set != nil {
		for k := range saved {
			if _, ok := cur[k]; !ok {
				del = append(del, k)
			}
		}
	}
	return set, del
}
