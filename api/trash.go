package api

import (
	"context"
	"fmt"
	"sort"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/trash"
)

// trashOps is Options.Trash as the trash endpoints use it. The API names a
// trashed session by agent and id: the item's own id, or the id of the
// session it holds (the newest item when it was trashed more than once).
type trashOps struct{ t *trash.Trash }

// List returns the trashed items, an empty list (not null) when there are
// none.
func (a trashOps) List(ctx context.Context) (any, error) {
	items, err := a.t.List(ctx)
	if items == nil {
		items = []trash.Item{}
	}
	return items, err
}

// Delete moves a live session, with its extracted values and child
// sessions, to the trash.
func (a trashOps) Delete(ctx context.Context, ref bs.SessionRef) (any, error) {
	return a.t.DeleteRef(ctx, ref)
}

// find returns the id of the trash item that agent and id name.
func (a trashOps) find(ctx context.Context, agent, id string) (string, error) {
	items, err := a.t.List(ctx)
	if err != nil {
		return "", err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].TrashedAt.After(items[j].TrashedAt) })
	for _, it := range items {
		if it.ID == id {
			return it.ID, nil
		}
	}
	for _, it := range items {
		if it.Agent == agent && it.SessionID == id {
			return it.ID, nil
		}
	}
	return "", fmt.Errorf("trash: no trashed session %s/%s (expected an agent and a session id, or a trash item id, from GET /api/trash): %w", agent, id, bs.ErrNotFound)
}

// Restore puts a trashed session back.
func (a trashOps) Restore(ctx context.Context, agent, id string) (any, error) {
	item, err := a.find(ctx, agent, id)
	if err != nil {
		return nil, err
	}
	return a.t.Restore(ctx, item)
}

// PermanentDelete removes a trashed session for good.
func (a trashOps) PermanentDelete(ctx context.Context, agent, id string) (any, error) {
	item, err := a.find(ctx, agent, id)
	if err != nil {
		return nil, err
	}
	return a.t.Purge(ctx, item)
}
