package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/hostfile"
)

// Store is the JSONL backend of brainsurgeon.Store over an OpenClaw agents
// dir (or a pi sessions dir). Sessions are discovered afresh on every call,
// so the store always sees the host's latest sessions.json.
//
// The zero value is not usable; create one with NewStore. A Store is safe
// for concurrent use when its Writer's hooks are.
type Store struct {
	// Root is the agents dir, a ~/.openclaw dir or a pi sessions dir.
	Root string
	// Writer performs every write. NewStore sets its Quiet period to
	// DefaultQuiet and its Refresh hook to re-read the session's status
	// from sessions.json under the lock.
	Writer Writer
	// Logger receives discovery warnings; nil discards.
	Logger bs.Logger
	// SideNames, when set, names the side locations in parent (a
	// transcript dir's "extracted" dir) for GoneSessions, when the side
	// store keeps them elsewhere than in local directories (an object
	// store); nil reads the directory.
	SideNames func(ctx context.Context, parent string) ([]string, error)

	// rootsFor caches roots for the Root rootsOf.
	rootsMu  sync.Mutex
	rootsOf  string
	rootsFor []string
}

var (
	_ bs.Store       = (*Store)(nil)
	_ bs.BatchStater = (*Store)(nil)
)

// NewStore returns a Store over root with default write settings.
func NewStore(root string) *Store {
	s := &Store{Root: root, Writer: Writer{Quiet: DefaultQuiet}}
	s.Writer.Refresh = s.refresh
	return s
}

// Holds reports whether path, a transcript's path as a ref this store
// listed names it, lies in the store's Root, or in Root with its
// symbolic links resolved. The path itself is compared as it is, so that
// asking costs no file system call after the first.
func (s *Store) Holds(path string) bool {
	if s == nil || path == "" {
		return false
	}
	p := filepath.Clean(path)
	for _, root := range s.roots() {
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." &&
			!strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// roots returns Root cleaned and Root with its links resolved (once per
// Root).
func (s *Store) roots() []string {
	s.rootsMu.Lock()
	defer s.rootsMu.Unlock()
	if s.rootsOf != s.Root || s.rootsFor == nil {
		r := filepath.Clean(s.Root)
		s.rootsFor = []string{r}
		if a, err := filepath.Abs(r); err == nil {
			if e, err := filepath.EvalSymlinks(a); err == nil && e != r {
				s.rootsFor = append(s.rootsFor, e)
			}
		}
		s.rootsOf = s.Root
	}
	return s.rootsFor
}

// errNoStore is what the methods of a nil Store return.
var errNoStore = fmt.Errorf("session: no Store (nil; session.NewStore or backend.Open makes one): %w", bs.ErrInvalid)

func (s *Store) discover(ctx context.Context) (*Discovery, error) {
	if s == nil {
		return nil, errNoStore
	}
	return DiscoverWith(ctx, s.Root, DiscoverOptions{Logger: s.Logger})
}

// Sessions returns every live session under Root. It skips no part:
// discovery warnings go to Logger.
func (s *Store) Sessions(ctx context.Context) ([]bs.SessionRef, []error, error) {
	d, err := s.discover(ctx)
	if err != nil {
		return nil, nil, err
	}
	return d.Sessions, nil, nil
}

// Resolve finds one session by agent/sessionId, path, session id or
// session key (see ResolveRef), in a fresh discovery.
func (s *Store) Resolve(ctx context.Context, name string) (bs.SessionRef, error) {
	d, err := s.discover(ctx)
	if err != nil {
		return bs.SessionRef{}, err
	}
	return d.Resolve(name)
}

// Open reads and indexes the session's transcript.
func (s *Store) Open(ctx context.Context, ref bs.SessionRef, v *bs.Visitor) (bs.Transcript, error) {
	if ref.Path == "" {
		return nil, fmt.Errorf("open session %s: the ref has no transcript path: %w", ref, bs.ErrInvalid)
	}
	return Open(ctx, ref.Path, ref, v)
}

// Rewrite applies edits to the session's transcript read at base, under
// the full write protocol, calling gate (when not nil) right before the
// new content replaces the old (see Writer.RewriteGated).
func (s *Store) Rewrite(ctx context.Context, ref bs.SessionRef, base bs.Version, edits []bs.Edit, gate func() error) error {
	if s == nil {
		return errNoStore
	}
	return s.Writer.RewriteGated(ctx, ref, base, edits, gate)
}

// AppendAt adds entries at the end of the session's transcript if it is
// still the version base (see Writer.AppendAt).
func (s *Store) AppendAt(ctx context.Context, ref bs.SessionRef, base bs.Version, entries [][]byte) error {
	if s == nil {
		return errNoStore
	}
	return s.Writer.AppendAt(ctx, ref, base, entries)
}

// CheckIdle tells whether the session is idle now (see Writer.CheckIdle).
func (s *Store) CheckIdle(ctx context.Context, ref bs.SessionRef) error {
	if s == nil {
		return errNoStore
	}
	return s.Writer.CheckIdle(ctx, ref)
}

// Name returns brainsurgeon.BackendJSONL.
func (s *Store) Name() string { return bs.BackendJSONL }

// Editable returns true: a JSONL transcript is the store's own, and any
// value may be replaced.
func (s *Store) Editable(bs.SessionRef, bs.TriggerType) bool { return true }

// EditableValues accepts every candidate.
func (s *Store) EditableValues(_ bs.SessionRef, _ *bs.Entry, cands []bs.Candidate, _ [][]byte) []bool {
	out := make([]bool, len(cands))
	for i := range out {
		out[i] = true
	}
	return out
}

// Stat returns the transcript file's version (device, inode, size and
// modification time, as Open records it) and modification time, with one
// stat and no read. A missing file gives an error wrapping ErrNotFound.
func (s *Store) Stat(ctx context.Context, ref bs.SessionRef) (bs.SessionStat, error) {
	if ref.Backend != "" && ref.Backend != bs.BackendJSONL {
		return bs.SessionStat{}, fmt.Errorf("stat session %s: a %s session, not one of the JSONL store: %w", ref, ref.Backend, bs.ErrUnsupported)
	}
	if ref.Path == "" {
		return bs.SessionStat{}, fmt.Errorf("stat session %s: the ref has no transcript path: %w", ref, bs.ErrInvalid)
	}
	st, err := hostfile.Fingerprint(ref.Path)
	if err != nil {
		return bs.SessionStat{}, fmt.Errorf("stat session %s: %w", ref, err)
	}
	return bs.SessionStat{Version: st.Version(), ModTime: time.Unix(0, st.ModTime)}, nil
}

// StatMany returns the state of each session's transcript, in the order
// of refs, opening each sessions directory once and stat-ing the
// transcripts relative to it (a daemon's tick over 10,000 unchanged
// sessions is mostly these calls). The stamps equal Stat's.
func (s *Store) StatMany(ctx context.Context, refs []bs.SessionRef) []bs.StatResult {
	out := make([]bs.StatResult, len(refs))
	var dir *hostfile.Dir
	dirPath := ""
	defer func() {
		if dir != nil {
			dir.Close()
		}
	}()
	for i, ref := range refs {
		if i%256 == 0 && ctx.Err() != nil {
			for k := i; k < len(refs); k++ {
				out[k].Err = ctx.Err()
			}
			return out
		}
		if ref.Path == "" {
			out[i].Err = fmt.Errorf("stat session %s: the ref has no transcript path: %w", ref, bs.ErrInvalid)
			continue
		}
		if d := filepath.Dir(ref.Path); d != dirPath || dir == nil {
			if dir != nil {
				dir.Close()
				dir = nil
			}
			dirPath = d
			var err error
			if dir, err = hostfile.OpenDir(d); err != nil {
				out[i].Err = fmt.Errorf("stat session %s: %w", ref, err)
				continue
			}
		}
		st, err := dir.Fingerprint(filepath.Base(ref.Path))
		if err != nil {
			out[i].Err = fmt.Errorf("stat session %s: %w", ref, err)
			continue
		}
		out[i].Stat = bs.SessionStat{Version: st.Version(), ModTime: time.Unix(0, st.ModTime)}
	}
	return out
}

// refresh re-reads a session's sessions.json status. A ref that does not
// come from a sessions.json entry (no key: an orphan transcript, or a file
// named by its path) has no status to re-read.
func (s *Store) refresh(ctx context.Context, ref bs.SessionRef) (bs.SessionRef, error) {
	if ref.Key == "" {
		return ref, nil
	}
	// Only the session's own sessions.json is read (not every agent's):
	// a pass over N sessions stays O(N).
	path := filepath.Join(filepath.Dir(ref.Path), "sessions.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		ref.Status = ""
		return ref, nil
	}
	if err != nil {
		return ref, fmt.Errorf("session %s: read %s: %w", ref, path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return ref, fmt.Errorf("session %s: %s is not a JSON object of session entries (the host may be writing it): %w", ref, path, bs.ErrBusy)
	}
	var e storeEntry
	if m, ok := raw[ref.Key]; !ok || json.Unmarshal(m, &e) != nil {
		ref.Status = "" // the key is gone: nothing runs in this transcript under it
		return ref, nil
	}
	if e.SessionID != "" && ref.ID != "" && e.SessionID != ref.ID {
		ref.Status = "" // the key moved on to another session
		return ref, nil
	}
	ref.Status = e.Status
	return ref, nil
}

// SideDir returns the side directory of a JSONL session,
// "<transcript dir>/extracted/<sessionId>", where the first BrainSurgeon
// put it, so that its per-entry files stay readable. It returns an error
// wrapping ErrInvalid when the ref has no path or its id is not a file name.
func (s *Store) SideDir(ref bs.SessionRef) (string, error) { return SideDir(ref) }

// SideDir returns the side directory of a JSONL session,
// "<transcript dir>/extracted/<sessionId>": where the first BrainSurgeon
// put its files too.
func SideDir(ref bs.SessionRef) (string, error) {
	if ref.Path == "" {
		return "", fmt.Errorf("session %s: no transcript path to place its side files by: %w", ref, bs.ErrInvalid)
	}
	id := ref.ID
	if id == "" {
		id = sessionIDFromPath(ref.Path)
	}
	return SideDirIn(filepath.Dir(ref.Path), id)
}

// SideDirName is the directory, beside an agent's transcripts, that holds
// one side directory per session.
const SideDirName = "extracted"

// SideDirIn returns the side directory of session id whose transcripts lie
// (or, for a database store, lay) in the directory dir:
// "<dir>/extracted/<id>". Every store places side files by it, so a session
// that moves from JSONL into the SQLite store keeps them. The id must be
// one path element (brainsurgeon.CheckSegment), else the error wraps
// ErrInvalid.
func SideDirIn(dir, id string) (string, error) {
	if err := bs.CheckSegment(id); err != nil {
		return "", fmt.Errorf("session id %q: %w", id, err)
	}
	return filepath.Join(dir, SideDirName, id), nil
}

// Location returns where a JSONL session is stored, its transcript file,
// for people and for the host formats that name it (pi's parentSession);
// empty when the ref has none.
func (s *Store) Location(ref bs.SessionRef) string { return ref.Path }
