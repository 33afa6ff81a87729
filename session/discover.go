package session

import (
	"cmp"
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
	"unicode"
	"unicode/utf8"

	"github.com/brainsurgeon/brainsurgeon"
)

// Layout is the directory layout of a JSONL session store.
type Layout int

// The layouts Discover recognises. The zero Layout is unknown.
const (
	// LayoutOpenClaw is an OpenClaw agents dir:
	// <agentsDir>/<agent>/sessions/<sessionId>.jsonl next to the agent's
	// sessions.json store.
	LayoutOpenClaw Layout = iota + 1
	// LayoutPi is a pi sessions dir (~/.pi/agent/sessions):
	// <root>/--<cwd with / replaced by ->--/<timestamp>_<uuid>.jsonl.
	LayoutPi
)

// String returns "openclaw", "pi" or "unknown".
func (l Layout) String() string {
	switch l {
	case LayoutOpenClaw:
		return "openclaw"
	case LayoutPi:
		return "pi"
	}
	return "unknown"
}

// FileKind tells what a file found in a sessions directory is.
type FileKind int

// The kinds of files in a sessions directory. Only FileKindTranscript is a
// live session; every other kind is a sidecar, an archive or unrelated. The
// zero FileKind is FileKindOther.
const (
	// FileKindOther is anything else: dot files, temporary files, unknown
	// names, directory names such as "extracted".
	FileKindOther FileKind = iota
	// FileKindTranscript is a live transcript: "<stem>.jsonl" whose stem
	// holds no dot ("<sessionId>.jsonl", "<sessionId>-topic-<threadId>.jsonl",
	// pi's "<timestamp>_<uuid>.jsonl").
	FileKindTranscript
	// FileKindLock is a session write lock, "<file>.jsonl.lock".
	FileKindLock
	// FileKindResetArchive is a transcript archived by /new or /reset,
	// "<file>.jsonl.reset.<ts>".
	FileKindResetArchive
	// FileKindDeletedArchive is a transcript archived by sessions.delete or
	// maintenance, "<file>.jsonl.deleted.<ts>".
	FileKindDeletedArchive
	// FileKindBackup is a copy made before a repair,
	// "<file>.jsonl.bak-<pid>-<ms>" (or any "….jsonl.bak…" or "….bak").
	FileKindBackup
	// FileKindCheckpoint is a pre-compaction copy,
	// "<sessionId>.checkpoint.<uuid>.jsonl".
	FileKindCheckpoint
	// FileKindCorrupt is a copy of a file whose header was unreadable,
	// "<file>.corrupt-<ts>-<8hex>.jsonl".
	FileKindCorrupt
	// FileKindTrajectory is a runtime trace, "<id>.trajectory.jsonl" or
	// "<id>.trajectory-path.json".
	FileKindTrajectory
	// FileKindStore is the session store "sessions.json" and the files
	// named after it ("sessions.json.telegram-sent-messages.json", …).
	FileKindStore
)

// String returns the lower-case name of the kind ("transcript", "lock",
// "reset-archive", …).
func (k FileKind) String() string {
	switch k {
	case FileKindOther:
		return "other"
	case FileKindTranscript:
		return "transcript"
	case FileKindLock:
		return "lock"
	case FileKindResetArchive:
		return "reset-archive"
	case FileKindDeletedArchive:
		return "deleted-archive"
	case FileKindBackup:
		return "backup"
	case FileKindCheckpoint:
		return "checkpoint"
	case FileKindCorrupt:
		return "corrupt"
	case FileKindTrajectory:
		return "trajectory"
	case FileKindStore:
		return "store"
	}
	return "unknown"
}

// ClassifyFile tells what a file in a sessions directory is from its name
// alone. A name holding a path is reduced to its last element ("/" and "\"
// both separate). The rules are conservative: a name is a transcript only
// when it is "<stem>.jsonl" and the stem is not empty and holds no dot, so a
// sidecar of a kind not known today is never taken for a live session.
// Dot files and temporary files (ending in ".tmp" or "~", holding ".tmp-" or
// ".tmp.", or ".swp") are FileKindOther.
func ClassifyFile(name string) FileKind {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	switch {
	case name == "" || name[0] == '.':
		return FileKindOther
	case strings.HasPrefix(name, "sessions.json"):
		return FileKindStore
	case discIsTempName(name):
		return FileKindOther
	case strings.HasSuffix(name, ".lock"):
		return FileKindLock
	case strings.Contains(name, ".jsonl.reset."):
		return FileKindResetArchive
	case strings.Contains(name, ".jsonl.deleted."):
		return FileKindDeletedArchive
	case strings.Contains(name, ".jsonl.bak"), strings.HasSuffix(name, ".bak"):
		return FileKindBackup
	case strings.Contains(name, ".corrupt-"):
		return FileKindCorrupt
	case strings.Contains(name, ".checkpoint."):
		return FileKindCheckpoint
	case strings.HasSuffix(name, ".trajectory.jsonl"), strings.HasSuffix(name, ".trajectory-path.json"):
		return FileKindTrajectory
	}
	if stem, ok := strings.CutSuffix(name, ".jsonl"); ok && stem != "" && !strings.Contains(stem, ".") {
		return FileKindTranscript
	}
	return FileKindOther
}

func discIsTempName(name string) bool {
	return strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, "~") ||
		strings.HasSuffix(name, ".swp") || strings.Contains(name, ".tmp-") ||
		strings.Contains(name, ".tmp.")
}

// DefaultAgentsDir returns the agents dir to use when none is given:
// $BRAINSURGEON_AGENTS_DIR, then $AGENTS_DIR, then ~/.openclaw/agents
// (DESIGN decision 14). A leading "~/" in a variable is expanded to the home
// directory. When the home directory is unknown the last fallback is the
// relative path ".openclaw/agents".
func DefaultAgentsDir() string {
	for _, v := range []string{"BRAINSURGEON_AGENTS_DIR", "AGENTS_DIR"} {
		if d := strings.TrimSpace(os.Getenv(v)); d != "" {
			return discExpandHome(d)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".openclaw", "agents")
	}
	return filepath.Join(home, ".openclaw", "agents")
}

// discExpandHome replaces a leading "~" or "~/" by the home directory.
func discExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return p
	}
	return filepath.Join(home, p[1:])
}

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
}

// Keys returns every sessions.json key whose entry names ref's transcript,
// the primary key (ref.Key) first. It returns nil for an orphan transcript.
func (d *Discovery) Keys(ref brainsurgeon.SessionRef) []string {
	return slices.Clone(d.keys[ref.Path])
}

// Resolve finds one of d.Sessions by name, like the package-level Resolve,
// and also by any of a session's keys, not only its primary one.
func (d *Discovery) Resolve(name string) (brainsurgeon.SessionRef, error) {
	r := discResolver{refs: d.Sessions, keys: d.keys}
	return r.resolve(name)
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
		return nil, discErrorf(brainsurgeon.ErrInvalid, "no agents dir given: %s", discExpected)
	}
	if strings.IndexByte(root, 0) >= 0 {
		return nil, discErrorf(brainsurgeon.ErrInvalid, "agents dir %q contains a NUL byte", root)
	}
	abs, err := filepath.Abs(discExpandHome(root))
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
		return nil, discErrorf(fs.ErrNotExist, "agents dir %s does not exist", shown)
	case err != nil:
		return nil, fmt.Errorf("agents dir %s: %w", shown, err)
	case !fi.IsDir():
		return nil, discErrorf(brainsurgeon.ErrInvalid, "agents dir %s is a file, not a directory: %s", shown, discExpected)
	}
	s := &discScan{
		ctx:    ctx,
		log:    brainsurgeon.LoggerOrDiscard(opts.Logger),
		byPath: map[string]*discBuild{},
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
	d.Sessions = make([]brainsurgeon.SessionRef, 0, len(s.byPath))
	for _, b := range s.byPath {
		d.Sessions = append(d.Sessions, b.finish())
		if len(b.keys) > 0 {
			if d.keys == nil {
				d.keys = map[string][]string{}
			}
			d.keys[b.ref.Path] = discKeyNames(b.keys)
		}
	}
	slices.SortFunc(d.Sessions, func(a, b brainsurgeon.SessionRef) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.ID, b.ID), cmp.Compare(a.Path, b.Path))
	})
	return d, nil
}

const discExpected = "expected an OpenClaw agents dir (<agent>/sessions/*.jsonl) or a pi sessions dir (--<cwd>--/*.jsonl)"

// discoverError is an error with its own message that wraps a sentinel.
type discoverError struct {
	msg string
	err error
}

func (e *discoverError) Error() string { return e.msg }
func (e *discoverError) Unwrap() error { return e.err }

func discErrorf(sentinel error, format string, args ...any) error {
	return &discoverError{msg: fmt.Sprintf(format, args...), err: sentinel}
}

// discScan holds the state of one DiscoverWith call.
type discScan struct {
	ctx      context.Context
	log      brainsurgeon.Logger
	warnings []error
	byPath   map[string]*discBuild
}

// discBuild is a session being assembled.
type discBuild struct {
	ref  brainsurgeon.SessionRef
	keys []discKey
}

// discKey is one sessions.json entry naming a transcript.
type discKey struct {
	name  string
	entry discStoreEntry
}

// discStoreEntry holds the few sessions.json entry fields discovery uses;
// the others are ignored.
type discStoreEntry struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
	Status      string `json:"status"`
	Label       string `json:"label"`
	DisplayName string `json:"displayName"`
}

func (s *discScan) warn(err error) {
	s.warnings = append(s.warnings, err)
	s.log.Warn("session discovery", "err", err)
}

// detect tells the layout of dir, descending into an "agents" subdirectory
// once. It returns the directory to scan and its entries.
func (s *discScan) detect(dir, shown string) (Layout, string, []fs.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, "", nil, fmt.Errorf("read agents dir %s: %w", shown, err)
	}
	var agentLike, piLike, hasAgents bool
	var visible []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		isDir := discIsDir(filepath.Join(dir, name), e)
		if isDir {
			visible = append(visible, name+"/")
		} else {
			visible = append(visible, name)
		}
		switch {
		case !isDir:
		case discIsPiProjectDir(name):
			piLike = true
		case discStatDir(filepath.Join(dir, name, "sessions")) || discStatDir(filepath.Join(dir, name, "agent")):
			agentLike = true
		case name == "agents":
			hasAgents = true
		}
	}
	switch {
	case agentLike:
		return LayoutOpenClaw, dir, entries, nil
	case hasAgents:
		sub := filepath.Join(dir, "agents")
		subEntries, err := os.ReadDir(sub)
		if err != nil {
			return 0, "", nil, fmt.Errorf("read agents dir %s: %w", sub, err)
		}
		return LayoutOpenClaw, sub, subEntries, nil
	case piLike:
		return LayoutPi, dir, entries, nil
	case len(visible) == 0 || filepath.Base(dir) == "agents":
		return LayoutOpenClaw, dir, entries, nil
	}
	found := visible
	more := ""
	if len(found) > 8 {
		more = fmt.Sprintf(", … and %d more", len(found)-8)
		found = found[:8]
	}
	return 0, "", nil, discErrorf(brainsurgeon.ErrInvalid, "%s is not a session store: %s; found %s%s",
		shown, discExpected, strings.Join(found, ", "), more)
}

// discIsPiProjectDir reports whether name is a pi project dir "--<cwd>--".
func discIsPiProjectDir(name string) bool {
	return len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--")
}

// discIsDir reports whether the entry at path is a directory, following a
// symbolic link.
func discIsDir(path string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		return discStatDir(path)
	}
	return false
}

func discStatDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// discIsFile reports whether the entry at path is a regular file, following
// a symbolic link.
func discIsFile(path string, e fs.DirEntry) bool {
	if e.Type().IsRegular() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		fi, err := os.Stat(path)
		return err == nil && fi.Mode().IsRegular()
	}
	return false
}

// transcripts returns the paths of the live transcripts in dir, in name
// order, and whether dir holds a sessions.json file.
func (s *discScan) transcripts(dir string) (paths []string, store bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	for _, e := range entries {
		name := e.Name()
		p := filepath.Join(dir, name)
		switch {
		case name == "sessions.json":
			store = discIsFile(p, e)
		case ClassifyFile(name) == FileKindTranscript && discIsFile(p, e):
			paths = append(paths, p)
		}
	}
	return paths, store, nil
}

func (s *discScan) scanPi(root string, entries []fs.DirEntry) error {
	for _, e := range entries {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		name := e.Name()
		dir := filepath.Join(root, name)
		if !discIsPiProjectDir(name) || !discIsDir(dir, e) {
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
			s.byPath[p] = &discBuild{ref: brainsurgeon.SessionRef{Backend: brainsurgeon.BackendJSONL, ID: id, Label: name, Path: p}}
		}
	}
	return nil
}

func (s *discScan) scanOpenClaw(root string, entries []fs.DirEntry) error {
	type store struct{ agent, dir string }
	var stores []store
	for _, e := range entries {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		agent := e.Name()
		if strings.HasPrefix(agent, ".") || !discIsDir(filepath.Join(root, agent), e) {
			continue
		}
		dir := filepath.Join(root, agent, "sessions")
		if !discStatDir(dir) {
			continue
		}
		paths, hasStore, err := s.transcripts(dir)
		if err != nil {
			s.warn(fmt.Errorf("read sessions dir %s: %w", dir, err))
			continue
		}
		for _, p := range paths {
			id := strings.TrimSuffix(filepath.Base(p), ".jsonl")
			s.byPath[p] = &discBuild{ref: brainsurgeon.SessionRef{Backend: brainsurgeon.BackendJSONL, Agent: agent, ID: id, Path: p}}
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

// readStore matches the keys of dir/sessions.json to transcripts.
func (s *discScan) readStore(agent, dir string) {
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
		var e discStoreEntry
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
		b.keys = append(b.keys, discKey{name: key, entry: e})
	}
}

// storeFile returns the discovered transcript a store entry names, or "".
func (s *discScan) storeFile(dir string, e discStoreEntry) string {
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
	if id := e.SessionID; discValidSegment(id) {
		if p := filepath.Join(dir, id+".jsonl"); known(p) {
			return p
		}
	}
	return ""
}

// finish orders the keys and fills the ref's key fields.
func (b *discBuild) finish() brainsurgeon.SessionRef {
	slices.SortFunc(b.keys, func(x, y discKey) int {
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

func discKeyNames(keys []discKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// discValidSegment reports whether s can be one path element of a name: not
// empty, not "." or "..", no separator, no NUL.
func discValidSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\\\x00")
}

// discMinPrefix is the shortest session id prefix Resolve accepts: the first
// group of a uuid.
const discMinPrefix = 8

// discMaxListed is how many names a not-found error lists.
const discMaxListed = 20

// Resolve finds the session a user named among refs (as returned by
// Discover). The name may be:
//   - a transcript path, absolute or relative to the working directory, or
//     any trailing part of a transcript's path on element boundaries (so a
//     path relative to the root works: "main/sessions/<id>.jsonl"). A name
//     is taken as a path when it is absolute, starts with "./", "../" or
//     "~/", holds ".jsonl", or holds two or more "/". It must be a
//     discovered transcript; a sidecar (lock, archive, …) is not found;
//   - a session key ("agent:main:main") or a suffix of one on ":" boundaries
//     ("main:main", "direct:8072905176"); any name holding ":" is a key;
//   - "agent/sessionId" (for pi, "<project dir>/<uuid>");
//   - a session id alone, when only one agent has it.
//
// A session id may also be the transcript's file stem, or a prefix of at
// least 8 characters of either when that prefix is unique; an exact match
// always wins over a prefix. The package-level Resolve knows only each
// session's primary key; Discovery.Resolve knows every key.
//
// Errors wrap brainsurgeon.ErrInvalid for an unusable name (empty, control
// characters or NUL, "." or ".." as an agent or id, a ".." path that is not
// a discovered transcript), brainsurgeon.ErrAmbiguous listing every
// candidate, or brainsurgeon.ErrNotFound saying what was expected and
// listing up to 20 sessions that exist.
func Resolve(refs []brainsurgeon.SessionRef, name string) (brainsurgeon.SessionRef, error) {
	r := discResolver{refs: refs}
	return r.resolve(name)
}

type discResolver struct {
	refs []brainsurgeon.SessionRef
	keys map[string][]string // by path; nil means only SessionRef.Key
}

func (r *discResolver) keysOf(ref brainsurgeon.SessionRef) []string {
	if k, ok := r.keys[ref.Path]; ok {
		return k
	}
	if ref.Key != "" {
		return []string{ref.Key}
	}
	return nil
}

func (r *discResolver) resolve(name string) (brainsurgeon.SessionRef, error) {
	if err := discCheckName(name); err != nil {
		return brainsurgeon.SessionRef{}, err
	}
	switch {
	case discIsPathName(name):
		return r.byPath(name)
	case strings.Contains(name, ":"):
		return r.byKey(name)
	case strings.Contains(name, "/"):
		return r.byAgentID(name)
	default:
		return r.byID(name)
	}
}

func discCheckName(name string) error {
	if strings.TrimSpace(name) == "" {
		return discErrorf(brainsurgeon.ErrInvalid, "empty session name: expected agent/sessionId, a session id, a session key or a transcript path")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return discErrorf(brainsurgeon.ErrInvalid, "session name %q contains a NUL byte", name)
	}
	if !utf8.ValidString(name) {
		return discErrorf(brainsurgeon.ErrInvalid, "session name %q is not valid UTF-8", name)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return discErrorf(brainsurgeon.ErrInvalid, "session name %q contains a control character", name)
	}
	return nil
}

func discIsPathName(name string) bool {
	return filepath.IsAbs(name) || name == "~" ||
		strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") || strings.HasPrefix(name, "~/") ||
		strings.Contains(name, ".jsonl") || strings.Count(name, "/") >= 2
}

func discHasDotDot(name string) bool {
	return slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == '\\' }), "..")
}

func (r *discResolver) byPath(name string) (brainsurgeon.SessionRef, error) {
	p := discExpandHome(name)
	abs, err := filepath.Abs(p)
	if err == nil {
		for _, ref := range r.refs {
			if ref.Path == abs {
				return ref, nil
			}
		}
	}
	dotdot := discHasDotDot(name)
	if !filepath.IsAbs(p) && !dotdot {
		suffix := string(filepath.Separator) + filepath.Clean(p)
		var found []brainsurgeon.SessionRef
		for _, ref := range r.refs {
			if strings.HasSuffix(ref.Path, suffix) {
				found = append(found, ref)
			}
		}
		if len(found) == 1 {
			return found[0], nil
		}
		if len(found) > 1 {
			return brainsurgeon.SessionRef{}, r.ambiguous(fmt.Sprintf("path %q", name), found, true)
		}
	}
	// The same file under another spelling (symbolic links, bind mounts).
	if err == nil {
		if fi, err := os.Stat(abs); err == nil && fi.Mode().IsRegular() {
			for _, ref := range r.refs {
				if rfi, err := os.Stat(ref.Path); err == nil && os.SameFile(fi, rfi) {
					return ref, nil
				}
			}
		}
	}
	if dotdot {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrInvalid,
			"session path %q contains a .. element and is not a discovered transcript", name)
	}
	if k := ClassifyFile(name); k != FileKindTranscript && k != FileKindOther {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
			"%q is not a session: a %s file name, not a live transcript (<sessionId>.jsonl); sessions: %s",
			name, k, r.list(r.refs))
	}
	return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
		"no session at path %q: expected the path of a discovered transcript (absolute, relative to the working directory or to the agents dir); sessions: %s",
		name, r.list(r.refs))
}

func (r *discResolver) byKey(name string) (brainsurgeon.SessionRef, error) {
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
	return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
		"no session key %q and no key ending in %q: expected a session key with a transcript (agent:main:main) or a unique suffix of one on \":\" boundaries (main:main); keys: %s",
		name, ":"+name, discListStrings(allKeys))
}

func (r *discResolver) byAgentID(name string) (brainsurgeon.SessionRef, error) {
	agent, id, _ := strings.Cut(name, "/")
	if !discValidSegment(agent) {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrInvalid, "session name %q: %q is not a valid agent name", name, agent)
	}
	if !discValidSegment(id) {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrInvalid, "session name %q: %q is not a valid session id", name, id)
	}
	var mine []brainsurgeon.SessionRef
	for _, ref := range r.refs {
		if discAgentOf(ref) == agent {
			mine = append(mine, ref)
		}
	}
	if len(mine) == 0 {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
			"no session %q: no agent %q has sessions; expected agent/sessionId with one of the agents %s",
			name, agent, discListStrings(r.agents()))
	}
	ref, found, err := r.matchID(mine, id, name)
	if err != nil || found {
		return ref, err
	}
	return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
		"no session %q: agent %q has no session id %q (or one starting with it, %d characters or more); its sessions: %s",
		name, agent, id, discMinPrefix, r.list(mine))
}

func (r *discResolver) byID(name string) (brainsurgeon.SessionRef, error) {
	if !discValidSegment(name) {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrInvalid, "session name %q is not a valid session id", name)
	}
	ref, found, err := r.matchID(r.refs, name, name)
	if err != nil || found {
		return ref, err
	}
	if slices.Contains(r.agents(), name) {
		return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
			"%q is an agent, not a session: name one of its sessions as %s/<sessionId>; sessions: %s",
			name, name, r.list(r.refs))
	}
	return brainsurgeon.SessionRef{}, discErrorf(brainsurgeon.ErrNotFound,
		"no session %q: expected agent/sessionId, a session id (or a unique prefix of %d characters or more), a session key or a transcript path; sessions: %s",
		name, discMinPrefix, r.list(r.refs))
}

// matchID finds id among refs: an exact id or file stem first, then a
// prefix of at least discMinPrefix characters.
func (r *discResolver) matchID(refs []brainsurgeon.SessionRef, id, name string) (brainsurgeon.SessionRef, bool, error) {
	var exact, prefix []brainsurgeon.SessionRef
	for _, ref := range refs {
		stem := strings.TrimSuffix(filepath.Base(ref.Path), ".jsonl")
		switch {
		case ref.ID == id || stem == id:
			exact = append(exact, ref)
		case len(id) >= discMinPrefix && (strings.HasPrefix(ref.ID, id) || strings.HasPrefix(stem, id)):
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

// discAgentOf is the agent part of a session's "agent/sessionId" name: the
// agent, or for pi the project dir.
func discAgentOf(ref brainsurgeon.SessionRef) string {
	if ref.Agent == "" {
		return ref.Label
	}
	return ref.Agent
}

func discRefName(ref brainsurgeon.SessionRef) string {
	if a := discAgentOf(ref); a != "" {
		return a + "/" + ref.ID
	}
	return ref.ID
}

func (r *discResolver) agents() []string {
	var out []string
	for _, ref := range r.refs {
		if a := discAgentOf(ref); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

func (r *discResolver) describe(ref brainsurgeon.SessionRef, withPath bool) string {
	s := discRefName(ref)
	if k := r.keysOf(ref); len(k) > 0 {
		s += " (" + strings.Join(k, ", ") + ")"
	}
	if withPath {
		s += " at " + ref.Path
	}
	return s
}

func (r *discResolver) ambiguous(what string, found []brainsurgeon.SessionRef, withPath bool) error {
	names := make([]string, len(found))
	for i, ref := range found {
		names[i] = r.describe(ref, withPath)
	}
	return discErrorf(brainsurgeon.ErrAmbiguous, "%s is ambiguous: it matches %d sessions: %s; name one as agent/sessionId or by its full key or path",
		what, len(found), strings.Join(names, "; "))
}

// list names up to discMaxListed sessions for an error message.
func (r *discResolver) list(refs []brainsurgeon.SessionRef) string {
	names := make([]string, len(refs))
	for i, ref := range refs {
		names[i] = discRefName(ref)
		if ref.Key != "" {
			names[i] += " (" + ref.Key + ")"
		}
	}
	return discListStrings(names)
}

func discListStrings(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= discMaxListed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(names[:discMaxListed], ", "), len(names)-discMaxListed)
}
