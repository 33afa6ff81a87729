package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon"
)

// minPrefix is the shortest session id prefix ResolveRef accepts: the
// first group of a uuid.
const minPrefix = 8

// maxListed is how many names a not-found error lists.
const maxListed = 20

// ResolveRef finds the session a user named among refs, the sessions of one
// store (any backend). It is the one resolver of the package:
// Discovery.Resolve and Store.Resolve call it with the sessions they
// discovered, and another backend can call it with its own refs. The name
// may be:
//   - a path, absolute or relative to the working directory, or any trailing
//     part of a ref's Path on element boundaries (so a path relative to the
//     agents dir works: "main/sessions/<id>.jsonl"). A name is taken as a
//     path when it is absolute, starts with "./", "../" or "~/", holds
//     ".jsonl", or holds two or more "/". It must be the Path of a ref (a
//     sidecar such as a lock or an archive is not found), and of one ref
//     only: a path several refs share (a database holding many sessions) is
//     ambiguous;
//   - a session key ("agent:main:main") or a suffix of one on ":" boundaries
//     ("main:main", "direct:8072905176"); any name holding ":" is a key;
//   - "agent/sessionId" (for pi, "<project dir>/<uuid>": the agent part of a
//     ref without Agent is its Label);
//   - a session id alone, when only one agent has it.
//
// A session id may also be the file stem of a ref whose Path is a ".jsonl"
// transcript, or a prefix of at least 8 characters of either when that
// prefix is unique; an exact match always wins over a prefix.
//
// keys returns every key that names a ref, its primary key first (see
// Discovery.Keys); nil, or a nil result, means the ref's Key alone.
//
// Errors wrap brainsurgeon.ErrInvalid for an unusable name (empty, control
// characters or NUL, "." or ".." as an agent or id, a ".." path that is not
// a ref's), brainsurgeon.ErrAmbiguous listing every candidate, or
// brainsurgeon.ErrNotFound saying what was expected and listing up to 20
// sessions that exist.
func ResolveRef(refs []brainsurgeon.SessionRef, name string, keys func(brainsurgeon.SessionRef) []string) (brainsurgeon.SessionRef, error) {
	r := resolver{refs: refs, keys: keys}
	return r.resolve(name)
}

type resolver struct {
	refs []brainsurgeon.SessionRef
	keys func(brainsurgeon.SessionRef) []string // nil means only SessionRef.Key
}

func (r *resolver) keysOf(ref brainsurgeon.SessionRef) []string {
	if r.keys != nil {
		if k := r.keys(ref); k != nil {
			return k
		}
	}
	if ref.Key != "" {
		return []string{ref.Key}
	}
	return nil
}

func (r *resolver) resolve(name string) (brainsurgeon.SessionRef, error) {
	if err := checkName(name); err != nil {
		return brainsurgeon.SessionRef{}, err
	}
	switch {
	case isPathName(name):
		return r.byPath(name)
	case strings.Contains(name, ":"):
		return r.byKey(name)
	case strings.Contains(name, "/"):
		return r.byAgentID(name)
	default:
		return r.byID(name)
	}
}

func checkName(name string) error {
	if strings.TrimSpace(name) == "" {
		return errorf(brainsurgeon.ErrInvalid, "empty session name: expected agent/sessionId, a session id, a session key or a transcript path")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return errorf(brainsurgeon.ErrInvalid, "session name %q contains a NUL byte", name)
	}
	if !utf8.ValidString(name) {
		return errorf(brainsurgeon.ErrInvalid, "session name %q is not valid UTF-8", name)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return errorf(brainsurgeon.ErrInvalid, "session name %q contains a control character", name)
	}
	return nil
}

func isPathName(name string) bool {
	return filepath.IsAbs(name) || name == "~" ||
		strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "~/") ||
		strings.Contains(name, ".jsonl") || strings.Count(name, "/") >= 2
}

func hasDotDot(name string) bool {
	return slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), "..")
}

func (r *resolver) byPath(name string) (brainsurgeon.SessionRef, error) {
	// onePath returns the one ref found, or an error when several refs
	// share the path; ok is false when none matched.
	onePath := func(found []brainsurgeon.SessionRef) (ref brainsurgeon.SessionRef, ok bool, err error) {
		switch len(found) {
		case 0:
			return ref, false, nil
		case 1:
			return found[0], true, nil
		}
		return ref, true, r.ambiguous(fmt.Sprintf("path %q", name), found, true)
	}
	p := expandHome(name)
	abs, err := filepath.Abs(p)
	if err == nil {
		var found []brainsurgeon.SessionRef
		for _, ref := range r.refs {
			if ref.Path == abs {
				found = append(found, ref)
			}
		}
		if ref, ok, err := onePath(found); ok {
			return ref, err
		}
	}
	dotdot := hasDotDot(name)
	if !filepath.IsAbs(p) && !dotdot {
		suffix := string(filepath.Separator) + filepath.Clean(p)
		var found []brainsurgeon.SessionRef
		for _, ref := range r.refs {
			if strings.HasSuffix(ref.Path, suffix) {
				found = append(found, ref)
			}
		}
		if ref, ok, err := onePath(found); ok {
			return ref, err
		}
	}
	// The same file under another spelling (symbolic links, bind mounts).
	if err == nil {
		if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
			var found []brainsurgeon.SessionRef
			for _, ref := range r.refs {
				if rfi, err := os.Stat(ref.Path); err == nil && os.SameFile(fi, rfi) {
					found = append(found, ref)
				}
			}
			if ref, ok, err := onePath(found); ok {
				return ref, err
			}
		}
	}
	if dotdot {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrInvalid,
			"session path %q contains a .. element and is not a discovered transcript", name)
	}
	if k := ClassifyFile(name); k != FileKindTranscript && k != FileKindOther {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
			"%q is not a session: a %s file name, not a live transcript (<sessionId>.jsonl); sessions: %s",
			name, k, r.list(r.refs))
	}
	if fi, serr := os.Stat(p); serr == nil && fi.Mode().IsRegular() {
		if terr := IsTranscript(p); errors.Is(terr, ErrNotTranscript) {
			return brainsurgeon.SessionRef{}, terr
		}
	}
	return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
		"no session at path %q: expected the path of a discovered transcript (absolute, relative to the working directory or to the agents dir); sessions: %s",
		name, r.list(r.refs))
}

func (r *resolver) byKey(name string) (brainsurgeon.SessionRef, error) {
	var exact, suffix []brainsurgeon.SessionRef
	var allKeys []string
	for _, ref := range r.refs {
		var isExact, isSuffix bool
		for _, k := range r.keysOf(ref) {
			allKeys = append(allKeys, k)
			switch {
			case k == name:
				isExact = true
			case strings.HasSuffix(k, ":"+name):
				isSuffix = true
			}
		}
		if isExact {
			exact = append(exact, ref)
		}
		if isSuffix {
			suffix = append(suffix, ref)
		}
	}
	for _, found := range [][]brainsurgeon.SessionRef{exact, suffix} {
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return brainsurgeon.SessionRef{}, r.ambiguous(fmt.Sprintf("session key %q", name), found, false)
		}
	}
	slices.Sort(allKeys)
	allKeys = slices.Compact(allKeys)
	return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
		"no session key %q and no key ending in %q: expected a session key with a transcript (agent:main:main) or a unique suffix of one on \":\" boundaries (main:main); keys: %s",
		name, ":"+name, listStrings(allKeys))
}

func (r *resolver) byAgentID(name string) (brainsurgeon.SessionRef, error) {
	agent, id, _ := strings.Cut(name, "/")
	if brainsurgeon.CheckSegment(agent) != nil {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrInvalid, "session name %q: %q is not a valid agent name", name, agent)
	}
	if brainsurgeon.CheckSegment(id) != nil {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrInvalid, "session name %q: %q is not a valid session id", name, id)
	}
	var mine []brainsurgeon.SessionRef
	for _, ref := range r.refs {
		if agentOf(ref) == agent {
			mine = append(mine, ref)
		}
	}
	if len(mine) == 0 {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
			"no session %q: no agent %q has sessions; expected agent/sessionId with one of the agents %s",
			name, agent, listStrings(r.agents()))
	}
	ref, found, err := r.matchID(mine, id, name)
	if err != nil || found {
		return ref, err
	}
	return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
		"no session %q: agent %q has no session id %q (or one starting with it, %d characters or more); its sessions: %s",
		name, agent, id, minPrefix, r.list(mine))
}

func (r *resolver) byID(name string) (brainsurgeon.SessionRef, error) {
	if brainsurgeon.CheckSegment(name) != nil {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrInvalid, "session name %q is not a valid session id", name)
	}
	ref, found, err := r.matchID(r.refs, name, name)
	if err != nil || found {
		return ref, err
	}
	if slices.Contains(r.agents(), name) {
		return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
			"%q is an agent, not a session: name one of its sessions as %s/<sessionId>; sessions: %s",
			name, name, r.list(r.refs))
	}
	return brainsurgeon.SessionRef{}, errorf(brainsurgeon.ErrNotFound,
		"no session %q: expected agent/sessionId, a session id (or a unique prefix of %d characters or more), a session key or a transcript path; sessions: %s",
		name, minPrefix, r.list(r.refs))
}

// matchID finds id among refs: an exact id or file stem first, then a
// prefix of at least minPrefix characters.
func (r *resolver) matchID(refs []brainsurgeon.SessionRef, id, name string) (brainsurgeon.SessionRef, bool, error) {
	var exact, prefix []brainsurgeon.SessionRef
	for _, ref := range refs {
		stem, isTranscript := strings.CutSuffix(filepath.Base(ref.Path), ".jsonl")
		if !isTranscript {
			stem = "" // a database or another store: no file stem names the session
		}
		switch {
		case ref.ID == id || stem == id:
			exact = append(exact, ref)
		case len(id) >= minPrefix && (strings.HasPrefix(ref.ID, id) || strings.HasPrefix(stem, id)):
			prefix = append(prefix, ref)
		}
	}
	for _, found := range [][]brainsurgeon.SessionRef{exact, prefix} {
		if len(found) == 1 {
			return found[0], true, nil
		}
		if len(found) > 1 {
			return brainsurgeon.SessionRef{}, false, r.ambiguous(fmt.Sprintf("session %q", name), found, false)
		}
	}
	return brainsurgeon.SessionRef{}, false, nil
}

// agentOf is the agent part of a session's "agent/sessionId" name: the
// agent, or for pi the project dir.
func agentOf(ref brainsurgeon.SessionRef) string {
	if ref.Agent == "" {
		return ref.Label
	}
	return ref.Agent
}

func displayName(ref brainsurgeon.SessionRef) string {
	if a := agentOf(ref); a != "" {
		return a + "/" + ref.ID
	}
	return ref.ID
}

func (r *resolver) agents() []string {
	var out []string
	for _, ref := range r.refs {
		if a := agentOf(ref); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

func (r *resolver) describe(ref brainsurgeon.SessionRef, withPath bool) string {
	s := displayName(ref)
	if k := r.keysOf(ref); len(k) > 0 {
		s += " (" + strings.Join(k, ", ") + ")"
	}
	if withPath {
		s += " at " + ref.Path
	}
	return s
}

func (r *resolver) ambiguous(what string, found []brainsurgeon.SessionRef, withPath bool) error {
	names := make([]string, len(found))
	for i, ref := range found {
		names[i] = r.describe(ref, withPath)
	}
	return errorf(brainsurgeon.ErrAmbiguous, "%s is ambiguous: it matches %d sessions: %s; name one as agent/sessionId or by its full key or path",
		what, len(found), strings.Join(names, "; "))
}

// list names up to maxListed sessions for an error message.
func (r *resolver) list(refs []brainsurgeon.SessionRef) string {
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = displayName(ref)
		if ref.Key != "" {
			names[i] += " (" + ref.Key + ")"
		}
	}
	return listStrings(names)
}

func listStrings(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
}
