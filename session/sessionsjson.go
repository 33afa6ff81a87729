package session

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// storeKey is one sessions.json entry naming a transcript.
type storeKey struct {
	name  string
	entry storeEntry
}

// storeEntry holds the few sessions.json entry fields discovery uses;
// the others are ignored.
type storeEntry struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
	Status      string `json:"status"`
	Label       string `json:"label"`
	DisplayName string `json:"displayName"`
	// Checkpoints are the files the entry's compactionCheckpoints name
	// (each checkpoint's preCompaction and postCompaction sessionFile).
	Checkpoints checkpointFiles `json:"compactionCheckpoints"`
}

// checkpointFiles are the session files an entry's compactionCheckpoints
// name. Its decoding never fails: a value of another shape names none,
// and the entry's other fields are still read.
type checkpointFiles []string

// UnmarshalJSON reads the sessionFile of each checkpoint's preCompaction
// and postCompaction object; anything else is ignored.
func (c *checkpointFiles) UnmarshalJSON(data []byte) error {
	var list []json.RawMessage
	if json.Unmarshal(data, &list) != nil {
		return nil
	}
	type side struct {
		SessionFile any `json:"sessionFile"`
	}
	for _, raw := range list {
		var cp struct {
			Pre  *side `json:"preCompaction"`
			Post *side `json:"postCompaction"`
		}
		if json.Unmarshal(raw, &cp) != nil {
			continue
		}
		for _, s := range []*side{cp.Pre, cp.Post} {
			if s == nil {
				continue
			}
			if f, ok := s.SessionFile.(string); ok && strings.TrimSpace(f) != "" && strings.IndexByte(f, 0) < 0 {
				*c = append(*c, strings.TrimSpace(f))
			}
		}
	}
	return nil
}

// parsedStore is a sessions.json file parsed: its entries in key order and
// the warnings about entries that could not be read.
type parsedStore struct {
	stamp    hostfile.Stamp
	keys     []storeKey
	warnings []error
	err      error // the file is not a JSON object
}

// storeCache keeps the last parse of each sessions.json, keyed by path and
// valid while the file's stamp (device, inode, size, modification time) is
// the same: a daemon tick over thousands of sessions then costs one stat per
// sessions.json instead of a parse. The host replaces the file by rename,
// which changes the inode.
var storeCache = struct {
	sync.Mutex
	m map[string]*parsedStore
}{m: map[string]*parsedStore{}}

// racyWindow is how old a sessions.json must be for its parse to be
// cached (as git treats "racily clean" index entries).
const racyWindow = 2 * time.Second

// maxStoreCache bounds storeCache; past it the cache starts afresh.
const maxStoreCache = 4096

// parseStore returns the parsed sessions.json at path, from the cache when
// the file did not change.
func parseStore(path string) (*parsedStore, error) {
	st, err := hostfile.Fingerprint(path)
	if err != nil {
		return nil, err
	}
	storeCache.Lock()
	p, ok := storeCache.m[path]
	storeCache.Unlock()
	if ok && p.stamp == st {
		return p, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p = &parsedStore{stamp: st}
	if st2, err := hostfile.Fingerprint(path); err != nil || st2 != st || int64(len(data)) != st.Size || racy(st) {
		// Changed while read, or written so recently that a rewrite of
		// the same size could keep the modification time (file times are
		// coarse): do not cache.
		p.stamp = hostfile.Stamp{}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		p.err = fmt.Errorf("session store %s is not a JSON object of session entries, keys ignored: %w", path, err)
	} else {
		for _, key := range slices.Sorted(maps.Keys(raw)) {
			var e storeEntry
			if err := json.Unmarshal(raw[key], &e); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) {
					if te.Field != "" {
						err = fmt.Errorf("field %q is a JSON %s, not a %s", te.Field, te.Value, te.Type)
					} else {
						err = fmt.Errorf("the entry is a JSON %s, not an object", te.Value)
					}
				}
				p.warnings = append(p.warnings, fmt.Errorf("session store %s: entry %q ignored: %w", path, key, err))
				continue
			}
			p.keys = append(p.keys, storeKey{name: key, entry: e})
		}
	}
	if p.stamp != (hostfile.Stamp{}) {
		storeCache.Lock()
		if len(storeCache.m) >= maxStoreCache {
			storeCache.m = map[string]*parsedStore{}
		}
		storeCache.m[path] = p
		storeCache.Unlock()
	}
	return p, nil
}

// readStore matches the keys of dir/sessions.json to transcripts.
func (s *scanner) readStore(agent, dir string) {
	path := filepath.Join(dir, "sessions.json")
	p, err := parseStore(path)
	if err != nil {
		s.warn(fmt.Errorf("read session store %s: %w", path, err))
		return
	}
	s.depStamp(path, p.stamp)
	if p.err != nil {
		s.warn(p.err)
		return
	}
	for _, w := range p.warnings {
		s.warn(w)
	}
	for _, k := range p.keys {
		e := k.entry
		p := s.storeFile(dir, e)
		if p == "" {
			s.log.Debug("session key has no transcript", "agent", agent, "key", k.name,
				"sessionId", e.SessionID, "sessionFile", e.SessionFile)
			continue
		}
		b := s.byPath[p]
		b.keys = append(b.keys, storeKey{name: k.name, entry: e})
	}
}

// storeFile returns the discovered transcript a store entry names, or "".
func (s *scanner) storeFile(dir string, e storeEntry) string {
	known := func(p string) bool { _, ok := s.byPath[p]; return ok }
	if f := e.SessionFile; f != "" && strings.IndexByte(f, 0) < 0 {
		p := filepath.Clean(f)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, f)
		}
		if known(p) {
			return p
		}
		base := f
		if i := strings.LastIndexAny(base, `/\`); i >= 0 {
			base = base[i+1:]
		}
		if ClassifyFile(base) == FileKindTranscript {
			if p := filepath.Join(dir, base); known(p) {
				return p
			}
		}
	}
	if id := e.SessionID; brainsurgeon.CheckSegment(id) == nil {
		if p := filepath.Join(dir, id+".jsonl"); known(p) {
			return p
		}
	}
	return ""
}

// finish orders the keys and fills the ref's key fields.
func (b *pending) finish() brainsurgeon.SessionRef {
	slices.SortFunc(b.keys, func(x, y storeKey) int {
		return cmp.Or(cmp.Compare(len(x.name), len(y.name)), cmp.Compare(x.name, y.name))
	})
	ref := b.ref
	for _, k := range b.keys {
		if ref.Key == "" {
			ref.Key = k.name
		}
		if ref.Label == "" {
			ref.Label = cmp.Or(k.entry.Label, k.entry.DisplayName)
		}
		if ref.Status == "" {
			ref.Status = k.entry.Status
		}
		if k.entry.Status == "running" {
			ref.Status = "running"
		}
	}
	return ref
}

func keyNames(keys []storeKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}
