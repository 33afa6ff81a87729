package session

import (
	"slices"
	"sync"
	"time"

	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// The discovery cache lets a long-running caller (the daemon's tick, the
// API's session list) list thousands of sessions for a few stats: a
// Discovery is kept with the stamps (device, inode, size, modification
// time) of everything it was built from (the root, every agent and
// sessions dir it listed, every sessions.json it parsed) and reused while
// all of them are unchanged. Adding, removing or renaming a transcript
// changes its directory's modification time; the host rewrites
// sessions.json by rename. A discovery is not cached when one of its
// inputs was written within racyWindow (file times are coarse, so a
// change that soon may not move them yet), when it met a symbolic link
// (its target is not tracked) or when it had a problem reading anything.

type dep struct {
	path  string
	stamp hostfile.Stamp
}

type cachedDiscovery struct {
	deps []dep
	d    *Discovery
}

var discoverCache = struct {
	sync.Mutex
	m map[string]*cachedDiscovery
}{m: map[string]*cachedDiscovery{}}

// maxDiscoverCache bounds discoverCache; past it the cache starts afresh.
const maxDiscoverCache = 64

// dep records the state of a directory the scan is about to read.
func (s *scanner) dep(path string) {
	if s.noCache {
		return
	}
	st, err := hostfile.Fingerprint(path)
	if err != nil || racy(st) {
		s.noCache = true
		return
	}
	s.deps = append(s.deps, dep{path, st})
}

// depStamp records the state of a file that was read (sessions.json).
func (s *scanner) depStamp(path string, st hostfile.Stamp) {
	if st == (hostfile.Stamp{}) || racy(st) {
		s.noCache = true
		return
	}
	s.deps = append(s.deps, dep{path, st})
}

// racy reports whether a file's state cannot be trusted to show its next
// change: it was written within racyWindow, or its time is ahead of the
// clock (clock skew, or a test's fake clock).
func racy(st hostfile.Stamp) bool {
	return time.Since(time.Unix(0, st.ModTime)) < racyWindow
}

// cachedDiscover returns a copy of the cached discovery of root when
// nothing it was built from changed.
func cachedDiscover(root string) *Discovery {
	discoverCache.Lock()
	c, ok := discoverCache.m[root]
	discoverCache.Unlock()
	if !ok {
		return nil
	}
	for _, d := range c.deps {
		st, err := hostfile.Fingerprint(d.path)
		if err != nil || st != d.stamp {
			return nil
		}
	}
	d := *c.d
	d.Sessions = slices.Clone(c.d.Sessions)
	d.Warnings = slices.Clone(c.d.Warnings)
	return &d
}

// keepDiscovery caches d for root when the scan allows it.
func (s *scanner) keepDiscovery(root string, d *Discovery) {
	if s.noCache || len(s.warnings) > 0 {
		return
	}
	c := &cachedDiscovery{deps: s.deps, d: &Discovery{Root: d.Root, Layout: d.Layout,
		Sessions: slices.Clone(d.Sessions), keys: d.keys, notTranscripts: d.notTranscripts}}
	discoverCache.Lock()
	if len(discoverCache.m) >= maxDiscoverCache {
		discoverCache.m = map[string]*cachedDiscovery{}
	}
	discoverCache.m[root] = c
	discoverCache.Unlock()
}

// knownTranscripts remembers the files IsTranscript accepted, by path,
// with the stamp it saw, so that a scan that misses the discovery cache
// (the host rewrote a sessions.json) does not read the head of every
// transcript again. A file's head does not change while the file is only
// appended to: the verdict is reused while the file keeps its device and
// inode and has not shrunk. A rewrite by rename (a new inode) or a
// truncation is read again; Open applies the rule itself in any case.
var knownTranscripts = struct {
	sync.Mutex
	m map[string]hostfile.Stamp
}{m: map[string]hostfile.Stamp{}}

// maxKnownTranscripts bounds knownTranscripts; past it the map starts
// afresh.
const maxKnownTranscripts = 1 << 16

// isTranscript is IsTranscript, answered from knownTranscripts when the
// file was accepted before and was only appended to since.
func isTranscript(path string) error {
	st, serr := hostfile.Fingerprint(path)
	if serr == nil && st.Inode != 0 {
		knownTranscripts.Lock()
		old, ok := knownTranscripts.m[path]
		knownTranscripts.Unlock()
		if ok && old.Dev == st.Dev && old.Inode == st.Inode && st.Size >= old.Size {
			return nil
		}
	}
	if err := IsTranscript(path); err != nil {
		return err
	}
	if serr == nil && st.Inode != 0 {
		knownTranscripts.Lock()
		if len(knownTranscripts.m) >= maxKnownTranscripts {
			clear(knownTranscripts.m)
		}
		knownTranscripts.m[path] = st
		knownTranscripts.Unlock()
	}
	return nil
}
