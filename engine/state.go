package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// stateVersion is the format of the state files this package writes.
const stateVersion = 1

// statePath returns the state file of the session ref,
// <StateDir>/engine/<agent>/<sessionId>.json (<agent> is "~pi" for a
// session of no agent, as pi's are), after checking the agent (an id of
// kind bs.IDName) and the session id (bs.IDSessionFile: it becomes a file
// name). The error wraps bs.ErrInvalid.
func (e *Engine) statePath(ref bs.SessionRef) (string, error) {
	if e.StateDir == "" {
		return "", fmt.Errorf("engine state of %s: expected a state directory, found none set: %w", ref, bs.ErrInvalid)
	}
	agent := ref.Agent
	if agent == "" {
		// A session of no agent (pi's): a directory no agent name can
		// take ('~' is not allowed in one).
		agent = noAgentDir
	} else if err := bs.IDName.Check(agent); err != nil {
		return "", fmt.Errorf("engine state of %s: agent: %w", ref, err)
	}
	if err := bs.IDSessionFile.Check(ref.ID); err != nil {
		return "", fmt.Errorf("engine state of %s: %w", ref, err)
	}
	return filepath.Join(e.StateDir, "engine", agent, ref.ID+".json"), nil
}

// noAgentDir is the directory of the states of sessions that belong to no
// agent (pi's sessions), under <state dir>/engine.
const noAgentDir = "~pi"

// newState returns the empty state of a session the engine has not served.
func newState() *State {
	return &State{Version: stateVersion, Collapsed: map[string]Collapsed{}, Restored: map[string]time.Time{}}
}

// loadState reads the session's state. A session without a state file has
// the empty state; so has one whose file does not parse or is of another
// version, which is logged as a warning (losing the state loses
// decisions, never data, and must not block a turn). The maps of the
// state returned are never nil. The error says why the ids are not
// acceptable (wrapping bs.ErrInvalid) or why the file could not be read.
func (e *Engine) loadState(ref bs.SessionRef) (*State, error) {
	path, err := e.statePath(ref)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine state of %s: %w", ref, err)
	}
	return e.decodeState(ref, path, b)
}

// decodeState decodes the state file b of ref (at path) and applies its
// journal.
func (e *Engine) decodeState(ref bs.SessionRef, path string, b []byte) (*State, error) {
	st := &State{}
	if err := json.Unmarshal(b, st); err != nil {
		e.log().Warn("engine state file does not parse; the session starts from an empty state", "session", ref.String(), "file", path, "err", err)
		return newState(), nil
	}
	if st.Version != stateVersion {
		e.log().Warn("engine state file of another version; the session starts from an empty state", "session", ref.String(), "file", path,
			"expected_version", stateVersion, "found_version", st.Version)
		return newState(), nil
	}
	st.ensureMaps()
	if st.Journal != "" {
		j, err := os.ReadFile(journalPath(path))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("engine state of %s: %w", ref, err)
		}
		st.replay(j)
	}
	return st, nil
}

// ensureMaps makes the state's maps when they are nil.
func (st *State) ensureMaps() {
	if st.Collapsed == nil {
		st.Collapsed = map[string]Collapsed{}
	}
	if st.Restored == nil {
		st.Restored = map[string]time.Time{}
	}
}

// saveState writes the session's state atomically (the file 0600, its
// directories 0700). With ReadOnly set it writes nothing and returns nil.
func (e *Engine) saveState(ref bs.SessionRef, st *State) error {
	if e.ReadOnly {
		return nil
	}
	path, err := e.statePath(ref)
	if err != nil {
		return err
	}
	if st.Version == 0 {
		st.Version = stateVersion
	}
	if n := len(st.Turns); n > MaxTurns {
		st.Turns = append([]Turn(nil), st.Turns[n-MaxTurns:]...)
	}
	// A new journal for the views served after this file.
	var name [6]byte
	_, _ = rand.Read(name[:])
	st.Journal = hex.EncodeToString(name[:])
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("engine state of %s: encode: %w", ref, err)
	}
	dir := filepath.Dir(path)
	for _, d := range []string{filepath.Join(e.StateDir, "engine"), dir} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return fmt.Errorf("engine state of %s: %w", ref, err)
			}
		}
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("engine state of %s: %w", ref, err)
	}
	// The old journal belongs to the old file; a journal left behind by a
	// failed removal names another file and is not applied.
	if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		e.log().Debug("engine: an old state journal is left behind", "session", ref.String(), "err", err)
	}
	return nil
}

// Serves reports whether the engine served a view of the session within
// the last d. While it does, the session's summaries live in the engine's
// view: a compaction written into the transcript as well would summarize
// the same history twice, so the daemon's automatic compaction leaves such
// a session to the engine. A session whose state cannot be read is not
// served.
func (e *Engine) Serves(ref bs.SessionRef, d time.Duration) bool {
	st, err := e.loadState(ref)
	if err != nil || len(st.Turns) == 0 {
		return false
	}
	return e.now().Sub(st.Turns[len(st.Turns)-1].At) < d
}

// statusCache keeps the Status of each state file read, by its size,
// modification time and identity (the file is replaced by a rename), so
// that listing many sessions does not parse every state file each time.
type statusCache struct {
	mu sync.Mutex
	m  map[string]cachedStatus
}

// cachedStatus is one state file's Status (without its risk and warning,
// which depend on the settings) and the stamp it was read at.
type cachedStatus struct {
	size int64
	mod  time.Time
	fi   fs.FileInfo // the file's identity (os.SameFile)
	// journal is the stamp of the file's journal.
	journal fileStamp
	st      Status
}

// maxCachedStatuses bounds the cache; it is emptied when full.
const maxCachedStatuses = 20_000

// statuses is the process's cache of state files' statuses.
var statuses = statusCache{m: map[string]cachedStatus{}}

// get returns the status cached for path when fi is the stamp it was
// read at (same size, modification time and file). The status is a copy: its Last and View are the cache's own
// values copied again.
func (c *statusCache) get(path string, fi fs.FileInfo, journal fileStamp) (Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	// The file is replaced by a rename: a write of the same size within
	// the clock's resolution is told by the file's identity.
	if !ok || e.size != fi.Size() || !e.mod.Equal(fi.ModTime()) || !os.SameFile(e.fi, fi) || !e.journal.same(journal) {
		return Status{}, false
	}
	return e.st.clone(), true
}

// put caches st for path at the stamp fi.
func (c *statusCache) put(path string, fi fs.FileInfo, journal fileStamp, st Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedStatuses {
		c.m = map[string]cachedStatus{}
	}
	c.m[path] = cachedStatus{size: fi.Size(), mod: fi.ModTime(), fi: fi, journal: journal, st: st.clone()}
}

// clone returns st with its own copies of Last, View and LastViews.
func (st Status) clone() Status {
	if st.Last != nil {
		l := *st.Last
		l.Layers = append([]string(nil), l.Layers...)
		st.Last = &l
	}
	if st.LastViews != nil {
		lv := make([]Turn, len(st.LastViews))
		for i, t := range st.LastViews {
			t.Layers = append([]string(nil), t.Layers...)
			lv[i] = t
		}
		st.LastViews = lv
	}
	if st.View != nil {
		v := *st.View
		st.View = &v
	}
	return st
}

// SavedState returns the state the engine saved for the session ref: its
// state file with its journal applied, as the next call of a restarted
// daemon reads it (the empty state when there is none). It reads files
// only, never the session, and is meant for tools and tests that inspect
// the engine's decisions; the error says why the ids are not acceptable
// (wrapping bs.ErrInvalid) or why the file could not be read.
func (e *Engine) SavedState(ref bs.SessionRef) (State, error) {
	st, err := e.loadState(ref)
	if err != nil {
		return State{}, err
	}
	return *st, nil
}
