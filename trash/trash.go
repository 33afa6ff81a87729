// Package trash deletes sessions into a trash they can be restored from: the
// transcript, its extracted dir as a whole, and the session's sessions.json
// entry, with its child sessions.
//
// # Layout
//
// Each deletion is one item, a directory under "<state dir>/trash/" (the
// state dir is ".brainsurgeon", the sibling of "agents"):
//
//	<state dir>/trash/<agent>_<sessionId>_<UTC time>-<random>/
//	    meta.json                 the Item below
//	    <sessionId>.jsonl         the transcript, moved (mtime kept)
//	    extracted/<sessionId>/    its side dir, moved as a whole
//	    …                         the same for every child session
//
// meta.json holds, per session, the original transcript path and side
// dir, its sessions.json path and entries (key → the entry's raw JSON),
// file counts and sizes, and for the item trashed_at and expires_at
// (trashed_at + Trash.Keep, 14 days by default). Directories are 0700,
// files 0600.
//
// # Operations
//
// Each operation is one call, for the CLI and the HTTP API alike:
//
//	bin := trash.New(set.Store, set.AgentsDir, set.StateDir) // set from backend.Open
//	item, err := bin.Delete(ctx, "main", "abc123") // DELETE /api/sessions/main/abc123
//	items, err := bin.List(ctx)                    // GET /api/trash
//	item, err := bin.Restore(ctx, item.ID)         // POST /api/trash/{id}/restore
//	item, err := bin.Purge(ctx, item.ID)           // DELETE /api/trash/{id}
//	n, bytes, err := bin.CleanExpired(ctx)         // retention (retention.Options.Trash)
//
// The store does the moves and the sessions.json edits (see Store); the
// trash keeps the items, their meta.json and the audit log.
//
// Delete refuses a busy session (the store's CheckIdle; an error
// wrapping brainsurgeon.ErrBusy) and a session of the SQLite store (an
// error wrapping ErrRefused and brainsurgeon.ErrUnsupported: BrainSurgeon
// never deletes rows). It takes the host lock of every
// transcript it moves. Child sessions go along: those whose header
// "parentSession" names the session, or whose sessions.json entry has
// "spawnedBy", "parentSessionKey", "parentSessionId" or "parentSession"
// naming one of its keys or its id (recursively). A missing extracted dir
// is no error.
//
// A deletion writes meta.json first ("state": "trashing"), then moves the
// side dirs and transcripts, then removes the sessions.json keys in one
// atomic rewrite of the file (temp, fsync, rename: bytes of other entries
// unchanged), then marks the item "trashed". When a step fails, what was
// moved is moved back; after a crash the item stays "trashing" and
// Restore puts back whatever was moved. Restore refuses with an error
// wrapping ErrOccupied when a transcript, a non-empty side dir or a
// sessions.json key now occupies an original place; nothing is moved
// then. An unknown or malformed item id is an error wrapping
// brainsurgeon.ErrNotFound or brainsurgeon.ErrInvalid.
//
// Every step appends to the audit log "<state dir>/audit.jsonl" (see
// audit.Append): "delete" (moved_to_trash) and "delete_extracted"
// (files_removed, bytes_removed) per session, then "trash_restore",
// "trash_purge" and "trash_expire".
//
// # Leftovers
//
// Collect moves host leftovers (files a host left next to its sessions,
// as a brainsurgeon.LeftoverScanner lists them) into one item of Kind
// ItemLeftovers:
//
//	<state dir>/trash/leftovers_collect_<UTC time>-<random>/
//	    meta.json                 the Item, its Leftovers the files
//	    files/<path relative to the agents dir>   each file, moved
//
// Restore puts every file back at its path with its mode and
// modification time (refusing with ErrOccupied, moving nothing, when a
// path is taken); Purge and CleanExpired remove the item as any other.
// The audit log gets "collect" (files_removed, bytes_removed), then
// "trash_restore", "trash_purge" or "trash_expire".
//
// Items move by rename, so the state dir must be on the agents dir's file
// system (it is, as its sibling, unless a mount point sits between them);
// otherwise Delete fails and moves nothing.
//
// # Side stores away from the disk
//
// When the side store keeps its units elsewhere (an object store: the
// side dir named in meta.json then does not exist on disk), Trash.Sides
// moves, counts and removes them (see SideLocations and RemoteSides). The
// item's side location is still "<item>/extracted/<sessionId>", whose
// units the store keeps under its own key; Delete moves every unit there,
// Restore moves them back, Purge and CleanExpired remove them, and the
// counts of meta.json and the audit log include them. A side dir that
// exists on disk as well is moved by rename as before. A failing side
// store (an error wrapping brainsurgeon.ErrUnavailable) fails the
// operation: Delete moves back what it moved, Restore and Purge can be
// run again.
//
// Errors callers map (an HTTP handler, the CLI): brainsurgeon.ErrInvalid
// (a malformed id: 400), brainsurgeon.ErrNotFound (404),
// brainsurgeon.ErrBusy and ErrOccupied (409), ErrRefused (also
// brainsurgeon.ErrUnsupported: 409 or 422 with the message, which gives
// the reason).
//
// A Trash is safe for concurrent use; its operations are serialised.
package trash

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/audit"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// Format identifies a trash item's meta.json.
const Format = "brainsurgeon.trash/1"

// DefaultKeep is how long an item stays in the trash when Trash.Keep is
// zero: 14 days, as the first BrainSurgeon's trash.
const DefaultKeep = 14 * 24 * time.Hour

// The states of an item.
const (
	// StateTrashing: the deletion started and did not finish (a crash);
	// Restore puts back what was moved.
	StateTrashing = "trashing"
	// StateTrashed: everything is in the trash.
	StateTrashed = "trashed"
)

var (
	// ErrRefused means the trash cannot take the session: it is kept by a
	// store whose sessions BrainSurgeon never deletes (the SQLite store).
	ErrRefused = errors.New("the trash cannot take sessions of this store")
	// ErrOccupied means Restore found something in a place it must put
	// back into.
	ErrOccupied = errors.New("the original place is occupied")
)

// errCrash stops an operation where it is, without rolling back, as a
// killed process would (tests inject it through failpoint).
var errCrash = errors.New("simulated crash")

// failpoint, when set (by tests), is called after each step of a
// deletion; an error fails the deletion there.
var failpoint func(step string) error

// Item is one deletion in the trash, as stored in its meta.json.
type Item struct {
	// Format is Format.
	Format string `json:"format"`
	// ID names the item: its directory's name.
	ID string `json:"id"`
	// Agent and SessionID name the session deleted (the first of
	// Sessions; the others are its children).
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	// State is StateTrashing or StateTrashed.
	State string `json:"state"`
	// TrashedAt is when the deletion was made; ExpiresAt when the item
	// may be removed for good.
	TrashedAt time.Time `json:"trashed_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// Sessions are the session and its children.
	Sessions []Session `json:"sessions"`
	// Files and Bytes count every file of the item (meta.json aside)
	// and the units its side locations hold in a remote side store.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Kind is ItemLeftovers for an item of collected host leftovers, and
	// empty for deleted sessions.
	Kind string `json:"kind,omitempty"`
	// Leftovers are the files of an ItemLeftovers item.
	Leftovers []File `json:"leftovers,omitempty"`
}

// Session is one session of an item.
type Session struct {
	// Agent and SessionID name it; Parent is the session id of its
	// parent when it went along as a child.
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	Parent    string `json:"parent,omitempty"`
	// OriginalPath is where the transcript was; SideDir its extracted
	// dir.
	OriginalPath string `json:"original_path"`
	SideDir      string `json:"side_dir"`
	// SessionsJSON is the sessions.json that listed it, and Entries its
	// entries there: key → the entry's JSON text exactly as it was in the
	// file (a string, so that no encoder re-indents it), empty for an
	// orphan transcript.
	SessionsJSON string            `json:"sessions_json,omitempty"`
	Entries      map[string]string `json:"sessions_json_entries,omitempty"`
	// TranscriptBytes is the transcript's size; ExtractedFiles and
	// ExtractedBytes count the files of its side dir (on disk and, with
	// Trash.Sides, the units of its side location).
	TranscriptBytes int64 `json:"transcript_bytes"`
	ExtractedFiles  int   `json:"extracted_files"`
	ExtractedBytes  int64 `json:"extracted_bytes"`
}

// Store is what the trash needs of the store of the sessions it moves:
// the JSONL store (session.Store) implements it, and backend.Multi passes
// it on to that store. The paths it names are the store's; the trash
// records them in meta.json and hands them back.
type Store interface {
	// Resolve finds a session by name.
	Resolve(ctx context.Context, name string) (bs.SessionRef, error)
	// CheckIdle fails with an error wrapping brainsurgeon.ErrBusy when
	// the host is using the session.
	CheckIdle(ctx context.Context, ref bs.SessionRef) error
	// Family returns the files of ref and of the sessions forked or
	// spawned from it, recursively, ref first.
	Family(ctx context.Context, ref bs.SessionRef) ([]bs.SessionFiles, error)
	// LockFiles takes the host's lock of a session's transcript, without
	// waiting, until unlock.
	LockFiles(ctx context.Context, f bs.SessionFiles) (unlock func() error, err error)
	// Move renames a transcript or a side directory from to to, making
	// to's parent and syncing both parents.
	Move(from, to string) error
	// IndexEntries returns the entries of an index file (sessions.json);
	// none when it is missing or unreadable.
	IndexEntries(index string) map[string]json.RawMessage
	// RemoveIndexEntries removes keys from an index file in one atomic
	// rewrite and returns the removed entries.
	RemoveIndexEntries(index string, keys []string) (map[string]json.RawMessage, error)
	// AddIndexEntries inserts entries into an index file (created when
	// missing) in one atomic rewrite; a key already there is an error
	// wrapping fs.ErrExist.
	AddIndexEntries(index string, entries map[string]json.RawMessage) error
}

// SideLocations moves, counts and removes the units of side locations
// (packs, and per-entry files of earlier versions) in a side store that
// keeps them away from the local file system. A location is named by the
// path of its side dir, as the store's Locator gives it, whether or not
// that path exists. Package sidedir's Store implements it on any medium.
type SideLocations interface {
	// MoveSide moves every unit of from to the location to, keeping their
	// names. Run again after a crash or a failure it finishes the move;
	// units already in to stay (unit names are unique, so the two sets
	// merge).
	MoveSide(ctx context.Context, from, to string) error
	// SideSize counts the units of loc and their bytes; a missing or
	// empty loc has none, without error.
	SideSize(ctx context.Context, loc string) (files int, bytes int64, err error)
	// RemoveSide removes every unit of loc; a missing loc is no error.
	RemoveSide(ctx context.Context, loc string) error
}

// RemoteSides returns side as the Sides of a Trash when it keeps its
// units away from the local file system: when it is a SideLocations
// with a method Remote() bool that returns true (package sides3's Store,
// package sidedir's Store on a medium other than the file system).
// Otherwise it returns nil: side dirs are directories on disk and move
// with the item by rename.
func RemoteSides(side bs.SideStore) SideLocations {
	r, ok := side.(interface {
		SideLocations
		Remote() bool
	})
	if !ok || !r.Remote() {
		return nil
	}
	return r
}

// Trash deletes sessions into "<StateDir>/trash" and brings them back.
// Store, AgentsDir and StateDir are required; New fills them.
type Trash struct {
	// Store resolves names, tells whether a session is idle, and moves
	// its files.
	Store Store
	// Sides, when not nil, moves, counts and removes the side locations
	// of a side store that keeps them away from the local file system
	// (see RemoteSides); nil means side dirs are only the directories on
	// disk, moved by the Store's Move.
	Sides SideLocations
	// AgentsDir is the agents dir: Restore puts back only into places
	// inside it.
	AgentsDir string
	// StateDir is BrainSurgeon's state dir (".brainsurgeon").
	StateDir string
	// Keep is how long items stay; zero means DefaultKeep.
	Keep time.Duration
	// Actor is written into the audit log when known.
	Actor string
	// Logger receives info records of every step; nil discards.
	Logger bs.Logger
	// Clock tells the time; nil is the system clock.
	Clock bs.Clock

	mu sync.Mutex
}

// New returns the Trash of an opened installation: its store, agents dir
// and state dir (backend.Open's Set has them). A store that is not a
// Store (nil included) gives a Trash whose operations fail with an error
// wrapping brainsurgeon.ErrInvalid.
// For returns the Trash of an installation: New over its store, agents
// dir and state dir, with Sides set when its side store keeps the values
// away from the local file system (RemoteSides).
func For(inst bs.Installation) *Trash {
	t := New(inst.Store, inst.AgentsDir, inst.StateDir)
	t.Sides = RemoteSides(inst.Side)
	return t
}

func New(store bs.Store, agentsDir, stateDir string) *Trash {
	t := &Trash{AgentsDir: agentsDir, StateDir: stateDir}
	if s, ok := store.(Store); ok {
		t.Store = s
	}
	return t
}

func (t *Trash) ready() error {
	if t == nil || t.Store == nil || t.AgentsDir == "" || t.StateDir == "" {
		return fmt.Errorf("trash: needs a Store that moves session files, an AgentsDir and a StateDir (trash.New fills them): %w", bs.ErrInvalid)
	}
	return nil
}

func (t *Trash) dir() string { return filepath.Join(t.StateDir, "trash") }

func (t *Trash) log() bs.Logger { return bs.LoggerOrDiscard(t.Logger) }

// Delete moves the session agentID/sessionID and its children to the
// trash. Both ids must name the session exactly (no prefix or key
// matching: a deletion never guesses); an unknown session is an error
// wrapping brainsurgeon.ErrNotFound, a malformed id one wrapping
// brainsurgeon.ErrInvalid.
func (t *Trash) Delete(ctx context.Context, agentID, sessionID string) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	for _, seg := range []struct{ what, v string }{{"agent", agentID}, {"session", sessionID}} {
		if err := segment(seg.what, seg.v); err != nil {
			return nil, err
		}
	}
	name := agentID + "/" + sessionID
	ref, err := t.Store.Resolve(ctx, name)
	if err == nil && (ref.Agent != agentID || ref.ID != sessionID) {
		err = fmt.Errorf("no session %s (the nearest is %s): %w", name, ref, bs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("trash %s: %w", name, err)
	}
	return t.DeleteRef(ctx, ref)
}

// segment checks an id that becomes a path segment (see
// brainsurgeon.CheckSegment); what names it in the error.
func segment(what, v string) error {
	if err := bs.CheckSegment(v); err != nil {
		return fmt.Errorf("%s id %q: %w", what, v, err)
	}
	return nil
}

// DeleteRef is Delete for a resolved session.
func (t *Trash) DeleteRef(ctx context.Context, ref bs.SessionRef) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	if b := ref.Backend; b != "" && b != bs.BackendJSONL {
		return nil, fmt.Errorf("trash %s: the %s store keeps sessions as rows and BrainSurgeon never deletes rows; delete it in the host: %w: %w",
			ref, b, ErrRefused, bs.ErrUnsupported)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sessions, err := t.family(ctx, ref)
	if err != nil {
		return nil, err
	}
	for _, s := range sessions {
		if err := t.Store.CheckIdle(ctx, s.ref); err != nil {
			return nil, fmt.Errorf("trash %s: session %s: %w", ref, s.ref, err)
		}
	}
	now := bs.Now(t.Clock).UTC()
	keep := t.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	item := &Item{Format: Format, ID: itemID(ref, now), Agent: ref.Agent, SessionID: ref.ID, State: StateTrashing,
		TrashedAt: now, ExpiresAt: now.Add(keep)}
	for _, s := range sessions {
		item.Sessions = append(item.Sessions, s.Session)
	}
	// Host locks: nobody writes a transcript while it moves.
	var unlocks []func() error
	defer func() {
		for _, u := range unlocks {
			_ = u()
		}
	}()
	for _, s := range sessions {
		u, err := t.Store.LockFiles(ctx, s.files)
		if err != nil {
			return nil, fmt.Errorf("trash %s: %w", ref, err)
		}
		unlocks = append(unlocks, u)
	}
	idir := filepath.Join(t.dir(), item.ID)
	if err := os.MkdirAll(idir, 0o700); err != nil {
		return nil, fmt.Errorf("trash %s: %w", ref, err)
	}
	if err := t.writeMeta(item); err != nil {
		os.RemoveAll(idir)
		return nil, fmt.Errorf("trash %s: %w", ref, err)
	}
	var undo []func() error
	fail := func(err error) (*Item, error) {
		if errors.Is(err, errCrash) {
			return nil, err
		}
		if uerr := undoAll(undo); uerr != nil {
			t.log().Error("trash: deletion failed and could not be fully undone; restore the item to put everything back",
				"session", ref.String(), "trash_id", item.ID, "error", err, "undo_error", uerr)
			return nil, fmt.Errorf("trash %s: %w (undo failed, item %s kept: %v)", ref, err, item.ID, uerr)
		}
		os.RemoveAll(idir)
		return nil, fmt.Errorf("trash %s: %w", ref, err)
	}
	step := func(name string) error {
		if failpoint != nil {
			return failpoint(name)
		}
		return nil
	}
	if err := step("meta"); err != nil {
		return fail(err)
	}
	bg := context.WithoutCancel(ctx) // an undo runs to its end
	for _, s := range sessions {
		sideFrom, sideTo := s.SideDir, filepath.Join(idir, "extracted", s.SessionID)
		if sideFrom != "" {
			if _, err := os.Stat(sideFrom); err == nil {
				if err := t.Store.Move(sideFrom, sideTo); err != nil {
					return fail(err)
				}
				undo = append(undo, func() error { return t.Store.Move(sideTo, sideFrom) })
			}
			if t.Sides != nil {
				// The undo goes first: a move that fails midway has moved
				// some units, and moving back is harmless where none were.
				undo = append(undo, func() error { return t.Sides.MoveSide(bg, sideTo, sideFrom) })
				if err := t.Sides.MoveSide(ctx, sideFrom, sideTo); err != nil {
					return fail(err)
				}
			}
		}
		if err := step("side:" + s.SessionID); err != nil {
			return fail(err)
		}
		trFrom, trTo := s.OriginalPath, filepath.Join(idir, s.SessionID+".jsonl")
		if err := t.Store.Move(trFrom, trTo); err != nil {
			return fail(err)
		}
		undo = append(undo, func() error { return t.Store.Move(trTo, trFrom) })
		if err := step("transcript:" + s.SessionID); err != nil {
			return fail(err)
		}
	}
	// The sessions.json keys, one rewrite per file.
	byFile := map[string][]int{}
	for i, s := range item.Sessions {
		if s.SessionsJSON != "" && len(s.Entries) > 0 {
			byFile[s.SessionsJSON] = append(byFile[s.SessionsJSON], i)
		}
	}
	for _, file := range slices.Sorted(maps.Keys(byFile)) {
		var keys []string
		for _, i := range byFile[file] {
			keys = append(keys, slices.Sorted(maps.Keys(item.Sessions[i].Entries))...)
		}
		removed, err := t.Store.RemoveIndexEntries(file, keys)
		if err != nil {
			return fail(err)
		}
		// Keep the entries as they were just before their removal.
		for _, i := range byFile[file] {
			for k := range item.Sessions[i].Entries {
				if raw, ok := removed[k]; ok {
					item.Sessions[i].Entries[k] = string(raw)
				}
			}
		}
		undo = append(undo, func() error { return t.addKeys(file, removed) })
		if err := step("sessions_json"); err != nil {
			return fail(err)
		}
	}
	item.State = StateTrashed
	item.Files, item.Bytes, err = t.itemSize(ctx, idir, item.Sessions)
	if err != nil {
		return fail(err)
	}
	if err := t.writeMeta(item); err != nil {
		return fail(err)
	}
	yes := true
	for _, s := range item.Sessions {
		files, b := s.ExtractedFiles, s.ExtractedBytes
		t.audit(audit.Event{Action: "delete", Path: s.OriginalPath, Agent: s.Agent, SessionID: s.SessionID, MovedToTrash: &yes, TrashID: item.ID})
		t.audit(audit.Event{Action: "delete_extracted", Path: s.SideDir, Agent: s.Agent, SessionID: s.SessionID, MovedToTrash: &yes,
			TrashID: item.ID, FilesRemoved: &files, BytesRemoved: &b})
		t.log().Info("session moved to the trash", "session", s.Agent+"/"+s.SessionID, "trash_id", item.ID,
			"extracted_files", files, "extracted_bytes", b, "actor", t.Actor)
	}
	return item, nil
}

// member is one session found for a deletion.
type member struct {
	Session
	ref   bs.SessionRef
	files bs.SessionFiles
}

// family returns the session and its children (recursively), the session
// first, as the store finds them.
func (t *Trash) family(ctx context.Context, ref bs.SessionRef) ([]member, error) {
	fam, err := t.Store.Family(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("trash %s: %w", ref, err)
	}
	out := make([]member, len(fam))
	for i, f := range fam {
		sideFiles, sideBytes := countFiles(f.SideDir)
		if t.Sides != nil && f.SideDir != "" {
			n, b, err := t.Sides.SideSize(ctx, f.SideDir)
			if err != nil {
				return nil, fmt.Errorf("trash %s: session %s: %w", ref, f.Ref, err)
			}
			sideFiles, sideBytes = sideFiles+n, sideBytes+b
		}
		out[i] = member{ref: f.Ref, files: f, Session: Session{
			Agent: f.Ref.Agent, SessionID: f.Ref.ID, Parent: f.Parent, OriginalPath: f.Transcript, SideDir: f.SideDir,
			SessionsJSON: f.Index, Entries: f.Entries, TranscriptBytes: f.TranscriptBytes,
			ExtractedFiles: sideFiles, ExtractedBytes: sideBytes,
		}}
	}
	return out, nil
}

// List returns the items in the trash, newest first. Items whose meta.json
// cannot be read are left out with a warning.
func (t *Trash) List(ctx context.Context) ([]Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(t.dir())
	if errors.Is(err, fs.ErrNotExist) {
		return []Item{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trash: %w", err)
	}
	out := []Item{}
	for _, e := range ents {
		if !e.IsDir() || bs.IDTrash.Check(e.Name()) != nil {
			continue
		}
		it, err := t.readMeta(e.Name())
		if err != nil {
			t.log().Warn("trash item unreadable, left out", "trash_id", e.Name(), "error", err)
			continue
		}
		out = append(out, *it)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].TrashedAt.Equal(out[j].TrashedAt) {
			return out[i].TrashedAt.After(out[j].TrashedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Get returns one item.
func (t *Trash) Get(ctx context.Context, id string) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	return t.readMeta(id)
}

// Restore puts an item back: transcripts, side dirs and sessions.json
// entries, then removes the item. It refuses with an error wrapping
// ErrOccupied, and moves nothing, when something now occupies one of the
// original places. It also finishes the recovery of an item left
// "trashing" by a crash: what was not moved yet is already in place.
//
// With Trash.Sides, the units of the item's side locations move back
// first (values are readable before a transcript that refers to them
// is), and units found in an original side location are merged with,
// not refused: they are what a crash or a failure in the middle of a
// move (Delete's, or an earlier Restore's) left there, pack names are
// unique so nothing is overwritten, and the newest-record rule reads the
// union as it read the whole before. A session recreated in the place is
// still refused by its transcript or its sessions.json keys.
func (t *Trash) Restore(ctx context.Context, id string) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	item, err := t.readMeta(id)
	if err != nil {
		return nil, err
	}
	switch item.Kind {
	case ItemLeftovers:
		return t.restoreLeftovers(item)
	case "":
	default:
		return nil, fmt.Errorf("trash restore %s: an item of kind %q, expected sessions or %q (made by a newer BrainSurgeon?): %w", id, item.Kind, ItemLeftovers, bs.ErrInvalid)
	}
	if err := t.inside(item); err != nil {
		return nil, fmt.Errorf("trash restore %s: %w", id, err)
	}
	idir := filepath.Join(t.dir(), id)
	type mv struct{ from, to string }
	var moves []mv
	var busy []string
	for _, s := range item.Sessions {
		tr := filepath.Join(idir, s.SessionID+".jsonl")
		if exists(tr) {
			if exists(s.OriginalPath) {
				busy = append(busy, "transcript "+s.OriginalPath)
			}
			moves = append(moves, mv{tr, s.OriginalPath})
		} else if !exists(s.OriginalPath) {
			return nil, fmt.Errorf("trash restore %s: the transcript of %s/%s is neither in the trash nor at %s: %w",
				id, s.Agent, s.SessionID, s.OriginalPath, bs.ErrNotFound)
		}
		sd := filepath.Join(idir, "extracted", s.SessionID)
		if s.SideDir != "" && exists(sd) {
			if !emptyOrMissing(s.SideDir) {
				busy = append(busy, "extracted dir "+s.SideDir)
			}
			moves = append(moves, mv{sd, s.SideDir})
		}
	}
	adds := map[string]map[string]json.RawMessage{}
	for _, s := range item.Sessions {
		if s.SessionsJSON == "" || len(s.Entries) == 0 {
			continue
		}
		cur := t.Store.IndexEntries(s.SessionsJSON)
		for k, raw := range s.Entries {
			if have, ok := cur[k]; ok {
				if !bytes.Equal(bytes.TrimSpace(have), bytes.TrimSpace([]byte(raw))) {
					busy = append(busy, fmt.Sprintf("sessions.json key %q in %s", k, s.SessionsJSON))
				}
				continue // still there: a crash before the keys were removed
			}
			if adds[s.SessionsJSON] == nil {
				adds[s.SessionsJSON] = map[string]json.RawMessage{}
			}
			adds[s.SessionsJSON][k] = json.RawMessage(raw)
		}
	}
	if len(busy) > 0 {
		return nil, fmt.Errorf("trash restore %s: %s: %w", id, strings.Join(busy, ", "), ErrOccupied)
	}
	if t.Sides != nil {
		for _, s := range item.Sessions {
			if s.SideDir == "" {
				continue
			}
			if err := t.Sides.MoveSide(ctx, filepath.Join(idir, "extracted", s.SessionID), s.SideDir); err != nil {
				return nil, fmt.Errorf("trash restore %s: %w (restore again to finish)", id, err)
			}
		}
	}
	for _, m := range moves {
		if err := t.Store.Move(m.from, m.to); err != nil {
			return nil, fmt.Errorf("trash restore %s: %w (restore again to finish)", id, err)
		}
	}
	for _, file := range slices.Sorted(maps.Keys(adds)) {
		if err := t.addKeys(file, adds[file]); err != nil {
			return nil, fmt.Errorf("trash restore %s: %w (restore again to finish)", id, err)
		}
	}
	if err := os.RemoveAll(idir); err != nil {
		return nil, fmt.Errorf("trash restore %s: everything is back, but the item could not be removed: %w", id, err)
	}
	_ = atomicfile.SyncDir(t.dir())
	for _, s := range item.Sessions {
		t.audit(audit.Event{Action: "trash_restore", Path: s.OriginalPath, Agent: s.Agent, SessionID: s.SessionID, TrashID: id})
		t.log().Info("session restored from the trash", "session", s.Agent+"/"+s.SessionID, "trash_id", id, "actor", t.Actor)
	}
	return item, nil
}

// inside checks that every place an item names is in the agents dir (a
// meta.json edited by hand must not make Restore write elsewhere).
func (t *Trash) inside(item *Item) error {
	root, err := filepath.Abs(t.AgentsDir)
	if err != nil {
		return err
	}
	for _, s := range item.Sessions {
		if err := segment("session", s.SessionID); err != nil {
			return err
		}
		for _, p := range []string{s.OriginalPath, s.SideDir, s.SessionsJSON} {
			if p == "" {
				continue
			}
			rel, err := filepath.Rel(root, filepath.Clean(p))
			if err != nil || !filepath.IsAbs(p) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("meta.json names %q, expected a path inside the agents dir %s: %w", p, root, bs.ErrInvalid)
			}
		}
	}
	return nil
}

// Purge removes an item for good.
func (t *Trash) Purge(ctx context.Context, id string) (*Item, error) {
	if err := t.ready(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	item, _, _, err := t.purge(ctx, id, "trash_purge")
	return item, err
}

// purge removes an item for good and returns it with the files and bytes
// removed (those of its side locations in a remote side store included).
// The side locations go first: when that fails, the item stays whole.
func (t *Trash) purge(ctx context.Context, id, action string) (*Item, int, int64, error) {
	item, err := t.readMeta(id)
	if err != nil {
		return nil, 0, 0, err
	}
	idir := filepath.Join(t.dir(), id)
	type count struct {
		files int
		bytes int64
	}
	counts := make([]count, len(item.Sessions))
	total, totalBytes := countFiles(idir)
	for i, s := range item.Sessions {
		sd := filepath.Join(idir, "extracted", s.SessionID)
		counts[i].files, counts[i].bytes = countFiles(sd)
		if t.Sides == nil || s.SideDir == "" {
			continue
		}
		n, b, err := t.Sides.SideSize(ctx, sd)
		if err == nil {
			err = t.Sides.RemoveSide(ctx, sd)
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("trash purge %s: %w", id, err)
		}
		counts[i].files += n
		counts[i].bytes += b
		total += n
		totalBytes += b
	}
	if err := os.RemoveAll(idir); err != nil {
		return nil, 0, 0, fmt.Errorf("trash purge %s: %w", id, err)
	}
	_ = atomicfile.SyncDir(t.dir())
	no := false
	if item.Kind == ItemLeftovers {
		files, size := len(item.Leftovers), int64(0)
		for _, f := range item.Leftovers {
			size += f.Bytes
		}
		t.audit(audit.Event{Action: action, Path: t.AgentsDir, MovedToTrash: &no, TrashID: id, FilesRemoved: &files, BytesRemoved: &size})
		t.log().Info("collected leftovers removed for good", "trash_id", id, "action", action, "files", files, "bytes", size, "actor", t.Actor)
	}
	for i, s := range item.Sessions {
		t.audit(audit.Event{Action: action, Path: s.OriginalPath, Agent: s.Agent, SessionID: s.SessionID, MovedToTrash: &no, TrashID: id})
		t.audit(audit.Event{Action: "delete_extracted", Path: s.SideDir, Agent: s.Agent, SessionID: s.SessionID, MovedToTrash: &no,
			TrashID: id, FilesRemoved: &counts[i].files, BytesRemoved: &counts[i].bytes})
		t.log().Info("trashed session removed for good", "session", s.Agent+"/"+s.SessionID, "trash_id", id, "action", action, "actor", t.Actor)
	}
	return item, total, totalBytes, nil
}

// CleanExpired removes the items whose expires_at has passed, and returns
// how many files they held (transcripts and side files) and their bytes. Items left "trashing" by a crash are
// kept (their sessions.json keys may still be in place) and logged. A
// failure is logged and the others go on; the failures are returned
// joined. It implements retention.TrashCleaner.
func (t *Trash) CleanExpired(ctx context.Context) (int, int64, error) {
	items, err := t.List(ctx)
	if err != nil {
		return 0, 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := bs.Now(t.Clock)
	var n int
	var freed int64
	var errs []error
	for _, it := range items {
		if !it.ExpiresAt.Before(now) {
			continue
		}
		if it.State != StateTrashed {
			t.log().Warn("expired trash item left: its deletion did not finish; restore or purge it", "trash_id", it.ID)
			continue
		}
		_, files, b, err := t.purge(ctx, it.ID, "trash_expire")
		if err != nil {
			t.log().Error("expired trash item not removed", "trash_id", it.ID, "error", err)
			errs = append(errs, err)
			continue
		}
		n += files
		freed += b
	}
	return n, freed, errors.Join(errs...)
}

func (t *Trash) readMeta(id string) (*Item, error) {
	if err := bs.IDTrash.Check(id); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(t.dir(), id, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("trash item %q: %w", id, bs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("trash item %q: %w", id, err)
	}
	var it Item
	if err := json.Unmarshal(data, &it); err != nil || it.Format != Format {
		return nil, fmt.Errorf("trash item %q: meta.json is not a %s file: %v: %w", id, Format, err, bs.ErrInvalid)
	}
	it.ID = id
	return &it, nil
}

func (t *Trash) writeMeta(it *Item) error {
	data, err := json.MarshalIndent(it, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(t.dir(), it.ID, "meta.json"), append(data, '\n'), 0o600)
}

func (t *Trash) audit(ev audit.Event) {
	ev.Time = bs.Now(t.Clock).UTC()
	ev.Session = ev.Agent + "/" + ev.SessionID
	ev.Actor = t.Actor
	if err := audit.Append(audit.Path(t.StateDir), ev); err != nil {
		t.log().Warn("audit event not written", "action", ev.Action, "error", err)
	}
}

// itemID names a new item: "<agent>_<sessionId>_<UTC time>-<random>".
func itemID(ref bs.SessionRef, now time.Time) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
				return r
			}
			return '-'
		}, s)
	}
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	agent := ref.Agent
	if agent == "" {
		agent = "session"
	}
	return clean(agent) + "_" + clean(ref.ID) + "_" + now.Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func emptyOrMissing(dir string) bool {
	ents, err := os.ReadDir(dir)
	return errors.Is(err, fs.ErrNotExist) || (err == nil && len(ents) == 0)
}

// countFiles counts the regular files under dir and their bytes; a
// missing dir has none.
func countFiles(dir string) (int, int64) {
	var n int
	var b int64
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.Type().IsRegular() && !(filepath.Dir(p) == dir && e.Name() == "meta.json") {
			if fi, err := e.Info(); err == nil {
				n++
				b += fi.Size()
			}
		}
		return nil
	})
	return n, b
}

// itemSize counts the files of the item dir idir (meta.json aside) and,
// with Sides, the units of its sessions' side locations.
func (t *Trash) itemSize(ctx context.Context, idir string, sessions []Session) (int, int64, error) {
	n, b := countFiles(idir)
	if t.Sides == nil {
		return n, b, nil
	}
	for _, s := range sessions {
		if s.SideDir == "" {
			continue
		}
		sn, sb, err := t.Sides.SideSize(ctx, filepath.Join(idir, "extracted", s.SessionID))
		if err != nil {
			return 0, 0, err
		}
		n, b = n+sn, b+sb
	}
	return n, b, nil
}

// addKeys puts entries back into a sessions.json through the store; a
// key already there is an error wrapping ErrOccupied.
func (t *Trash) addKeys(index string, entries map[string]json.RawMessage) error {
	err := t.Store.AddIndexEntries(index, entries)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %w", err, ErrOccupied)
	}
	return err
}

// undoAll runs the undo steps of a failed operation, newest first, and
// returns what failed of them, joined.
func undoAll(undo []func() error) error {
	var errs []error
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
