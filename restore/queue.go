package restore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/internal/atomicfile"
)

// QueueFormat identifies pending write-back files.
const QueueFormat = "brainsurgeon.pending/1"

// The kinds of pending write-backs.
const (
	KindRestore        = "restore"
	KindSetExtractable = "set_extractable"
)

// PendingRequest is one write-back waiting for its session to be idle:
// one JSON file in the queue directory.
type PendingRequest struct {
	// Format is QueueFormat.
	Format string `json:"format"`
	// Kind is KindRestore, KindSetExtractable or KindRestoreSource.
	Kind string `json:"kind"`
	// Backend, Agent and SessionID name the session (an empty Backend is
	// the JSONL store, as in queue files written before there were two);
	// Key is its session key and Transcript where it was stored, for
	// people.
	Backend    string `json:"backend,omitempty"`
	Agent      string `json:"agent,omitempty"`
	SessionID  string `json:"session_id"`
	Key        string `json:"session_key,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// EntryID is the entry to change.
	EntryID string `json:"entry_id"`
	// Keys select the values of a restore (none: all).
	Keys []string `json:"keys,omitempty"`
	// ToolCallID names the restore call to redact, when known.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Value is the raw "_extractable" value of a set_extractable.
	Value string `json:"value,omitempty"`
	// RequestedAt is when the request was made.
	RequestedAt time.Time `json:"requested_at"`
	// File is the request's file (not stored).
	File string `json:"-"`
}

func (r *Restorer) newRequest(kind string, ref bs.SessionRef, entryID string) *PendingRequest {
	return &PendingRequest{Format: QueueFormat, Kind: kind, Backend: ref.Backend, Transcript: r.Store.Location(ref), Agent: ref.Agent,
		SessionID: ref.ID, Key: ref.Key, EntryID: entryID, RequestedAt: bs.Now(r.Clock).UTC()}
}

func (q *PendingRequest) ref() bs.SessionRef {
	b := q.Backend
	if b == "" {
		b = bs.BackendJSONL
	}
	return bs.SessionRef{Backend: b, Agent: q.Agent, ID: q.SessionID, Key: q.Key, Path: q.Transcript}
}

// matches reports whether the request is for the session ref.
func (q *PendingRequest) matches(ref bs.SessionRef) bool { return q.ref().Same(ref) }

var stamp struct {
	sync.Mutex
	last time.Time
}

func queueStamp() time.Time {
	stamp.Lock()
	defer stamp.Unlock()
	t := time.Now().UTC()
	if !t.After(stamp.last) {
		t = stamp.last.Add(time.Nanosecond)
	}
	stamp.last = t
	return t
}

// enqueue stores a request durably: a temp file, fsync, rename, fsync of
// the directory. Directory 0700, file 0600.
func (r *Restorer) enqueue(ref bs.SessionRef, req *PendingRequest) error {
	dir := r.queueDir()
	if dir == "" {
		return fmt.Errorf("queue write-back: no queue directory configured (set StateDir or QueueDir): %w", bs.ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("queue write-back: %w", err)
	}
	data, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		return fmt.Errorf("queue write-back: %w", err)
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	// Names sort in the order of the requests: the wall clock (not the
	// injectable Clock), made strictly increasing within the process.
	name := queueStamp().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(rnd[:]) + ".json"
	if err := atomicfile.WriteFile(filepath.Join(dir, name), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("queue write-back: %w", err)
	}
	req.File = filepath.Join(dir, name)
	return nil
}

// Pending lists the queued write-backs, oldest first. Files that cannot be
// read are skipped (ApplyPending sets them aside).
func (r *Restorer) Pending() ([]*PendingRequest, error) {
	if r == nil {
		return nil, r.ready()
	}
	reqs, _, err := r.readQueue(r.queueDir())
	return reqs, err
}

func (r *Restorer) readQueue(dir string) (reqs []*PendingRequest, bad []string, err error) {
	if dir == "" {
		return nil, nil, nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read queue %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dir, n)
		data, err := os.ReadFile(p)
		if err != nil {
			continue // removed meanwhile
		}
		var q PendingRequest
		if err := json.Unmarshal(data, &q); err != nil || q.Format != QueueFormat || q.SessionID == "" || q.EntryID == "" ||
			(q.Kind != KindRestore && q.Kind != KindSetExtractable && q.Kind != KindRestoreSource) {
			bad = append(bad, p)
			continue
		}
		q.File = p
		reqs = append(reqs, &q)
	}
	return reqs, bad, nil
}

// queuedAt returns the request time of a restore of the entry still in
// the queue, or "".
func (r *Restorer) queuedAt(ref bs.SessionRef, entryID string) string {
	reqs, _, _ := r.readQueue(r.queueDir())
	for _, q := range reqs {
		if q.Kind == KindRestore && q.EntryID == entryID && q.matches(ref) {
			return bs.FormatTimestamp(q.RequestedAt)
		}
	}
	return ""
}

// ApplyPending applies the queued write-backs whose session is idle now,
// all requests of one session in one rewrite. Each request is decided
// again from the current transcript: the values that still hold their
// placeholders are restored (and the restore call redacted), an
// "_extractable" is set; nothing else. Done requests are removed, those of
// busy sessions are kept for the next call; requests whose transcript or
// entry no longer exists are dropped with a warning, and unreadable files
// are renamed "<name>.bad". Requests for sessions of another backend than
// the Store's are left alone. applied counts the requests done, and
// sessions holds the session of each of them, in order (a session appears
// once per request done, so len(sessions) == applied and a caller counts a
// session's write-backs by counting it). The queue is plain files, so
// pending work survives restarts.
func (r *Restorer) ApplyPending(ctx context.Context) (applied int, sessions []bs.SessionRef, err error) {
	if err := r.ready(); err != nil {
		return 0, nil, err
	}
	dir := r.queueDir()
	if dir == "" {
		return 0, nil, fmt.Errorf("apply pending write-backs: no queue directory configured (set StateDir or QueueDir): %w", bs.ErrInvalid)
	}
	reqs, bad, err := r.readQueue(dir)
	if err != nil {
		return 0, nil, err
	}
	log := r.log()
	for _, p := range bad {
		log.Warn("unreadable pending write-back set aside", "file", p)
		_ = os.Rename(p, p+".bad")
	}
	groups := map[string][]*PendingRequest{}
	var order []string
	for _, q := range reqs {
		if !serves(ctx, r.Store, q.ref()) {
			continue
		}
		id := q.ref().Identity()
		if _, ok := groups[id]; !ok {
			order = append(order, id)
		}
		groups[id] = append(groups[id], q)
	}
	var errs []error
	for _, id := range order {
		if err := ctx.Err(); err != nil {
			return applied, sessions, err
		}
		group := groups[id]
		ref, err := r.Store.Resolve(ctx, group[0].ref().String())
		if errors.Is(err, bs.ErrNotFound) || (err == nil && !ref.Same(group[0].ref())) {
			log.Warn("pending write-backs dropped: the session is gone", "session", group[0].ref().String(), "requests", len(group))
			removeAll(group)
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.Store.CheckIdle(ctx, ref); err != nil {
			if busy(err) {
				log.Debug("pending write-backs kept: session busy", "session", ref.String(), "requests", len(group), "reason", err.Error())
				continue
			}
			errs = append(errs, err)
			continue
		}
		outs, err := r.writeBack(ctx, ref, group, nil, true)
		if err != nil {
			if busy(err) {
				log.Debug("pending write-backs kept: session busy", "session", ref.String(), "requests", len(group), "reason", err.Error())
				continue
			}
			errs = append(errs, fmt.Errorf("apply pending write-backs of %s: %w", ref, err))
			continue
		}
		for i, q := range group {
			o := outs[i]
			if o.missing {
				log.Warn("pending write-back dropped: entry not in the transcript", "session", ref.String(), "entry_id", q.EntryID)
			} else if q.Kind == KindRestoreSource && o.refused != "" {
				log.Warn("queued write-back of a tool result stored at the source left its placeholder", "session", ref.String(), "entry_id", q.EntryID, "reason", o.refused)
			} else if q.Kind == KindRestore {
				log.Debug("restored", "module", "extraction", "entry_id", q.EntryID, "keys_restored", o.restored,
					"sizes_bytes", o.sizes, "redacted", o.redacted, "session", ref.String(), "queued_at", bs.FormatTimestamp(q.RequestedAt))
			}
			applied++
			sessions = append(sessions, ref)
		}
		removeAll(group)
	}
	return applied, sessions, errors.Join(errs...)
}

func removeAll(reqs []*PendingRequest) {
	for _, q := range reqs {
		if q.File != "" {
			_ = os.Remove(q.File)
		}
	}
}

// dropPending removes the queued requests of one transcript.
func (r *Restorer) dropPending(ref bs.SessionRef) {
	reqs, _, _ := r.readQueue(r.queueDir())
	var mine []*PendingRequest
	for _, q := range reqs {
		if q.matches(ref) {
			mine = append(mine, q)
		}
	}
	removeAll(mine)
}

// serves reports whether st serves ref's backend, so that the write-backs
// queued for a backend it has no store for stay queued: st is that
// backend's store, or its Stat of ref does not refuse the ref as one of a
// backend it cannot take (an error wrapping ErrUnsupported: a store over
// several backends without a store for ref's, or a store of one backend
// given another's ref). Any other answer, a session that is gone
// included, lets ApplyPending take the request up and decide.
func serves(ctx context.Context, st bs.Store, ref bs.SessionRef) bool {
	if ref.Backend == st.Name() {
		return true
	}
	_, err := st.Stat(ctx, ref)
	return !errors.Is(err, bs.ErrUnsupported)
}
