// Package backend opens the sessions of a host installation through the
// right store: JSONL transcripts (pi, OpenClaw up to 2026.7) and OpenClaw's
// per-agent SQLite store (2026.8 and later), side by side, behind one
// brainsurgeon.Store, with the side store and the state dir that go with
// them. The agents dir decides which store serves which agent.
//
// Policy code (extract, restore, the pass and the daemon) sees only the
// root interfaces that Open returns.
package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/session/sqlite"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// Options tune Open. The zero value is valid: no quiet period, no logs.
type Options struct {
	// Idle is how long a session must have been left unmodified before it
	// is written. Zero means no quiet period (as "idle_seconds": 0 in the
	// config); the host's run status and locks are always checked.
	Idle time.Duration
	// Logger receives the stores' log records; nil discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock
	// PiSessionsDir is a pi sessions dir (~/.pi/agent/sessions; see
	// config.PiSessionsDir) whose sessions are served beside root's, by
	// a second JSONL store: listed with them, read, extracted and
	// restored alike. "" serves none; so does root itself (or a dir
	// inside it). Open fails when it does not exist.
	PiSessionsDir string
	// SideStore is the config's side_store: "" or "local" keeps the
	// extracted values in packs beside the transcripts (sidedir); an s3://
	// URL keeps them in an S3-compatible object store (sides3). Open
	// refuses a setting that differs from the store the state dir's
	// side-store.json names (see SideStoreFile).
	SideStore string
}

// FromConfig returns the Options of a runtime config.
func FromConfig(c config.Config, log bs.Logger) Options {
	return Options{Idle: c.Idle(), Logger: log, SideStore: c.SideStore}
}

// Set is what Open returns: the installation (one store over every
// session, the side store of their extracted values, the agents and state
// dirs, the backends in use) and, as its methods, the backends' own
// answers that the API asks for beyond the Store (api.Backend: the CLI's
// resolver, the files behind a session).
type Set struct {
	bs.Installation
}

// Open opens an agents dir (or a ~/.openclaw dir, or a pi sessions dir).
// It fails with an error wrapping brainsurgeon.ErrNotFound when root does
// not exist.
func Open(ctx context.Context, root string, opts Options) (*Set, error) {
	if err := CheckAgentsDir(root); err != nil {
		return nil, err
	}
	js := session.NewStore(root)
	js.Logger = opts.Logger
	js.Writer.Logger = opts.Logger
	js.Writer.Clock = opts.Clock
	js.Writer.Quiet = max(opts.Idle, 0) // zero: no quiet period, as in Options
	set := &Set{Installation: bs.Installation{AgentsDir: root, StateDir: config.StateDir(root)}}
	stores := []bs.Store{js}
	set.Backends = append(set.Backends, js.Name())
	extra, found, err := openOthers(ctx, root, opts)
	if err != nil {
		return nil, err
	}
	for i, s := range extra {
		stores = append(stores, s)
		if found[i] {
			set.Backends = append(set.Backends, s.Name())
		}
	}
	if pi := opts.PiSessionsDir; pi != "" && !within(canonical(pi), canonical(root)) {
		if err := checkPiSessionsDir(pi); err != nil {
			return nil, err
		}
		ps := session.NewStore(pi)
		ps.Logger = opts.Logger
		ps.Writer.Logger = opts.Logger
		ps.Writer.Clock = opts.Clock
		ps.Writer.Quiet = max(opts.Idle, 0)
		stores = append(stores, ps) // last: Sessions takes the first store for OpenClaw's
		set.PiSessionsDir = pi
		set.Backends = append(set.Backends, ps.Name()+" (pi)")
	}
	m := &Multi{Stores: stores, Logger: opts.Logger}
	set.Store = m
	side, err := openSide(ctx, opts.SideStore, set, m)
	if err != nil {
		return nil, err
	}
	set.Side, m.Side = side, side
	if l, ok := side.(sideLister); ok {
		for _, s := range stores {
			if js, ok := s.(*session.Store); ok {
				js.SideNames = func(ctx context.Context, parent string) ([]string, error) {
					return l.SideNames(ctx, canonicalPath(parent))
				}
			}
		}
	}
	return set, nil
}

// CheckAgentsDir checks that root, an agents dir (or a ~/.openclaw dir,
// or a pi sessions dir), is an existing directory, as Open does before
// anything else; commands call it before they read a config or write a
// log, so that a wrong path is the first thing they report. It reads
// only. A missing root gives an error wrapping brainsurgeon.ErrNotFound
// that says how to name another ("agents directory … does not exist (set
// --agents-dir or BRAINSURGEON_AGENTS_DIR)"); a file, one wrapping
// ErrInvalid.
func CheckAgentsDir(root string) error {
	if root == "" {
		return fmt.Errorf("no agents directory given (set --agents-dir or BRAINSURGEON_AGENTS_DIR): %w", bs.ErrInvalid)
	}
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("agents directory %s does not exist (set --agents-dir or BRAINSURGEON_AGENTS_DIR): %w", root, bs.ErrNotFound)
		}
		return fmt.Errorf("agents directory %s: %w", root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("agents directory %s is a file, expected a directory: %w", root, bs.ErrInvalid)
	}
	return nil
}

// checkPiSessionsDir checks that dir, a pi sessions dir named to be
// served beside the agents dir, is an existing directory.
func checkPiSessionsDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("pi sessions directory %s does not exist (set BRAINSURGEON_PI_SESSIONS_DIR to pi's sessions dir, or to \"off\"): %w", dir, bs.ErrNotFound)
		}
		return fmt.Errorf("pi sessions directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("pi sessions directory %s is a file, expected a directory: %w", dir, bs.ErrInvalid)
	}
	return nil
}

// within reports whether path is dir or lies inside it (both clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// openOthers opens the database stores under root: OpenClaw's SQLite
// store, and reports which of them hold data now. The SQLite store is
// opened even before any agent has one: it lists the agents' stores at
// every call, so a store OpenClaw creates after the daemon started (a
// fresh install, a new agent, the first run after the upgrade to 2026.8)
// is found without a restart. A set's Backends name only the stores found
// at open.
func openOthers(ctx context.Context, root string, opts Options) (stores []bs.Store, found []bool, err error) {
	agents, err := sqlite.Detect(root)
	if err != nil {
		return nil, nil, nil // not a directory the SQLite store can list
	}
	return []bs.Store{sqlite.NewStore(root, sqlite.Options{Logger: opts.Logger, Clock: opts.Clock, Quiet: max(opts.Idle, 0)})},
		[]bool{len(agents) > 0}, nil
}

// Multi is a brainsurgeon.Store over several stores: it lists the
// sessions of all of them and sends every other call to the store that
// made the ref (by SessionRef.Backend).
type Multi struct {
	// Stores are the stores, JSONL first.
	Stores []bs.Store
	// Logger receives the parts of the stores that GoneSessions could not
	// list; nil discards.
	Logger bs.Logger
	// Side is the side store of the sessions, which the leftovers scan
	// asks whether a placeholder's value exists; nil means the pack
	// store beside the transcripts (Open sets it).
	Side bs.SideStore
}

// sideLister is a side store whose side locations are not local
// directories: it names those under a transcript dir's "extracted" dir
// (the object store), for GoneSessions.
type sideLister interface {
	SideNames(ctx context.Context, parent string) ([]string, error)
}

var (
	_ bs.Store        = (*Multi)(nil)
	_ bs.BatchStater  = (*Multi)(nil)
	_ bs.AppendReader = (*Multi)(nil)
)

// errNoStores is what a Multi without stores (or nil) answers.
var errNoStores = fmt.Errorf("backend: no stores (backend.Open makes a Multi with them): %w", bs.ErrInvalid)

// stores returns the stores; none for a nil Multi.
func (m *Multi) stores() []bs.Store {
	if m == nil {
		return nil
	}
	return m.Stores
}

// Name returns the names of the stores joined by "+".
func (m *Multi) Name() string {
	stores := m.stores()
	names := make([]string, len(stores))
	for i, s := range stores {
		names[i] = s.Name()
	}
	return strings.Join(names, "+")
}

// pick returns the store that serves ref's backend; a backend no store
// serves gives an error wrapping ErrUnsupported. Of several stores of one
// backend (the agents dir's JSONL store and a pi sessions dir's), it is
// the one whose directory holds ref.Path, which the store that listed ref
// set; a ref without a path goes to the first.
func (m *Multi) pick(ref bs.SessionRef) (bs.Store, error) {
	b := ref.Backend
	if b == "" {
		b = bs.BackendJSONL
	}
	stores := m.stores()
	if len(stores) == 0 {
		return nil, fmt.Errorf("session %s: %w", ref, errNoStores)
	}
	var first bs.Store
	n := 0
	for _, s := range stores {
		if s.Name() == b {
			if first == nil {
				first = s
			}
			n++
		}
	}
	if first == nil {
		return nil, fmt.Errorf("session %s: no %s store here: %w", ref, b, bs.ErrUnsupported)
	}
	if n > 1 && ref.Path != "" {
		for _, s := range stores {
			if h, ok := s.(interface{ Holds(path string) bool }); ok && s.Name() == b && h.Holds(ref.Path) {
				return s, nil
			}
		}
	}
	return first, nil
}

// agentsWith returns the agents a store serves when it serves only some
// (OpenClaw's SQLite store: the agents that have a database), else nil.
func agentsWith(s bs.Store) map[string]bool {
	db, ok := s.(*sqlite.Store)
	if !ok {
		return nil
	}
	out := map[string]bool{}
	for _, x := range db.Agents() {
		out[x] = true
	}
	return out
}

// Sessions lists the sessions of every store. JSONL sessions of an agent
// that a later store (the SQLite store) serves are left out: after
// OpenClaw's import they are archived copies. skipped holds the parts
// the stores skipped and, one error each, the stores whose listing
// failed as a whole (the others are still listed; the JSONL sessions of
// the agents such a store serves are still left out).
func (m *Multi) Sessions(ctx context.Context) ([]bs.SessionRef, []error, error) {
	stores := m.stores()
	if len(stores) == 0 {
		return nil, nil, errNoStores
	}
	var skipped, failed []error
	var refs []bs.SessionRef
	taken := map[string]bool{}
	for i := len(stores) - 1; i >= 0; i-- {
		s := stores[i]
		list, sk, err := s.Sessions(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			failed = append(failed, fmt.Errorf("the sessions of the %s store are not listed: %w", s.Name(), err))
		}
		skipped = append(skipped, sk...)
		for _, r := range list {
			if i == 0 && taken[r.Agent] && r.Agent != "" {
				continue
			}
			refs = append(refs, r)
		}
		for a := range agentsWith(s) {
			taken[a] = true
		}
	}
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].Agent != refs[j].Agent {
			return refs[i].Agent < refs[j].Agent
		}
		return refs[i].ID < refs[j].ID
	})
	return refs, append(skipped, failed...), nil
}

// Resolve finds a session by name in every store. A name that more than
// one store knows is ambiguous; when no store knows it, the first store's
// error is returned (it lists the candidates).
func (m *Multi) Resolve(ctx context.Context, name string) (bs.SessionRef, error) {
	stores := m.stores()
	switch len(stores) {
	case 0:
		return bs.SessionRef{}, errNoStores
	case 1:
		return stores[0].Resolve(ctx, name)
	}
	var found []bs.SessionRef
	var firstErr error
	for _, s := range stores {
		r, err := s.Resolve(ctx, name)
		if err == nil {
			found = append(found, r)
			continue
		}
		if !errors.Is(err, bs.ErrNotFound) {
			return bs.SessionRef{}, err
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	switch len(found) {
	case 0:
		return bs.SessionRef{}, firstErr
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, r := range found {
		names[i] = r.Identity()
	}
	return bs.SessionRef{}, fmt.Errorf("session %q is in more than one store (%s); name it as agent/sessionId: %w",
		name, strings.Join(names, ", "), bs.ErrAmbiguous)
}

// Open reads a session through its store.
func (m *Multi) Open(ctx context.Context, ref bs.SessionRef, v *bs.Visitor) (bs.Transcript, error) {
	s, err := m.pick(ref)
	if err != nil {
		return nil, err
	}
	return s.Open(ctx, ref, v)
}

// ReadAppended reads what was appended to a session through its store
// (bs.ReadAppended: an error wrapping bs.ErrUnsupported when that store
// cannot).
func (m *Multi) ReadAppended(ctx context.Context, ref bs.SessionRef, base bs.Version, lines int) ([]*bs.Entry, bs.Version, error) {
	s, err := m.pick(ref)
	if err != nil {
		return nil, bs.Version{}, err
	}
	return bs.ReadAppended(ctx, s, ref, base, lines)
}

// Rewrite writes a session through its store, gate included.
func (m *Multi) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	s, err := m.pick(ref)
	if err != nil {
		return err
	}
	return s.Rewrite(ctx, ref, base, edits, gate)
}

// AppendAt appends to a session through its store.
func (m *Multi) AppendAt(ctx context.Context, ref bs.SessionRef, base bs.Version, entries [][]byte) error {
	s, err := m.pick(ref)
	if err != nil {
		return err
	}
	return s.AppendAt(ctx, ref, base, entries)
}

// Create makes a new session for agent in the store that serves the agent:
// the SQLite store when the agent has one (which refuses: BrainSurgeon never
// inserts rows into the host's database), else the JSONL store, the first.
func (m *Multi) Create(ctx context.Context, agent string, lines [][]byte) (bs.SessionRef, error) {
	stores := m.stores()
	if len(stores) == 0 {
		return bs.SessionRef{}, fmt.Errorf("create a session of agent %q: %w", agent, errNoStores)
	}
	st := stores[0]
	for _, s := range stores[1:] {
		if agentsWith(s)[agent] {
			st = s
		}
	}
	return st.Create(ctx, agent, lines)
}

// CheckIdle asks the session's store.
func (m *Multi) CheckIdle(ctx context.Context, ref bs.SessionRef) error {
	s, err := m.pick(ref)
	if err != nil {
		return err
	}
	return s.CheckIdle(ctx, ref)
}

// Stat asks the session's store for its state without reading it.
func (m *Multi) Stat(ctx context.Context, ref bs.SessionRef) (bs.SessionStat, error) {
	s, err := m.pick(ref)
	if err != nil {
		return bs.SessionStat{}, err
	}
	return s.Stat(ctx, ref)
}

// StatMany returns the state of each session, in the order of refs,
// asking each store for its sessions at once (brainsurgeon.StatMany).
func (m *Multi) StatMany(ctx context.Context, refs []bs.SessionRef) []bs.StatResult {
	out := make([]bs.StatResult, len(refs))
	byStore := map[bs.Store][]int{}
	var order []bs.Store
	for i, ref := range refs {
		s, err := m.pick(ref)
		if err != nil {
			out[i].Err = err
			continue
		}
		if _, ok := byStore[s]; !ok {
			order = append(order, s)
		}
		byStore[s] = append(byStore[s], i)
	}
	for _, s := range order {
		idx := byStore[s]
		sub := make([]bs.SessionRef, len(idx))
		for k, i := range idx {
			sub[k] = refs[i]
		}
		for k, r := range bs.StatMany(ctx, s, sub) {
			out[idx[k]] = r
		}
	}
	return out
}

// Editable reports whether values of trigger type t may be replaced in
// the session ref: its store decides; a ref no store serves gets false.
func (m *Multi) Editable(ref bs.SessionRef, t bs.TriggerType) bool {
	s, err := m.pick(ref)
	if err != nil {
		return false
	}
	return s.Editable(ref, t)
}

// EditableValues asks the session's store which values of entry e it
// accepts to replace; a ref no store serves gets none.
func (m *Multi) EditableValues(ref bs.SessionRef, e *bs.Entry, cands []bs.Candidate, with [][]byte) []bool {
	s, err := m.pick(ref)
	if err != nil {
		return make([]bool, len(cands))
	}
	return s.EditableValues(ref, e, cands, with)
}

// CheckEdit asks the session's store whether it accepts the line old
// becoming new in a Rewrite (restore.EditChecker; a nil new asks about
// removing the line): nil when it does, else its reason. A store that
// does not say accepts every edit (the JSONL store); a ref no store serves
// gets the error that says so.
func (m *Multi) CheckEdit(ref bs.SessionRef, old, new []byte) error {
	s, err := m.pick(ref)
	if err != nil {
		return err
	}
	if c, ok := s.(interface {
		CheckEdit(bs.SessionRef, []byte, []byte) error
	}); ok {
		return c.CheckEdit(ref, old, new)
	}
	return nil
}

// SideDir returns the side directory of a session from its store.
func (m *Multi) SideDir(ref bs.SessionRef) (string, error) {
	s, err := m.pick(ref)
	if err != nil {
		return "", err
	}
	d, ok := s.(sidedir.Locator)
	if !ok {
		return "", fmt.Errorf("session %s: the %s store keeps no side directory: %w", ref, s.Name(), bs.ErrUnsupported)
	}
	return d.SideDir(ref)
}

// For returns the store that serves ref (the Multi itself passes calls on;
// this is for callers that need a store's own methods).
func (m *Multi) For(ref bs.SessionRef) (bs.Store, error) { return m.pick(ref) }

// GoneSessions returns the gone sessions of the stores that can tell (the
// JSONL store), less those whose side directory a live session
// of any store still uses: the stores share the agents' side directories
// (a session OpenClaw moved into its SQLite store keeps the side directory
// of its JSONL days, while its JSONL transcript is archived). It fails
// when a store cannot list its sessions or skips a part of them (an
// agent's database it cannot read), so that nothing is taken for gone on
// a partial view.
func (m *Multi) GoneSessions(ctx context.Context) ([]bs.SessionRef, error) {
	stores := m.stores()
	if len(stores) == 0 {
		return nil, errNoStores
	}
	live := map[string]bool{}
	for _, s := range stores {
		refs, skipped, err := s.Sessions(ctx)
		if err == nil && len(skipped) > 0 {
			err = fmt.Errorf("some sessions could not be listed, so none is taken for gone: %w", errors.Join(skipped...))
		}
		if err != nil {
			return nil, fmt.Errorf("gone sessions: %s store: %w", s.Name(), err)
		}
		for _, r := range refs {
			if dir, err := m.SideDir(r); err == nil {
				live[canonical(dir)] = true
			}
		}
	}
	var out []bs.SessionRef
	for _, s := range stores {
		g, ok := s.(*session.Store)
		if !ok {
			continue
		}
		refs, err := g.GoneSessions(ctx)
		if err != nil {
			return nil, fmt.Errorf("gone sessions: %s store: %w", s.Name(), err)
		}
		for _, r := range refs {
			dir, err := m.SideDir(r)
			if err != nil || live[canonical(dir)] {
				continue
			}
			live[canonical(dir)] = true // named once, by the first store
			out = append(out, r)
		}
	}
	return out, nil
}

// canonical returns dir with its symbolic links resolved when it exists,
// so that two stores that name one directory differently agree; else dir
// cleaned.
func canonical(dir string) string {
	if c, err := filepath.EvalSymlinks(dir); err == nil {
		return c
	}
	return filepath.Clean(dir)
}

// fileStore is what a store that keeps sessions as files answers to move
// them out of their place and back (the trash's Store): session.Store.
type fileStore interface {
	Family(ctx context.Context, ref bs.SessionRef) ([]bs.SessionFiles, error)
	LockFiles(ctx context.Context, f bs.SessionFiles) (unlock func() error, err error)
	Move(from, to string) error
	IndexEntries(index string) map[string]json.RawMessage
	RemoveIndexEntries(index string, keys []string) (map[string]json.RawMessage, error)
	AddIndexEntries(index string, entries map[string]json.RawMessage) error
}

var _ fileStore = (*Multi)(nil)

// files returns the store that keeps ref's session as files; an error
// wrapping brainsurgeon.ErrUnsupported when that store keeps rows.
func (m *Multi) files(ref bs.SessionRef) (fileStore, error) {
	s, err := m.pick(ref)
	if err != nil {
		return nil, err
	}
	f, ok := s.(fileStore)
	if !ok {
		return nil, fmt.Errorf("session %s: the %s store does not keep sessions as files: %w", ref, s.Name(), bs.ErrUnsupported)
	}
	return f, nil
}

// jsonlFiles returns the JSONL store, which owns the transcripts, side
// directories and sessions.json files the path-based calls name.
func (m *Multi) jsonlFiles() (fileStore, error) {
	return m.files(bs.SessionRef{Backend: bs.BackendJSONL})
}

// Family returns the files of ref and its children from ref's store (see
// session.Store.Family).
func (m *Multi) Family(ctx context.Context, ref bs.SessionRef) ([]bs.SessionFiles, error) {
	f, err := m.files(ref)
	if err != nil {
		return nil, err
	}
	return f.Family(ctx, ref)
}

// LockFiles takes the host's lock of a session's transcript through its
// store (see session.Store.LockFiles).
func (m *Multi) LockFiles(ctx context.Context, sf bs.SessionFiles) (func() error, error) {
	f, err := m.files(sf.Ref)
	if err != nil {
		return nil, err
	}
	return f.LockFiles(ctx, sf)
}

// Move moves a transcript or a side directory through the JSONL store
// (see session.Store.Move).
func (m *Multi) Move(from, to string) error {
	f, err := m.jsonlFiles()
	if err != nil {
		return err
	}
	return f.Move(from, to)
}

// IndexEntries reads a sessions.json through the JSONL store (see
// session.Store.IndexEntries); none when there is no JSONL store.
func (m *Multi) IndexEntries(index string) map[string]json.RawMessage {
	f, err := m.jsonlFiles()
	if err != nil {
		return map[string]json.RawMessage{}
	}
	return f.IndexEntries(index)
}

// RemoveIndexEntries edits a sessions.json through the JSONL store (see
// session.Store.RemoveIndexEntries).
func (m *Multi) RemoveIndexEntries(index string, keys []string) (map[string]json.RawMessage, error) {
	f, err := m.jsonlFiles()
	if err != nil {
		return nil, err
	}
	return f.RemoveIndexEntries(index, keys)
}

// AddIndexEntries edits a sessions.json through the JSONL store (see
// session.Store.AddIndexEntries).
func (m *Multi) AddIndexEntries(index string, entries map[string]json.RawMessage) error {
	f, err := m.jsonlFiles()
	if err != nil {
		return err
	}
	return f.AddIndexEntries(index, entries)
}

// ResolveAmong finds the session name names among refs as the CLI does
// (see session.ResolveRef, by each ref's primary key).
func (s *Set) ResolveAmong(refs []bs.SessionRef, name string) (bs.SessionRef, error) {
	return session.ResolveRef(refs, name, nil)
}

// SessionFile returns the file that keeps ref's transcript: the JSONL
// transcript, or the SQLite database that keeps the session among others
// (shared). A ref without a file gives an error wrapping
// brainsurgeon.ErrInvalid.
func (s *Set) SessionFile(ref bs.SessionRef) (path string, shared bool, err error) {
	if ref.Path == "" {
		return "", false, fmt.Errorf("session %s: no file keeps it: %w", ref, bs.ErrInvalid)
	}
	return ref.Path, ref.Backend == bs.BackendSQLite, nil
}

// ClassifyFile names the kind of a file in a session directory by its
// name (session.ClassifyFile): "transcript", "store", "other", or a host
// leftover's kind such as "lock" or "reset-archive".
func (s *Set) ClassifyFile(name string) string { return session.ClassifyFile(name).String() }

// SideDir returns the directory that keeps ref's extracted values, as the
// store that serves ref says.
func (s *Set) SideDir(ref bs.SessionRef) (string, error) {
	m, ok := s.Store.(*Multi)
	if !ok {
		return "", fmt.Errorf("session %s: the set's store is not the Multi that backend.Open makes: %w", ref, bs.ErrInvalid)
	}
	return m.SideDir(ref)
}

// Location returns where ref's session is stored, as the store that
// serves it says; empty when no store serves it.
func (m *Multi) Location(ref bs.SessionRef) string {
	s, err := m.pick(ref)
	if err != nil {
		return ""
	}
	return s.Location(ref)
}

var _ bs.LeftoverScanner = (*Multi)(nil)

// Leftovers lists the host's leftovers of every agent through the JSONL
// store, which knows the agents dir's layout (see
// session.Store.LeftoversWith). For an agent that OpenClaw's SQLite store
// serves, the live sessions that decide whether a leftover (an import
// archive, a deleted transcript) still holds unique history are that
// store's: they are opened by their refs and their entry ids read. A
// session of it that cannot be read makes the scan fail for the files
// that need it (in skipped), never count as absent.
func (m *Multi) Leftovers(ctx context.Context) ([]bs.Leftover, []error, error) {
	var js *session.Store
	var others []bs.Store
	for _, s := range m.stores() {
		if j, ok := s.(*session.Store); ok && js == nil {
			js = j
			continue
		}
		others = append(others, s)
	}
	if js == nil {
		return nil, nil, fmt.Errorf("leftovers: no JSONL store to scan the agents dir: %w", errNoStores)
	}
	served := map[string]bs.Store{}
	for _, s := range others {
		for a := range agentsWith(s) {
			if served[a] == nil {
				served[a] = s
			}
		}
	}
	lists := map[bs.Store][]bs.SessionRef{}
	opts := session.LeftoverOptions{
		Served: func(agent string) bool { return served[agent] != nil },
		Live: func(ctx context.Context, agent string) (*session.LiveSet, error) {
			s := served[agent]
			refs, ok := lists[s]
			if !ok {
				list, skipped, err := s.Sessions(ctx)
				if err == nil && len(skipped) > 0 {
					err = errors.Join(skipped...)
				}
				if err != nil {
					return nil, fmt.Errorf("the sessions of the %s store could not all be listed: %w", s.Name(), err)
				}
				lists[s], refs = list, list
			}
			live := &session.LiveSet{Sessions: map[string]bool{}, Entries: map[string]string{}}
			for _, r := range refs {
				if r.Agent != agent {
					continue
				}
				live.Sessions[r.ID] = true
				t, err := s.Open(ctx, r, nil)
				if err != nil {
					return nil, fmt.Errorf("live session %s: %w", r, err)
				}
				for _, n := range t.Nodes() {
					if n.ID != "" && n.Type != "session" {
						if _, ok := live.Entries[n.ID]; !ok {
							live.Entries[n.ID] = r.String()
						}
					}
				}
			}
			return live, nil
		},
		Side: m.Side,
	}
	if opts.Side == nil {
		opts.Side = sidedir.New(m)
	}
	return js.LeftoversWith(ctx, opts)
}
