package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// DefaultQuiet is the quiet period a Store next to a live host wants: a
// session whose transcript or window changed less than this long ago is not
// written: longer than the usual prompt-cache lifetime, and long enough that
// a run starting is not taken for an idle session. It equals
// session.DefaultQuiet; set it as Options.Quiet.
const DefaultQuiet = session.DefaultQuiet

// DefaultBusyTimeout is how long a write waits for another connection's
// write transaction by default, the same as OpenClaw's own busy_timeout.
const DefaultBusyTimeout = 5 * time.Second

// StoreFile is the store's path under an agent dir.
const StoreFile = "agent/openclaw-agent.sqlite"

// Options configure a Store. Zero fields get the defaults noted; a zero
// Quiet is no quiet period.
type Options struct {
	// Logger receives the store's log records; nil discards.
	Logger bs.Logger
	// Clock tells the time for the idle rules and the fences a write sets;
	// nil means the system clock.
	Clock bs.Clock
	// Quiet is the quiet period the idle rules require. Zero (or
	// negative) means none: the run status, queued inputs, cold archives
	// and the state lock are still checked. DefaultQuiet is the usual
	// value next to a live host.
	Quiet time.Duration
	// BusyTimeout bounds how long a write waits for another connection's
	// write transaction before it gives up with ErrBusy. Zero means
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
}

// Store is the brainsurgeon.Store over OpenClaw's per-agent SQLite stores
// (OpenClaw 2026.8 and later, agent schema 23): one database per agent at
// agents/<agent>/agent/openclaw-agent.sqlite, transcripts in the table
// transcript_events, one row per former JSONL line.
//
// Reading never creates or changes a file (see Open). Writing follows the
// rules for an outside writer (docs/ARCHITECTURE.md, "Host safety"): one
// BEGIN IMMEDIATE transaction per session, the idle rules and the fences
// checked again inside it, each row replaced by compare-and-swap, only edits
// that keep OpenClaw's projections valid, and the session's rewrite
// generation and transcript_updated_at advanced. Rows are never inserted or
// deleted, so AppendAt and Create are not supported.
//
// A Store is safe for concurrent use; every call opens its own connection.
type Store struct {
	root string
	opts Options
	log  bs.Logger
}

var _ bs.Store = (*Store)(nil)

// NewStore returns a Store over root, which is an OpenClaw agents dir
// (<state>/agents) or the state dir holding it (~/.openclaw). Nothing is
// opened until a method is called.
func NewStore(root string, opts Options) *Store {
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = DefaultBusyTimeout
	}
	return &Store{root: root, opts: opts, log: bs.LoggerOrDiscard(opts.Logger)}
}

// Name returns brainsurgeon.BackendSQLite.
func (s *Store) Name() string { return bs.BackendSQLite }

var _ bs.Store = (*Store)(nil)

// Editable reports whether the store lets values of trigger type t be
// replaced: only thinking, tool_result and image values, whose edits keep
// OpenClaw's search index and active-path projection valid. An extractor
// skips the other trigger types on this backend. Whether one value of
// such a type may be replaced depends on where it is in its entry: see
// EditableValues.
func (s *Store) Editable(_ bs.SessionRef, t bs.TriggerType) bool {
	switch t {
	case bs.TriggerThinking, bs.TriggerToolResult, bs.TriggerImage:
		return true
	}
	return false
}

// EditableValues reports, for each candidate value of entry e, whether
// Rewrite accepts replacing it by with[i]: its trigger type must be one
// Editable allows, and the projection guard that Rewrite applies to every
// row must accept the edited row. The guard itself answers (it checks
// e.Raw with the replacement spliced in), so an extractor plans exactly
// the edits Rewrite takes: the values of a flat entry, for one, are
// refused (its output may only be put back from a placeholder, see
// docs/ARCHITECTURE.md, "The SQLite store's editable fields"). It is safe
// for concurrent use.
func (s *Store) EditableValues(ref bs.SessionRef, e *bs.Entry, cands []bs.Candidate, with [][]byte) []bool {
	out := make([]bool, len(cands))
	var all []bs.Splice
	for i, c := range cands {
		if i < len(with) && s.Editable(ref, c.Trigger) {
			out[i] = true
			all = append(all, bs.Splice{Start: c.Start, End: c.End, With: with[i]})
		}
	}
	switch {
	case len(all) == 0:
		return out
	case guardAccepts(e.Raw, all):
		return out // the usual case: one check for the whole entry
	case len(all) == 1:
		clear(out)
		return out
	}
	for i, c := range cands {
		if out[i] {
			out[i] = guardAccepts(e.Raw, []bs.Splice{{Start: c.Start, End: c.End, With: with[i]}})
		}
	}
	return out
}

// editRule says, in the errors of Rewrite and CheckEdit, which changes of a
// row the projection guard accepts (guard.go).
const editRule = `only toolResult content and details, thinking blocks, images, toolCall arguments, "_" bookkeeping members and a flat tool_result's output put back from its placeholder may change in an OpenClaw SQLite store, because other changes would leave its search index and projections stale`

// noStructural says, in the errors of Rewrite and CheckEdit, why the store
// takes no inserted or removed row.
const noStructural = "BrainSurgeon never inserts or removes rows of the SQLite store (the host owns its event sequence)"

// CheckEdit reports whether Rewrite accepts the row old becoming new: nil
// when the projection guard that Rewrite applies accepts every difference,
// else an error wrapping brainsurgeon.ErrUnsupported that names the first
// difference it refuses and the rule. A restore asks it value by value, so
// that it puts back every value the store takes and reports the others.
// A nil new asks about removing the row: the store never removes one (the
// host owns its event sequence), so the answer is an error wrapping
// ErrUnsupported. It reads neither the store nor the session (ref is not
// used) and is safe for concurrent use.
func (s *Store) CheckEdit(_ bs.SessionRef, old, new []byte) error {
	if new == nil {
		return fmt.Errorf("%s: %w", noStructural, bs.ErrUnsupported)
	}
	if bytes.Equal(old, new) {
		return nil
	}
	if err := checkProjection(old, new); err != nil {
		return fmt.Errorf("%v; %s: %w", err, editRule, bs.ErrUnsupported)
	}
	return nil
}

// dirs returns the agents dir and the state dir of root.
func dirs(root string) (agents, state string, err error) {
	if strings.TrimSpace(root) == "" {
		return "", "", fmt.Errorf("no agents dir given: expected an OpenClaw agents dir (~/.openclaw/agents) or state dir (~/.openclaw): %w", bs.ErrInvalid)
	}
	if strings.IndexByte(root, 0) >= 0 {
		return "", "", fmt.Errorf("agents dir %q contains a NUL byte: %w", root, bs.ErrInvalid)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", "", fmt.Errorf("agents dir %s: %w", root, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("agents dir %s does not exist: %w", abs, fs.ErrNotExist)
	case err != nil:
		return "", "", fmt.Errorf("agents dir %s: %w", abs, err)
	case !fi.IsDir():
		return "", "", fmt.Errorf("agents dir %s is a file, expected an OpenClaw agents dir or state dir: %w", abs, bs.ErrInvalid)
	}
	if fi, err := os.Stat(filepath.Join(abs, "agents")); err == nil && fi.IsDir() {
		return filepath.Join(abs, "agents"), abs, nil
	}
	return abs, filepath.Dir(abs), nil
}

// Detect returns, sorted, the agents under root (an agents dir or a state
// dir) that have a SQLite store (agents/<agent>/agent/openclaw-agent.sqlite
// is a regular file). It opens no database: the schema version is checked
// when a store is used. A missing root wraps fs.ErrNotExist.
func Detect(root string) ([]string, error) {
	agents, _, err := dirs(root)
	if err != nil {
		return nil, err
	}
	return detect(agents)
}

func detect(agentsDir string) ([]string, error) {
	ents, err := os.ReadDir(agentsDir)
	if err != nil {
		return nil, fmt.Errorf("agents dir %s: %w", agentsDir, err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() || bs.CheckSegment(e.Name()) != nil {
			continue
		}
		fi, err := os.Stat(filepath.Join(agentsDir, e.Name(), StoreFile))
		if err == nil && fi.Mode().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// StorePath returns the path of an agent's store under the Store's root.
// The agent must be a valid path segment (not empty, no "/", "\", NUL, not
// "." or ".."), else the error wraps ErrInvalid.
func (s *Store) StorePath(agent string) (string, error) {
	if bs.CheckSegment(agent) != nil {
		return "", fmt.Errorf("agent %q is not a valid agent id (expected one path segment without /, \\, NUL or ..): %w", agent, bs.ErrInvalid)
	}
	agents, _, err := dirs(s.root)
	if err != nil {
		return "", err
	}
	return filepath.Join(agents, agent, StoreFile), nil
}

// SideDir returns the directory of a session's side files,
// <agents dir>/<agent>/sessions/extracted/<sessionId>: where the JSONL era
// put them, so values extracted before OpenClaw moved the session into its
// SQLite store still restore: session.SideDirIn places both. The error
// wraps ErrInvalid when the agent or session id is not one path element.
// It returns the root resolution's error when the root cannot be resolved.
func (s *Store) SideDir(ref bs.SessionRef) (string, error) {
	if err := bs.CheckSegment(ref.Agent); err != nil {
		return "", fmt.Errorf("session %s: agent %q: %w", ref, ref.Agent, err)
	}
	agents, _, err := dirs(s.root)
	if err != nil {
		return "", err
	}
	return session.SideDirIn(filepath.Join(agents, ref.Agent, "sessions"), ref.ID)
}

// listed is one listed session with what Resolve needs beyond the ref.
type listed struct {
	ref bs.SessionRef
	// current is true when the session is its key's current window.
	current bool
}

// Sessions returns every session of every agent's store that has
// transcript rows, sorted by agent, then session id. Archived sessions
// (OpenClaw's "recovered" imports of orphan transcripts) are real
// transcripts of the user and are listed like the others. Sessions in cold
// storage (their rows moved out of the database) have no rows and are not
// listed.
//
// An agent's store that cannot be read is skipped: its error, naming the
// agent and the store, is in skipped and is not logged (a store locked by
// another connection wraps ErrBusy, a corrupt one ErrInvalid, one of
// another schema version ErrUnsupported). Only an agents dir that cannot
// be read fails the whole listing.
func (s *Store) Sessions(ctx context.Context) ([]bs.SessionRef, []error, error) {
	ls, skipped, err := s.listAll(ctx)
	if err != nil {
		return nil, nil, err
	}
	return refsOf(ls), skipped, nil
}

func refsOf(ls []listed) []bs.SessionRef {
	out := make([]bs.SessionRef, len(ls))
	for i, l := range ls {
		out[i] = l.ref
	}
	return out
}

// list lists every readable store, logging the others; when none could
// be listed and some failed, their errors are returned.
func (s *Store) list(ctx context.Context) ([]listed, error) {
	out, skipped, err := s.listAll(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range skipped {
		s.log.Warn("skipping unreadable OpenClaw store", "err", e)
	}
	if len(out) == 0 && len(skipped) > 0 {
		return nil, errors.Join(skipped...)
	}
	return out, nil
}

// listAll lists every readable store and returns the errors of the
// others, each naming its agent.
func (s *Store) listAll(ctx context.Context) ([]listed, []error, error) {
	agentsDir, _, err := dirs(s.root)
	if err != nil {
		return nil, nil, err
	}
	agents, err := detect(agentsDir)
	if err != nil {
		return nil, nil, err
	}
	var out []listed
	var skipped []error
	for _, a := range agents {
		path := filepath.Join(agentsDir, a, StoreFile)
		ls, err := s.listStore(ctx, a, path)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			skipped = append(skipped, fmt.Errorf("the sessions of agent %q are not listed: %w", a, err))
			continue
		}
		out = append(out, ls...)
	}
	return out, skipped, nil
}

const listQuery = `
SELECT w.session_id, w.session_key, coalesce(n.current_session_id, ''),
       coalesce(n.label, ''), coalesce(n.display_name, ''), coalesce(w.display_name, ''),
       coalesce(n.status, ''), coalesce(w.status, '')
  FROM session_windows w LEFT JOIN session_nodes n ON n.session_key = w.session_key
 WHERE EXISTS (SELECT 1 FROM transcript_events e WHERE e.session_id = w.session_id)
 ORDER BY w.session_id`

func (s *Store) listStore(ctx context.Context, agent, path string) ([]listed, error) {
	var out []listed
	err := s.readTx(ctx, path, func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, listQuery)
		if err != nil {
			return storeError(path, "list sessions", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, key, cur, label, nodeName, winName, nodeStatus, winStatus string
			if err := rows.Scan(&id, &key, &cur, &label, &nodeName, &winName, &nodeStatus, &winStatus); err != nil {
				return storeError(path, "list sessions", err)
			}
			if bs.CheckSegment(id) != nil {
				s.log.Warn("skipping session with an id that is not a path segment", "agent", agent, "session", id)
				continue
			}
			current := cur == id
			if label == "" {
				label = nodeName
			}
			if label == "" {
				label = winName
			}
			status := winStatus
			if current && (status == "" || nodeStatus == "running") {
				status = nodeStatus
			}
			out = append(out, listed{ref: bs.SessionRef{Backend: bs.BackendSQLite, Agent: agent, ID: id, Key: key,
				Label: label, Status: status, Path: path}, current: current})
		}
		return storeError(path, "list sessions", rows.Err())
	})
	return out, err
}

// Resolve finds one session by "agent/sessionId", a session id (or a
// unique prefix of 8 characters or more), a session key (or a unique
// suffix of one on ":" boundaries) or the store's path (when the store
// holds one session). A key names its current window, not the windows it
// had before a reset or rollover. Errors wrap ErrNotFound, ErrAmbiguous or
// ErrInvalid and list the candidates, worded as session.ResolveRef words
// them.
func (s *Store) Resolve(ctx context.Context, name string) (bs.SessionRef, error) {
	ls, err := s.list(ctx)
	if err != nil {
		return bs.SessionRef{}, err
	}
	refs := make([]bs.SessionRef, len(ls))
	for i, l := range ls {
		refs[i] = l.ref
		if !l.current {
			refs[i].Key = ""
		}
	}
	// A store's path names a session only when it holds one: ResolveRef
	// reports a path shared by several as ambiguous.
	ref, err := session.ResolveRef(refs, name, nil)
	if err != nil {
		return bs.SessionRef{}, err
	}
	for _, l := range ls {
		if l.ref.Same(ref) {
			return l.ref, nil
		}
	}
	return ref, nil
}

// storeOf checks ref and returns its store's path.
func (s *Store) storeOf(ref bs.SessionRef) (string, error) {
	if ref.Backend != "" && ref.Backend != bs.BackendSQLite {
		return "", fmt.Errorf("session %s belongs to the %q backend, expected %q: %w", ref, ref.Backend, bs.BackendSQLite, bs.ErrInvalid)
	}
	if bs.CheckSegment(ref.ID) != nil {
		return "", fmt.Errorf("session %s: %q is not a valid session id (expected one path segment without /, \\, NUL or ..): %w", ref, ref.ID, bs.ErrInvalid)
	}
	return s.StorePath(ref.Agent)
}

// readTx runs fn in one short read transaction on a read-only connection
// that creates and changes nothing (see openRead), after checking the
// schema version. A read that an immutable open cannot trust (the host
// opened the store meanwhile) is repeated.
func (s *Store) readTx(ctx context.Context, path string, fn func(tx *sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		err = s.readTxOnce(ctx, path, fn)
		if !errors.Is(err, errRetry) {
			return err
		}
		s.log.Debug("store changed during an immutable read, reading again", "path", path)
	}
	return fmt.Errorf("%w (after 3 attempts): %w", err, bs.ErrBusy)
}

func (s *Store) readTxOnce(ctx context.Context, path string, fn func(tx *sql.Tx) error) error {
	c, err := openRead(ctx, path, s.opts.BusyTimeout)
	if err != nil {
		return err
	}
	defer c.close()
	tx, err := c.c.BeginTx(ctx, nil)
	if err != nil {
		return storeError(path, "begin read", err)
	}
	defer tx.Rollback()
	if _, err := checkSchema(ctx, tx, path); err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		if verr := c.verify(); verr != nil {
			return verr
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return storeError(path, "end read", err)
	}
	return c.verify()
}

// Agents returns the agents that have a store under root, sorted; none
// when root cannot be read.
func (s *Store) Agents() []string {
	a, err := Detect(s.root)
	if err != nil {
		return nil
	}
	return a
}

// Location returns the agent's SQLite database that keeps ref's session,
// for people; empty when the ref has none.
func (s *Store) Location(ref bs.SessionRef) string { return ref.Path }
