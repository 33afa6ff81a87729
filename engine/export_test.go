package engine

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// MessagesOf runs messages with no request on the session's saved state,
// for the tests: each message's Index and Tokens, and the entries
// collapsed.
func (e *Engine) MessagesOf(ctx context.Context, tr bs.Transcript, ref bs.SessionRef) (index, tokens []int, collapsed []string, err error) {
	st, err := e.loadState(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, err := e.messages(ctx, tr, nil, st)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, m := range msgs {
		index, tokens = append(index, m.Index), append(tokens, m.Tokens)
	}
	for id := range st.Collapsed {
		collapsed = append(collapsed, id)
	}
	return index, tokens, collapsed, nil
}

// SetFull makes every call of e read the whole session and its state
// file: the full path, the reference of the incremental one.
func (e *Engine) SetFull(full bool) { e.noIncremental = full }

// SetIDSource makes the summary ids of e come from r.
func (e *Engine) SetIDSource(r io.Reader) { e.idRand = r }

// ResetCaches drops the cache and lock holder of every session whose
// state lives under one of dirs, as a restart of the daemon does.
func ResetCaches(dirs ...string) {
	sessions.mu.Lock()
	defer sessions.mu.Unlock()
	for k, ss := range sessions.m {
		for _, d := range dirs {
			if strings.HasPrefix(k, d+string(filepath.Separator)) {
				delete(sessions.m, k)
				caches.mu.Lock()
				delete(caches.held, ss)
				caches.mu.Unlock()
			}
		}
	}
}

// CacheStats returns how many context messages the session's cache holds
// (-1 for no cache).
func (e *Engine) CacheStats(ref bs.SessionRef) int {
	ss := e.session(ref)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.vc == nil {
		return -1
	}
	return len(ss.vc.sm)
}

// StateJSON returns the session's saved state (its file and journal) as
// JSON, without what differs between two engines by design: the journal's
// name and the time each view took.
func (e *Engine) StateJSON(ref bs.SessionRef) string {
	st, err := e.loadState(ref)
	if err != nil {
		return "error: " + err.Error()
	}
	st.Journal = ""
	for i := range st.Turns {
		st.Turns[i].ElapsedMS = 0
	}
	b, err := json.Marshal(st)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// CacheCounts returns how many calls were served from an extended cache
// and how many read the whole session.
func CacheCounts() (extended, read int64) {
	return cacheCounts.extended.Load(), cacheCounts.read.Load()
}

// SetEagerUsage sets how many of the newest messages a whole read reads
// the recorded usage of at once, and returns the previous count.
func SetEagerUsage(n int) int {
	old := eagerUsage
	eagerUsage = n
	return old
}

// Layer1Counts returns how many calls of layer 1 visited only the
// messages that changed and how many visited every message.
func Layer1Counts() (visited, whole int64) {
	return layer1Counts.visited.Load(), layer1Counts.whole.Load()
}
