package compact

import (
	"context"
	"fmt"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// DefaultStatusCacheSize is how many sessions a StatusCache made with
// size 0 remembers.
const DefaultStatusCacheSize = 4096

// StatusCache remembers the measured context of sessions, keyed by the
// store's Version of each transcript, so that asking again for the status
// of a session that did not change costs one stat (a UI polls it on every
// refresh). A transcript whose Version changed is measured again: a
// cached measurement is never served for another version. The thresholds
// and the window are applied on every call, so a changed config or host
// config shows at once. A StatusCache is safe for concurrent use; the nil
// *StatusCache caches nothing.
type StatusCache struct {
	mu   sync.Mutex
	size int
	m    map[string]cachedStatus
}

// cachedStatus is one session's measurement at one version.
type cachedStatus struct {
	v   bs.Version
	tok string
	m   measured
}

// NewStatusCache returns a cache of at most size sessions (0 means
// DefaultStatusCacheSize).
func NewStatusCache(size int) *StatusCache {
	if size <= 0 {
		size = DefaultStatusCacheSize
	}
	return &StatusCache{size: size, m: map[string]cachedStatus{}}
}

// tokKey names how tok counts, for the cache.
func tokKey(tok TokenOptions) string {
	return fmt.Sprintf("%s|%t", tokenizer(tok.Tokenizer).Name(), tok.Estimator != nil)
}

// Status returns the status of session ref of st, as [Status] reports it
// (a zero s means DefaultSettings). When st tells the transcript's
// version (Stat) and a measurement of that version with the same
// counting method is cached, nothing is read; otherwise the transcript is
// opened (index only), its current context measured, and the measurement
// cached under the version seen before the read (a transcript that
// changes during the read is measured again on the next call).
func (c *StatusCache) Status(ctx context.Context, st bs.Store, ref bs.SessionRef, s Settings, tok TokenOptions) (StatusReport, error) {
	s = settingsOr(s)
	var ver bs.Version
	if c != nil {
		if ss, err := st.Stat(ctx, ref); err == nil {
			ver = ss.Version
		}
	}
	key := tokKey(tok)
	if m, ok := c.get(ref, ver, key); ok {
		return judge(m, s, resolveWindow(tok.Window, ref, m.model, s)), nil
	}
	tr, err := st.Open(ctx, ref, nil)
	if err != nil {
		return StatusReport{}, fmt.Errorf("compact status: %w", err)
	}
	return c.StatusOf(ctx, tr, ver, s, tok)
}

// StatusOf returns the status of the opened transcript tr, as [Status]
// reports it, and caches its measurement under ver, the version of the
// transcript seen before tr was read (the zero Version caches nothing).
func (c *StatusCache) StatusOf(ctx context.Context, tr bs.Transcript, ver bs.Version, s Settings, tok TokenOptions) (StatusReport, error) {
	if tr == nil {
		return StatusReport{}, invalidf("compact status: no transcript")
	}
	s = settingsOr(s)
	v, err := load(ctx, tr, tok)
	if err != nil {
		return StatusReport{}, fmt.Errorf("compact status: %w", err)
	}
	m := measure(v)
	c.put(tr.Ref(), ver, tokKey(tok), m)
	return judge(m, s, resolveWindow(tok.Window, m.ref, m.model, s)), nil
}

func (c *StatusCache) get(ref bs.SessionRef, v bs.Version, tok string) (measured, bool) {
	if c == nil || v.IsZero() {
		return measured{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[ref.Identity()]
	if !ok || !e.v.Equal(v) || e.tok != tok {
		return measured{}, false
	}
	return e.m, true
}

func (c *StatusCache) put(ref bs.SessionRef, v bs.Version, tok string, m measured) {
	if c == nil || v.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id := ref.Identity()
	if _, ok := c.m[id]; !ok && len(c.m) >= c.size {
		for k := range c.m { // drop one session to make room
			delete(c.m, k)
			break
		}
	}
	c.m[id] = cachedStatus{v: v, tok: tok, m: m}
}
