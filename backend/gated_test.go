package backend_test

import (
	"context"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
)

// plainStore is a store that is not a bs.GatedRewriter: it records the
// calls it gets.
type plainStore struct {
	bs.Store // nil: only Name and Rewrite are called
	calls    *[]string
}

func (p plainStore) Name() string { return "plain" }
func (p plainStore) Rewrite(context.Context, bs.SessionRef, bs.Version, []bs.Edit) error {
	*p.calls = append(*p.calls, "rewrite")
	return nil
}

// TestMultiRewriteGated checks that a Multi keeps the gate's order for a
// store that cannot be gated: the gate first, the rewrite only after it
// succeeded.
func TestMultiRewriteGated(t *testing.T) {
	ctx := context.Background()
	var calls []string
	m := &backend.Multi{Stores: []bs.Store{plainStore{calls: &calls}}}
	ref := bs.SessionRef{Backend: "plain", Agent: "main", ID: "s1"}
	gate := func() error { calls = append(calls, "gate"); return nil }
	if err := m.RewriteGated(ctx, ref, bs.Version{}, nil, gate); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0] != "gate" || calls[1] != "rewrite" {
		t.Fatalf("calls %v, want [gate rewrite]", calls)
	}
	calls = nil
	errSide := errors.New("not durable")
	err := m.RewriteGated(ctx, ref, bs.Version{}, nil, func() error { calls = append(calls, "gate"); return errSide })
	if !errors.Is(err, errSide) || len(calls) != 1 {
		t.Fatalf("err %v, calls %v: want the gate's error and no rewrite", err, calls)
	}
}
