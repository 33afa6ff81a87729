package backend_test

import (
	"context"
	"errors"
	"testing"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
	"github.com/brainsurgeon/brainsurgeon/sidedir"
)

// TestMissingAgentsDir follows the README's snippet with the default
// agents dir when ~/.openclaw/agents does not exist, and the nil values a
// caller that ignores Open's error passes on: every call returns an error
// saying what is missing, none panics.
func TestMissingAgentsDir(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("BRAINSURGEON_AGENTS_DIR", "")
	t.Setenv("AGENTS_DIR", "")
	dir := config.DefaultAgentsDir()
	cfg, err := config.Load(ctx, dir, nil)
	if err != nil {
		t.Fatalf("config.Load of a missing dir: %v (want the defaults)", err)
	}
	set, err := backend.Open(ctx, dir, backend.FromConfig(cfg, nil))
	if !errors.Is(err, bs.ErrNotFound) || set != nil {
		t.Fatalf("Open(%s) = %v, %v; want no Set and an error wrapping ErrNotFound", dir, set, err)
	}
	var nilStore *session.Store
	var nilMulti *backend.Multi
	var nilRestorer *restore.Restorer
	ref := bs.SessionRef{Agent: "main", ID: "s1", Path: dir + "/main/sessions/s1.jsonl"}
	for _, tt := range []struct {
		name string
		call func() error
		want error
	}{
		{"StorelessPass", func() error { _, err := prune.New(nil, nil, "", cfg, nil).Run(ctx, nil); return err }, bs.ErrInvalid},
		{"NilPass", func() error { var p *prune.Pass; _, err := p.Run(ctx, nil); return err }, bs.ErrInvalid},
		{"StoreOnMissingDir", func() error { _, _, err := session.NewStore(dir).Sessions(ctx); return err }, bs.ErrNotFound},
		{"ResolveOnMissingDir", func() error { _, err := session.NewStore(dir).Resolve(ctx, "agent:main:main"); return err }, bs.ErrNotFound},
		{"DiscoverMissingDir", func() error {
			_, err := session.DiscoverWith(ctx, dir, session.DiscoverOptions{})
			return err
		}, bs.ErrNotFound},
		{"PassOnMissingDir", func() error {
			st := session.NewStore(dir)
			_, err := (&prune.Pass{Store: st, Side: sidedir.New(st), Force: true}).Run(ctx, nil)
			return err
		}, bs.ErrNotFound},
		{"NilStoreSessions", func() error { _, _, err := nilStore.Sessions(ctx); return err }, bs.ErrInvalid},
		{"NilStoreCheckIdle", func() error { return nilStore.CheckIdle(ctx, ref) }, bs.ErrInvalid},
		{"NilStorePass", func() error {
			_, err := (&prune.Pass{Store: nilStore, Side: sidedir.New(nilStore), Force: true}).Run(ctx, nil)
			return err
		}, bs.ErrInvalid},
		{"NilMultiSessions", func() error { _, _, err := nilMulti.Sessions(ctx); return err }, bs.ErrInvalid},
		{"NilMultiResolve", func() error { _, err := nilMulti.Resolve(ctx, "x"); return err }, bs.ErrInvalid},
		{"NilMultiOpen", func() error { _, err := nilMulti.Open(ctx, ref, nil); return err }, bs.ErrInvalid},
		{"NilRestorer", func() error { _, err := nilRestorer.RestoreAll(ctx, ref, true); return err }, bs.ErrInvalid},
		{"RestorerOfNilStores", func() error { _, err := restore.New(nil, nil, "").GetContext(ctx, ref); return err }, bs.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want an error wrapping %v", err, tt.want)
			}
		})
	}
}
