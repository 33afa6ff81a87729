package backend_test

import (
	"context"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// plainStore is a store that records the rewrites it gets and calls
// their gate.
type plainStore struct {
	bs.Store // nil: only Name and Rewrite are called
	calls    *[]string
}

func (p plainStore) Name() string { return "plain" }
func (p plainStore) Rewrite(_ context.Context, _ bs.SessionRef, _ bs.Version, _ []bs.Edit, gate func() error) error {
	*p.calls = append(*p.calls, "rewrite")
	if gate != nil {
		return gate()
	}
	return nil
}

// TestMultiRewriteGate checks that a Multi hands the gate to the store of
// the session, and returns what the store returns.
func TestMultiRewriteGate(t *testing.T) {
	ctx := context.Background()
	var calls []string
	m := &backend.Multi{Stores: []bs.Store{plainStore{calls: &calls}}}
	ref := bs.SessionRef{Backend: "plain", Agent: "main", ID: "s1"}
	gate := func() error { calls = append(calls, "gate"); return nil }
	if err := m.Rewrite(ctx, ref, bs.Version{}, nil, gate); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != "rewrite" || calls[1] != "gate" {
		t.Fatalf("calls %v, want [rewrite gate]", calls)
	}
	calls = nil
	errSide := errors.New("not durable")
	err := m.Rewrite(ctx, ref, bs.Version{}, nil, func() error { calls = append(calls, "gate"); return errSide })
	if !errors.Is(err, errSide) || len(calls) != 2 {
		t.Fatalf("err %v, calls %v: want the gate's error from the store", err, calls)
	}
	if err := m.Rewrite(ctx, bs.SessionRef{Backend: "other", ID: "s2"}, bs.Version{}, nil, nil); !errors.Is(err, bs.ErrUnsupported) {
		t.Fatalf("a ref no store serves: %v, want ErrUnsupported", err)
	}
}
