// Package sidefault wraps a side store so that a test can make it fail as
// a remote side store fails when it cannot be reached: the operations
// taken down answer an error wrapping brainsurgeon.ErrUnavailable, the
// others go through to the wrapped store, and the values it holds stay.
package sidefault

import (
	"context"
	"fmt"
	"sync"

	bs "github.com/brainsurgeon/brainsurgeon"
)

// Op names one method of brainsurgeon.SideStore.
type Op string

// The operations of a side store.
const (
	Put    Op = "put"
	Get    Op = "get"
	List   Op = "list"
	Delete Op = "delete"
	Sync   Op = "sync"
)

// All is every operation.
var All = []Op{Put, Get, List, Delete, Sync}

// Store is a brainsurgeon.SideStore over Side whose operations can be
// taken down (Down) and brought back (Up). It is safe for concurrent use.
type Store struct {
	// Side is the store the calls go to while their operation is up.
	Side bs.SideStore
	st   *state
}

// state is what the Stores made by Over share.
type state struct {
	mu     sync.Mutex
	down   map[Op]bool
	calls  map[Op]int
	failed map[Op]int
}

var _ bs.SideStore = (*Store)(nil)

// New returns a Store over side with every operation up.
func New(side bs.SideStore) *Store {
	return &Store{Side: side, st: &state{down: map[Op]bool{}, calls: map[Op]int{}, failed: map[Op]int{}}}
}

// Over returns a Store over side that shares s's state: what is down and
// the counts. A test whose code opens the side store again at each run
// wraps each one with Over.
func (s *Store) Over(side bs.SideStore) *Store { return &Store{Side: side, st: s.st} }

// Down makes ops (every operation when none is given) fail with an error
// wrapping brainsurgeon.ErrUnavailable until Up.
func (s *Store) Down(ops ...Op) {
	if len(ops) == 0 {
		ops = All
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	for _, op := range ops {
		s.st.down[op] = true
	}
}

// Up brings every operation back.
func (s *Store) Up() {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	clear(s.st.down)
}

// Calls returns how often op was called, failed calls included.
func (s *Store) Calls(op Op) int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.calls[op]
}

// Failed returns how many calls of op failed because op was down.
func (s *Store) Failed(op Op) int {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	return s.st.failed[op]
}

// Cause is the text of the cause the errors of a Store give, as an
// object store's client words a refused connection.
const Cause = "dial tcp 127.0.0.1:9000: connect: connection refused"

// check counts a call of op and returns its error when op is down.
func (s *Store) check(op Op, ref bs.SessionRef, key string) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.calls[op]++
	if !s.st.down[op] {
		return nil
	}
	s.st.failed[op]++
	what := ref.String()
	if key != "" {
		what += " " + key
	}
	return fmt.Errorf("side store: %s %s: %s: %w", op, what, Cause, bs.ErrUnavailable)
}

// Put stores recs in Side, or fails while Put is down.
func (s *Store) Put(ctx context.Context, ref bs.SessionRef, recs []bs.SideRecord) error {
	if err := s.check(Put, ref, ""); err != nil {
		return err
	}
	return s.Side.Put(ctx, ref, recs)
}

// Get reads key from Side, or fails while Get is down.
func (s *Store) Get(ctx context.Context, ref bs.SessionRef, key string) (bs.SideRecord, error) {
	if err := s.check(Get, ref, key); err != nil {
		return bs.SideRecord{}, err
	}
	return s.Side.Get(ctx, ref, key)
}

// List lists the records of ref in Side, or fails while List is down.
func (s *Store) List(ctx context.Context, ref bs.SessionRef) ([]bs.SideInfo, error) {
	if err := s.check(List, ref, ""); err != nil {
		return nil, err
	}
	return s.Side.List(ctx, ref)
}

// Delete removes key from Side, or fails while Delete is down.
func (s *Store) Delete(ctx context.Context, ref bs.SessionRef, key string) error {
	if err := s.check(Delete, ref, key); err != nil {
		return err
	}
	return s.Side.Delete(ctx, ref, key)
}

// Sync makes the records of ref durable in Side, or fails while Sync is
// down.
func (s *Store) Sync(ctx context.Context, ref bs.SessionRef) error {
	if err := s.check(Sync, ref, ""); err != nil {
		return err
	}
	return s.Side.Sync(ctx, ref)
}
