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

	"github.com/brainsurgeon/brainsurgeon"
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
}

// readStore matches the keys of dir/sessions.json to transcripts.
func (s *scanner) readStore(agent, dir string) {
	path := filepath.Join(dir, "sessions.json")
	data, err := os.ReadFile(path)
	if err != nil {
		s.warn(fmt.Errorf("read session store %s: %w", path, err))
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		s.warn(fmt.Errorf("session store %s is not a JSON object of session entries, keys ignored: %w", path, err))
		return
	}
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
			s.warn(fmt.Errorf("session store %s: entry %q ignored: %w", path, key, err))
			continue
		}
		p := s.storeFile(dir, e)
		if p == "" {
			s.log.Debug("session key has no transcript", "agent", agent, "key", key,
				"sessionId", e.SessionID, "sessionFile", e.SessionFile)
			continue
		}
		b := s.byPath[p]
		b.keys = append(b.keys, storeKey{name: key, entry: e})
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
	if id := e.SessionID; validSegment(id) {
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
