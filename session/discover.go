package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/brainsurgeon/brainsurgeon"
)

// DiscoverOptions tunes DiscoverWith.
type DiscoverOptions struct {
	// Logger receives a Warn record for each problem that did not stop
	// discovery (also kept in Discovery.Warnings) and Debug records for
	// store keys that have no transcript. Nil discards.
	Logger brainsurgeon.Logger
}

// Discovery is the result of DiscoverWith: a snapshot of the live sessions
// of one store.
type Discovery struct {
	// Root is the absolute directory that was scanned: the agents dir (the
	// "agents" dir inside the given root when it was given as ~/.openclaw)
	// or the pi sessions dir.
	Root string
	// Layout is the layout that was detected.
	Layout Layout
	// Sessions are the live sessions sorted by agent, then id, then path.
	// There is exactly one per transcript file.
	Sessions []brainsurgeon.SessionRef
	// Warnings are problems that did not stop discovery, such as a
	// sessions.json that is not valid JSON (its agent's transcripts are
	// still listed, as orphans) or a sessions directory that cannot be
	// read. Each names the file it is about.
	Warnings []error

	keys map[string][]string // transcript path → every key naming it, primary first
	// notTranscripts are the files with a transcript's name but not its
	// content (IsTranscript): path → why. Resolve names them when asked.
	notTranscripts map[string]error
}

// Keys returns every sessions.json key whose entry names ref's transcript,
// the primary key (ref.Key) first. It returns nil for an orphan transcript.
func (d *Discovery) Keys(ref brainsurgeon.SessionRef) []string {
	return slices.Clone(d.keys[ref.Path])
}

// Resolve finds one of d.Sessions by name with ResolveRef, by any of a
// session's keys, not only its primary one.
func (d *Discovery) Resolve(name string) (brainsurgeon.SessionRef, error) {
	ref, err := ResolveRef(d.Sessions, name, func(ref brainsurgeon.SessionRef) []string { return d.keys[ref.Path] })
	if errors.Is(err, brainsurgeon.ErrNotFound) && !isPathName(name) {
		// "agent/id" or "id" naming a file that is not a transcript: say
		// so rather than that no session has that id.
		agent, id, ok := strings.Cut(name, "/")
		if !ok {
			agent, id = "", name
		}
		for p, why := range d.notTranscripts {
			if filepath.Base(p) == id+".jsonl" && (agent == "" || filepath.Base(filepath.Dir(filepath.Dir(p))) == agent) {
				return brainsurgeon.SessionRef{}, why
			}
		}
	}
	return ref, err
}

// Discover lists the live sessions under root, sorted by agent, then id.
// It is DiscoverWith without a logger; problems that did not stop discovery
// are dropped (use DiscoverWith to see them).
func Discover(ctx context.Context, root string) ([]brainsurgeon.SessionRef, error) {
	d, err := DiscoverWith(ctx, root, DiscoverOptions{})
	if err != nil {
		return nil, err
	}
	return d.Sessions, nil
}

// DiscoverWith lists the live sessions under root. It only reads.
//
// Root may be:
//   - an OpenClaw agents dir: it holds agent dirs that have a sessions/ or an
//     agent/ subdirectory, or it is named "agents". An empty directory counts
//     as an agents dir with no sessions;
//   - an OpenClaw state dir (~/.openclaw): it has an agents/ subdirectory,
//     which is scanned instead;
//   - a pi sessions dir: it holds "--<cwd>--" project dirs.
//
// For OpenClaw every <agent>/sessions/*.jsonl transcript (ClassifyFile) is a
// session; subdirectories (extracted/, …) are not entered. Keys of the
// agent's sessions.json are matched to transcripts: the entry's sessionFile
// when it is a discovered transcript (stores written on another machine hold
// foreign absolute paths, so this rarely holds for backups), else the
// sessionFile's base name ("/" or "\" separated) in the agent's sessions
// dir, else "<sessionId>.jsonl" there. A key whose transcript does not exist
// is skipped (logged at Debug). When several keys name one transcript, the
// primary key (SessionRef.Key) is the shortest, ties broken by byte order,
// so "agent:main:main" wins over channel keys; all keys are available
// through Discovery.Keys. Label and Status come from the first key, in that
// order, that has a label (or displayName) and a status; Status is
// "running" if any key's entry says so. A transcript no key names is listed
// with an empty Key.
//
// For pi every transcript in a project dir is a session with Agent "", ID
// the uuid after the last "_" of the file stem, and Label the project dir
// name ("--home-u-proj--"), which also serves as the agent part of an
// "agent/sessionId" name.
//
// Errors: a missing root wraps fs.ErrNotExist; a root that is a file or a
// directory of neither layout wraps brainsurgeon.ErrInvalid and says what
// was expected and what was found.
func DiscoverWith(ctx context.Context, root string, opts DiscoverOptions) (*Discovery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(root) == "" {
		return nil, errorf(brainsurgeon.ErrInvalid, "no agents dir given: %s", expectedLayouts)
	}
	if strings.IndexByte(root, 0) >= 0 {
		return nil, errorf(brainsurgeon.ErrInvalid, "agents dir %q contains a NUL byte", root)
	}
	abs, err := filepath.Abs(expandHome(root))
	if err != nil {
		return nil, fmt.Errorf("agents dir %s: %w", root, err)
	}
	shown := root
	if shown != abs {
		shown = fmt.Sprintf("%s (%s)", root, abs)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errorf(errors.Join(brainsurgeon.ErrNotFound, fs.ErrNotExist), "agents dir %s does not exist", shown)
	case err != nil:
		return nil, fmt.Errorf("agents dir %s: %w", shown, err)
	case !fi.IsDir():
		return nil, errorf(brainsurgeon.ErrInvalid, "agents dir %s is a file, not a directory: %s", shown, expectedLayouts)
	}
	if d := cachedDiscover(abs); d != nil {
		return d, nil
	}
	s := &scanner{
		ctx:    ctx,
		log:    brainsurgeon.LoggerOrDiscard(opts.Logger),
		byPath: map[string]*pending{},
	}
	layout, dir, entries, err := s.detect(abs, shown)
	if err != nil {
		return nil, err
	}
	d := &Discovery{Root: dir, Layout: layout}
	switch layout {
	case LayoutPi:
		err = s.scanPi(dir, entries)
	default:
		err = s.scanOpenClaw(dir, entries)
	}
	if err != nil {
		return nil, err
	}
	d.Warnings = s.warnings
	d.notTranscripts = s.notTranscripts
	d.Sessions = make([]brainsurgeon.SessionRef, 0, len(s.byPath))
	for _, b := range s.byPath {
		d.Sessions = append(d.Sessions, b.finish())
		if len(b.keys) > 0 {
			if d.keys == nil {
				d.keys = map[string][]string{}
			}
			d.keys[b.ref.Path] = keyNames(b.keys)
		}
	}
	slices.SortFunc(d.Sessions, func(a, b brainsurgeon.SessionRef) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Path, b.Path))
	})
	s.keepDiscovery(abs, d)
	return d, nil
}

// expectedLayouts tells, in errors, what a root must be.
const expectedLayouts = "expected an OpenClaw agents dir (<agent>/sessions/*.jsonl) or a pi sessions dir (--<cwd>--/*.jsonl)"

// messageError is an error with its own message that wraps a sentinel.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }

func errorf(sentinel error, format string, args ...any) error {
	return &messageError{msg: fmt.Sprintf(format, args...), err: sentinel}
}

// scanner holds the state of one DiscoverWith call.
type scanner struct {
	ctx      context.Context
	log      brainsurgeon.Logger
	warnings []error
	byPath   map[string]*pending
	// notTranscripts are the files with a transcript's name but not its
	// content, path → IsTranscript's error.
	notTranscripts map[string]error
	// deps are the stamps of what the scan read, for the discovery
	// cache; noCache is set when the result must not be cached.
	deps    []dep
	noCache bool
}

// pending is a session being assembled.
type pending struct {
	ref  brainsurgeon.SessionRef
	keys []storeKey
}

func (s *scanner) warn(err error) {
	s.warnings = append(s.warnings, err)
	s.log.Warn("session discovery", "err", err)
}

// transcripts returns the paths of the live transcripts in dir, in name
// order, and whether dir holds a sessions.json file.
func (s *scanner) transcripts(dir string) (paths []string, store bool, err error) {
	s.dep(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	for _, e := range entries {
		name := e.Name()
		if e.Type()&fs.ModeSymlink != 0 {
			s.noCache = true
		}
		p := filepath.Join(dir, name)
		switch {
		case name == "sessions.json":
			store = isFile(p, e)
		case ClassifyFile(name) == FileKindTranscript && isFile(p, e):
			if err := isTranscript(p); err != nil {
				// Not listed; the cache is kept only while the file
				// stays as it is (it may become one).
				s.dep(p)
				switch {
				case errors.Is(err, ErrNotTranscript):
					if s.notTranscripts == nil {
						s.notTranscripts = map[string]error{}
					}
					s.notTranscripts[p] = err
				case !errors.Is(err, fs.ErrNotExist):
					s.warn(fmt.Errorf("read transcript %s: %w", p, err))
				}
				continue
			}
			paths = append(paths, p)
		}
	}
	return paths, store, nil
}

func (s *scanner) scanPi(root string, entries []fs.DirEntry) error {
	for _, e := range entries {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		dir := filepath.Join(root, name)
		if !isPiProjectDir(name) || !isDir(dir, e) {
			continue
		}
		paths, _, err := s.transcripts(dir)
		if err != nil {
			s.warn(fmt.Errorf("read pi project dir %s: %w", dir, err))
			continue
		}
		for _, p := range paths {
			stem := strings.TrimSuffix(filepath.Base(p), ".jsonl")
			id := stem
			if i := strings.LastIndexByte(stem, '_'); i >= 0 && i+1 < len(stem) {
				id = stem[i+1:]
			}
			s.byPath[p] = &pending{ref: brainsurgeon.SessionRef{Backend: brainsurgeon.BackendJSONL, ID: id, Label: name, Path: p}}
		}
	}
	return nil
}

func (s *scanner) scanOpenClaw(root string, entries []fs.DirEntry) error {
	type store struct{ agent, dir string }
	var stores []store
	for _, e := range entries {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		agent := e.Name()
		if strings.HasPrefix(agent, ".") || !isDir(filepath.Join(root, agent), e) {
			continue
		}
		s.dep(filepath.Join(root, agent)) // a sessions dir may appear in it
		dir := filepath.Join(root, agent, "sessions")
		if !statDir(dir) {
			continue
		}
		paths, hasStore, err := s.transcripts(dir)
		if err != nil {
			s.warn(fmt.Errorf("read sessions dir %s: %w", dir, err))
			continue
		}
		for _, p := range paths {
			id := strings.TrimSuffix(filepath.Base(p), ".jsonl")
			s.byPath[p] = &pending{ref: brainsurgeon.SessionRef{Backend: brainsurgeon.BackendJSONL, Agent: agent, ID: id, Path: p}}
		}
		if hasStore {
			stores = append(stores, store{agent, dir})
		}
	}
	// Stores are read after every sessions dir is listed: a sessionFile may
	// name another agent's transcript.
	for _, st := range stores {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		s.readStore(st.agent, st.dir)
	}
	return nil
}
