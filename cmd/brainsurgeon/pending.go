package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	bs "github.com/brainsurgeon/brainsurgeon"
	"github.com/brainsurgeon/brainsurgeon/backend"
	"github.com/brainsurgeon/brainsurgeon/config"
	"github.com/brainsurgeon/brainsurgeon/engine"
	"github.com/brainsurgeon/brainsurgeon/extract"
	"github.com/brainsurgeon/brainsurgeon/internal/cli"
	"github.com/brainsurgeon/brainsurgeon/prune"
	"github.com/brainsurgeon/brainsurgeon/restore"
	"github.com/brainsurgeon/brainsurgeon/session"
)

// loadConfig reads the runtime config beside agentsDir (see
// cli.LoadConfig: unknown fields are warned about; with lenient, a config
// that fails validation is reported and its valid fields used).
func (m *Main) loadConfig(ctx context.Context, agentsDir string, lenient bool) (config.Config, config.FileInfo, error) {
	return cli.LoadConfig(ctx, m.Stderr, agentsDir, m.logger(), lenient)
}

// open opens the installation under agentsDir with the config's settings.
func (m *Main) open(ctx context.Context, agentsDir string, cfg config.Config) (*backend.Set, error) {
	set, err := cli.Open(ctx, agentsDir, backend.FromConfig(cfg, m.logger()))
	if err == nil && m.wrapSide != nil {
		set.Side = m.wrapSide(set.Side)
	}
	return set, err
}

// pass returns the library-level pass over set, with the context
// engine's state as its restore log: a value the agent restored through
// the engine's view, or whose write-back is queued, is not extracted again
// within keep_after_restore_seconds, and the pass's restores are recorded
// there.
func (m *Main) pass(set *backend.Set, cfg config.Config) *prune.Pass {
	p := prune.New(set.Store, set.Side, set.StateDir, cfg, m.logger())
	p.Restores = &engine.Engine{Store: set.Store, StateDir: set.StateDir, Policy: extract.FromConfig(cfg), Logger: m.logger()}
	return p
}

// restorer returns a Restorer over the agents dir, set up from its config
// (policy, keep_purge_control_calls, idle_seconds).
func (m *Main) restorer(ctx context.Context, agentsDir string) (*restore.Restorer, *backend.Set, error) {
	cfg, _, err := m.loadConfig(ctx, agentsDir, true)
	if err != nil {
		return nil, nil, err
	}
	set, err := m.open(ctx, agentsDir, cfg)
	if err != nil {
		return nil, nil, err
	}
	r := m.pass(set, cfg).Restorer()
	r.Policy.Enabled = true
	return r, set, nil
}

// resolveRef finds a session by transcript path or by name. A transcript
// file outside the agents dir is served by the JSONL store as it is.
func resolveRef(ctx context.Context, set *backend.Set, name string) (bs.SessionRef, error) {
	if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
		abs, err := filepath.Abs(name)
		if err != nil {
			return bs.SessionRef{}, err
		}
		if ref, err := set.Store.Resolve(ctx, abs); err == nil {
			return ref, nil
		}
		// A file outside the agents dir is read as it is, when it is a
		// transcript (the rule discovery applies too).
		if err := session.IsTranscript(abs); err != nil {
			return bs.SessionRef{}, err
		}
		return bs.SessionRef{Backend: bs.BackendJSONL, Path: abs}, nil
	}
	if looksLikePath(name) {
		if _, err := os.Stat(name); err != nil {
			return bs.SessionRef{}, fmt.Errorf("transcript %s: %w", name, err)
		}
		return bs.SessionRef{}, fmt.Errorf("%s is not a regular file: expected a .jsonl transcript", name)
	}
	return set.Store.Resolve(ctx, name)
}
