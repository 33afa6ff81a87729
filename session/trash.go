package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
	"github.com/brainsurgeon/brainsurgeon/internal/jsonedit"
)

// linkEntry holds the sessions.json fields that link a session to the
// one it was forked or spawned from.
type linkEntry struct {
	SpawnedBy        string `json:"spawnedBy"`
	ParentSessionKey string `json:"parentSessionKey"`
	ParentSessionID  string `json:"parentSessionId"`
	ParentSession    string `json:"parentSession"`
}

// Family returns the files of ref and of the sessions forked or spawned
// from it, recursively, ref first: those whose header "parentSession"
// names the session, or whose sessions.json entry has "spawnedBy",
// "parentSessionKey", "parentSessionId" or "parentSession" naming one of
// its keys, its id or its transcript. Only sessions of ref's agent are
// children. It discovers afresh, and fails when ref has no transcript or
// the transcript cannot be stat'ed.
func (s *Store) Family(ctx context.Context, ref bs.SessionRef) ([]bs.SessionFiles, error) {
	if s == nil {
		return nil, errNoStore
	}
	d, err := DiscoverWith(ctx, s.Root, DiscoverOptions{})
	if err != nil {
		return nil, err
	}
	indexes := map[string]map[string]json.RawMessage{} // sessions.json path → entries
	load := func(p string) map[string]json.RawMessage {
		if m, ok := indexes[p]; ok {
			return m
		}
		var m map[string]json.RawMessage
		if data, err := os.ReadFile(p); err == nil {
			_ = json.Unmarshal(data, &m)
		}
		indexes[p] = m
		return m
	}
	mk := func(r bs.SessionRef, parent string) (bs.SessionFiles, error) {
		if r.Path == "" {
			return bs.SessionFiles{}, fmt.Errorf("session %s: no transcript path: %w", r, bs.ErrInvalid)
		}
		f := bs.SessionFiles{Ref: r, Parent: parent, Transcript: r.Path}
		fi, err := os.Stat(r.Path)
		if err != nil {
			return bs.SessionFiles{}, fmt.Errorf("session %s: %w", r, err)
		}
		f.TranscriptBytes = fi.Size()
		if sd, err := SideDir(r); err == nil {
			f.SideDir = sd
		}
		if keys := d.Keys(r); len(keys) > 0 {
			f.Index = filepath.Join(filepath.Dir(r.Path), "sessions.json")
			all := load(f.Index)
			f.Entries = map[string]string{}
			for _, k := range keys {
				if raw, ok := all[k]; ok {
					f.Entries[k] = string(raw)
				}
			}
		}
		return f, nil
	}
	root, err := mk(ref, "")
	if err != nil {
		return nil, err
	}
	out := []bs.SessionFiles{root}
	taken := map[string]bool{ref.Path: true}
	for i := 0; i < len(out); i++ {
		p := out[i]
		for _, c := range d.Sessions {
			if taken[c.Path] || (c.Backend != "" && c.Backend != bs.BackendJSONL) || c.Agent != p.Ref.Agent {
				continue
			}
			if !isChild(c, p, d.Keys(c), load) {
				continue
			}
			f, err := mk(c, p.Ref.ID)
			if err != nil {
				return nil, err
			}
			taken[c.Path] = true
			out = append(out, f)
		}
	}
	return out, nil
}

// isChild reports whether c was forked or spawned from p.
func isChild(c bs.SessionRef, p bs.SessionFiles, cKeys []string, load func(string) map[string]json.RawMessage) bool {
	names := func(s string) bool {
		if s == "" {
			return false
		}
		if s == p.Ref.ID || slices.Contains(slices.Collect(maps.Keys(p.Entries)), s) {
			return true
		}
		if filepath.Clean(s) == filepath.Clean(p.Transcript) {
			return true
		}
		base := s
		if i := strings.LastIndexAny(base, `/\`); i >= 0 {
			base = base[i+1:]
		}
		return strings.TrimSuffix(base, ".jsonl") == p.Ref.ID
	}
	if names(headerParent(c.Path)) {
		return true
	}
	if len(cKeys) == 0 {
		return false
	}
	all := load(filepath.Join(filepath.Dir(c.Path), "sessions.json"))
	for _, k := range cKeys {
		var e linkEntry
		if json.Unmarshal(all[k], &e) != nil {
			continue
		}
		if names(e.SpawnedBy) || names(e.ParentSessionKey) || names(e.ParentSessionID) || names(e.ParentSession) {
			return true
		}
	}
	return false
}

// headerParent returns the "parentSession" of a transcript's header line.
func headerParent(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return ""
	}
	var h struct {
		Type          string `json:"type"`
		ParentSession string `json:"parentSession"`
	}
	if json.Unmarshal(bytes.TrimSpace(line), &h) != nil || h.Type != "session" {
		return ""
	}
	return h.ParentSession
}

// LockFiles takes the host's lock of f's transcript without waiting, so
// that nobody writes it while it moves; unlock releases it.
func (s *Store) LockFiles(ctx context.Context, f bs.SessionFiles) (unlock func() error, err error) {
	if s == nil {
		return nil, errNoStore
	}
	l, err := hostfile.Acquire(ctx, f.Transcript, hostfile.LockOptions{Timeout: -1, Clock: s.Writer.Clock, Logger: s.Writer.Logger})
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// Move renames from to to, a transcript or a side directory moving out of
// its place or back into it: it makes to's parent, replaces an empty
// directory at to (a side directory made meanwhile), and syncs both
// parents.
func (s *Store) Move(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	if ents, err := os.ReadDir(to); err == nil && len(ents) == 0 {
		_ = os.Remove(to)
	}
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("move %s: %w", from, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(from))
}

// IndexEntries returns the entries of the index file (a sessions.json),
// key → the entry's JSON text; none when the file is missing or is not a
// JSON object.
func (s *Store) IndexEntries(index string) map[string]json.RawMessage {
	cur := map[string]json.RawMessage{}
	if data, err := os.ReadFile(index); err == nil {
		_ = json.Unmarshal(data, &cur)
	}
	return cur
}

// RemoveIndexEntries removes keys from an index file (a sessions.json) in
// one atomic rewrite and returns the removed entries' JSON text. The other
// bytes are unchanged; keys that are not there are skipped.
func (s *Store) RemoveIndexEntries(index string, keys []string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(index)
	if err != nil {
		return nil, fmt.Errorf("sessions.json: %w", err)
	}
	fi, err := os.Stat(index)
	if err != nil {
		return nil, fmt.Errorf("sessions.json: %w", err)
	}
	removed := map[string]json.RawMessage{}
	for _, k := range keys {
		_, vs, ve, ok := jsonedit.Member(data, "", k)
		if !ok {
			continue
		}
		removed[k] = json.RawMessage(bytes.Clone(data[vs:ve]))
		sp, err := jsonedit.Remove(data, "", k)
		if err != nil {
			return nil, fmt.Errorf("sessions.json %s: key %q: %w", index, k, err)
		}
		data = jsonedit.Apply(data, sp)
	}
	if len(removed) == 0 {
		return removed, nil
	}
	if err := atomicfile.WriteFile(index, data, fi.Mode().Perm()); err != nil {
		return nil, fmt.Errorf("sessions.json %s: %w", index, err)
	}
	return removed, nil
}

// AddIndexEntries inserts entries into an index file (a sessions.json,
// created when missing) in one atomic rewrite. A key already there is an
// error wrapping fs.ErrExist, and nothing is written then.
func (s *Store) AddIndexEntries(index string, entries map[string]json.RawMessage) error {
	if len(entries) == 0 {
		return nil
	}
	perm := os.FileMode(0o600)
	data, err := os.ReadFile(index)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(bytes.TrimSpace(data)) == 0):
		data = []byte("{}")
	case err != nil:
		return fmt.Errorf("sessions.json: %w", err)
	default:
		if fi, err := os.Stat(index); err == nil {
			perm = fi.Mode().Perm()
		}
	}
	for _, k := range slices.Sorted(maps.Keys(entries)) {
		if _, _, _, ok := jsonedit.Member(data, "", k); ok {
			return fmt.Errorf("sessions.json %s: key %q is already there: %w", index, k, fs.ErrExist)
		}
		sp, err := jsonedit.Insert(data, "", k, entries[k])
		if err != nil {
			return fmt.Errorf("sessions.json %s: key %q: %w", index, k, err)
		}
		data = jsonedit.Apply(data, sp)
	}
	if err := os.MkdirAll(filepath.Dir(index), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(index, data, perm)
}
